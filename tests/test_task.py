"""The task file loader: every key of task-format.md, and each way a file can be bad."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssebench.task import (
    DEFAULT_BUILD_TIMEOUT,
    DEFAULT_FUNCTIONAL_TIMEOUT,
    DEFAULT_INTENT_TIMEOUT,
    DEFAULT_POC_TIMEOUT,
    TaskError,
    load_task,
)
from tests.helpers.daemon import run_ssebench, short_tempdir

DEMO_DIR = Path(__file__).resolve().parent.parent / "examples" / "tasks" / "demo-overflow"

FULL = """\
id = "demo-overflow"
source = "src"
description = "A stack overflow in the name parser."

[build]
run = "make"
timeout = 600

[pocs]
run = './app < "$SSE_POC"'
files = ["pocs/crash-1", "pocs/crash-2"]
timeout = 60

[functional]
run = "make test"
timeout = 600.5

[intent]
diff = "intent.diff"
run = "make check"
timeout = 700
"""


def write(folder: Path, text: str, *, files: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if files:
        (folder / "src").mkdir(exist_ok=True)
        (folder / "pocs").mkdir(exist_ok=True)
        (folder / "pocs" / "crash-1").write_text("1")
        (folder / "pocs" / "crash-2").write_text("2")
        (folder / "intent.diff").write_text("")
    path = folder / "task.toml"
    path.write_text(text)
    return path


def test_every_key_is_read(tmp_path: Path) -> None:
    task = load_task(write(tmp_path, FULL))
    assert task.file == tmp_path / "task.toml"
    assert task.dir == tmp_path
    assert task.id == "demo-overflow"
    assert task.source == tmp_path / "src"
    assert task.description == "A stack overflow in the name parser."
    assert (task.build.run, task.build.timeout) == ("make", 600.0)
    assert task.pocs is not None
    assert task.pocs.command.run == './app < "$SSE_POC"'
    assert task.pocs.command.timeout == 60.0
    assert task.pocs.files == (tmp_path / "pocs" / "crash-1", tmp_path / "pocs" / "crash-2")
    assert task.poc_count == 2
    assert task.functional is not None
    assert (task.functional.run, task.functional.timeout) == ("make test", 600.5)
    assert task.intent is not None
    assert task.intent.diff == tmp_path / "intent.diff"
    assert (task.intent.command.run, task.intent.command.timeout) == ("make check", 700.0)


def test_optional_keys_default(tmp_path: Path) -> None:
    text = FULL.replace("timeout = 600\n", "").replace("timeout = 60\n", "")
    text = text.replace("timeout = 600.5\n", "").replace("timeout = 700\n", "")
    text = text.replace('description = "A stack overflow in the name parser."\n', "")
    task = load_task(write(tmp_path, text))
    assert task.description == ""
    assert task.build.timeout == DEFAULT_BUILD_TIMEOUT == 1800
    assert task.pocs and task.pocs.command.timeout == DEFAULT_POC_TIMEOUT == 300
    assert task.functional and task.functional.timeout == DEFAULT_FUNCTIONAL_TIMEOUT == 1800
    assert task.intent and task.intent.command.timeout == DEFAULT_INTENT_TIMEOUT == 1800


def test_optional_tables_may_be_absent(tmp_path: Path) -> None:
    task = load_task(write(tmp_path, 'id = "x"\nsource = "src"\n[build]\nrun = "make"\n'))
    assert (task.pocs, task.functional, task.intent) == (None, None, None)
    assert task.poc_count == 0


def test_empty_poc_list_is_allowed(tmp_path: Path) -> None:
    task = load_task(
        write(tmp_path, 'id = "x"\nsource = "src"\n[build]\nrun = "make"\n[pocs]\nrun = "true"\nfiles = []\n')
    )
    assert task.pocs is not None and task.pocs.files == ()


def test_absolute_paths_are_kept(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    write(other, "")
    text = FULL.replace('source = "src"', f'source = "{other / "src"}"')
    text = text.replace('"pocs/crash-1"', f'"{other / "pocs/crash-1"}"')
    text = text.replace('diff = "intent.diff"', f'diff = "{other / "intent.diff"}"')
    task = load_task(write(tmp_path / "task", text))
    assert task.source == other / "src"
    assert task.pocs and task.pocs.files[0] == other / "pocs" / "crash-1"
    assert task.intent and task.intent.diff == other / "intent.diff"


def test_relative_task_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, FULL)
    monkeypatch.chdir(tmp_path)
    task = load_task("task.toml")
    assert task.file == tmp_path / "task.toml"
    assert task.source == tmp_path / "src"


def _replace(old: str, new: str) -> str:
    assert old in FULL, old
    return FULL.replace(old, new, 1)


# (name, TOML text, key named in the message, fault text after "key '<key>': ")
BAD = [
    ("missing id", _replace('id = "demo-overflow"\n', ""), "id", "missing (required)"),
    ("missing source", _replace('source = "src"\n', ""), "source", "missing (required)"),
    ("missing build", _replace('[build]\nrun = "make"\ntimeout = 600\n', ""), "build", "missing (required table)"),
    ("missing build.run", _replace('[build]\nrun = "make"\n', "[build]\n"), "build.run", "missing (required)"),
    ("missing pocs.run", _replace("run = './app < \"$SSE_POC\"'\n", ""), "pocs.run", "missing (required)"),
    (
        "missing pocs.files",
        _replace('files = ["pocs/crash-1", "pocs/crash-2"]\n', ""),
        "pocs.files",
        "missing (required in [pocs])",
    ),
    ("missing functional.run", _replace('run = "make test"\n', ""), "functional.run", "missing (required)"),
    ("missing intent.diff", _replace('diff = "intent.diff"\n', ""), "intent.diff", "missing (required)"),
    ("missing intent.run", _replace('run = "make check"\n', ""), "intent.run", "missing (required)"),
    ("id not a string", _replace('id = "demo-overflow"', "id = 7"), "id", "must be a string, got an integer"),
    (
        "id bad characters",
        _replace('id = "demo-overflow"', 'id = "demo overflow/1"'),
        "id",
        "must match [A-Za-z0-9._-]+, got 'demo overflow/1'",
    ),
    ("id empty", _replace('id = "demo-overflow"', 'id = ""'), "id", "must match [A-Za-z0-9._-]+, got ''"),
    ("source not a string", _replace('source = "src"', 'source = ["src"]'), "source", "must be a string, got an array"),
    (
        "description not a string",
        _replace('description = "A stack overflow in the name parser."', "description = 3.5"),
        "description",
        "must be a string, got a float",
    ),
    (
        "build not a table",
        _replace('[build]\nrun = "make"\ntimeout = 600\n', "").replace(
            'description = "A stack overflow in the name parser."', 'description = "x"\nbuild = "make"'
        ),
        "build",
        "must be a table, got a string",
    ),
    ("build.run not a string", _replace('run = "make"', "run = true"), "build.run", "must be a string, got a boolean"),
    ("build.run empty", _replace('run = "make"', 'run = "  "'), "build.run", "must not be empty"),
    (
        "build.timeout a string",
        _replace("timeout = 600\n", 'timeout = "600"\n'),
        "build.timeout",
        "must be a number of seconds, got a string",
    ),
    (
        "build.timeout a boolean",
        _replace("timeout = 600\n", "timeout = true\n"),
        "build.timeout",
        "must be a number of seconds, got a boolean",
    ),
    (
        "pocs.timeout zero",
        _replace("timeout = 60\n", "timeout = 0\n"),
        "pocs.timeout",
        "must be a positive number of seconds, got 0",
    ),
    (
        "functional.timeout negative",
        _replace("timeout = 600.5", "timeout = -1.5"),
        "functional.timeout",
        "must be a positive number of seconds, got -1.5",
    ),
    (
        "intent.timeout nan",
        _replace("timeout = 700", "timeout = nan"),
        "intent.timeout",
        "must be a positive number of seconds, got nan",
    ),
    (
        "pocs.files not an array",
        _replace('files = ["pocs/crash-1", "pocs/crash-2"]', 'files = "pocs/crash-1"'),
        "pocs.files",
        "must be an array of strings, got a string",
    ),
    (
        "pocs.files item not a string",
        _replace('files = ["pocs/crash-1", "pocs/crash-2"]', 'files = ["pocs/crash-1", 2]'),
        "pocs.files[1]",
        "must be a string, got an integer",
    ),
    (
        "pocs table not a table",
        _replace(
            '[pocs]\nrun = \'./app < "$SSE_POC"\'\nfiles = ["pocs/crash-1", "pocs/crash-2"]\ntimeout = 60\n', ""
        ).replace('description = "A stack overflow in the name parser."', 'description = "x"\npocs = 2'),
        "pocs",
        "must be a table, got an integer",
    ),
    (
        "unknown top-level key",
        _replace('source = "src"\n', 'source = "src"\nlanguage = "c"\n'),
        "language",
        "unknown key (known keys: build, description, functional, id, intent, pocs, resources, source)",
    ),
    (
        "unknown top-level table",
        FULL + '\n[extra]\nrun = "x"\n',
        "extra",
        "unknown key (known keys: build, description, functional, id, intent, pocs, resources, source)",
    ),
    (
        "unknown key in a table",
        _replace("timeout = 600\n", "timout = 600\n"),
        "build.timout",
        "unknown key (known keys: network, run, timeout)",
    ),
    (
        "unknown key in intent",
        _replace('diff = "intent.diff"\n', 'diff = "intent.diff"\npatch = "x"\n'),
        "intent.patch",
        "unknown key (known keys: diff, files, network, run, timeout)",
    ),
]


@pytest.mark.parametrize(("text", "key", "fault"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_key_names_file_key_and_fault(tmp_path: Path, text: str, key: str, fault: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(TaskError) as err:
        load_task(path)
    assert str(err.value) == f"{path}: key '{key}': {fault}"


@pytest.mark.parametrize(
    ("name", "key", "raw"),
    [
        ("source missing", "source", "src"),
        ("poc missing", "pocs.files[1]", "pocs/crash-2"),
        ("intent diff missing", "intent.diff", "intent.diff"),
    ],
)
def test_missing_file_is_named(tmp_path: Path, name: str, key: str, raw: str) -> None:
    path = write(tmp_path, FULL)
    target = tmp_path / raw
    if target.is_dir():
        target.rmdir()
        what = "folder"
    else:
        target.unlink()
        what = "file"
    with pytest.raises(TaskError) as err:
        load_task(path)
    assert str(err.value) == f"{path}: key '{key}': {what} '{raw}' does not exist (resolved to {target})"


def test_source_that_is_a_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, FULL.replace('source = "src"', 'source = "intent.diff"'))
    with pytest.raises(TaskError) as err:
        load_task(path)
    assert str(err.value) == (
        f"{path}: key 'source': folder 'intent.diff' is not a folder (resolved to {tmp_path / 'intent.diff'})"
    )


def test_poc_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, FULL.replace('"pocs/crash-1"', '"pocs"'))
    with pytest.raises(TaskError) as err:
        load_task(path)
    assert str(err.value) == (
        f"{path}: key 'pocs.files[0]': file 'pocs' is not a file (resolved to {tmp_path / 'pocs'})"
    )


def test_invalid_toml(tmp_path: Path) -> None:
    path = write(tmp_path, FULL + "\nthis is not toml\n")
    with pytest.raises(TaskError) as err:
        load_task(path)
    assert str(err.value).startswith(f"{path}: not valid TOML: ")
    assert "(at line 23, column 6)" in str(err.value)  # where the fault is


def test_duplicate_key_is_invalid_toml(tmp_path: Path) -> None:
    path = write(tmp_path, FULL.replace('id = "demo-overflow"\n', 'id = "a"\nid = "b"\n'))
    with pytest.raises(TaskError, match="not valid TOML"):
        load_task(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    path.write_bytes(b'id = "\xff"\n')
    with pytest.raises(TaskError) as err:
        load_task(path)
    assert str(err.value).startswith(f"{path}: not valid TOML: not UTF-8 text")


def test_task_file_missing(tmp_path: Path) -> None:
    with pytest.raises(TaskError) as err:
        load_task(tmp_path / "nope.toml")
    assert str(err.value) == f"{tmp_path / 'nope.toml'}: the task file does not exist"


def test_a_folder_without_task_toml_is_not_a_task(tmp_path: Path) -> None:
    with pytest.raises(TaskError) as err:
        load_task(tmp_path)
    assert str(err.value) == f"{tmp_path}: a folder without task.toml, not a task file"


def test_a_folder_stands_for_its_task_toml() -> None:
    assert load_task(DEMO_DIR) == load_task(DEMO_DIR / "task.toml")


@pytest.mark.parametrize(
    "case", ["invalid toml", "missing key", "wrong type", "missing file", "unknown key", "deep nesting", "NUL in run"]
)
def test_daemon_refuses_bad_task_before_listening(tmp_path: Path, case: str) -> None:
    text = {
        "deep nesting": "a = " + "[" * 5000 + "\n",
        "NUL in run": _replace('run = "make"', 'run = "ma\\u0000ke"'),
        "invalid toml": "id = \n",
        "missing key": _replace('id = "demo-overflow"\n', ""),
        "wrong type": _replace('run = "make"', "run = 1"),
        "missing file": _replace('"pocs/crash-2"', '"pocs/crash-3"'),
        "unknown key": "oops = 1\n" + FULL,
    }[case]
    path = write(tmp_path, text)
    original = path.read_bytes()
    with pytest.raises(TaskError) as err:
        load_task(path)
    sock = short_tempdir() / "d.sock"
    proc = run_ssebench("daemon", "--task", str(path), "--socket", str(sock), env={"SSE_DIFFICULTY": "0"})
    assert proc.returncode == 2
    assert proc.stderr == f"{err.value}\n"
    assert proc.stdout == ""
    assert not sock.exists()
    assert path.read_bytes() == original


# -- [intent] files, the hidden parts and the support files ---------------------------------------


def _with_intent_files(tmp_path: Path, value: str) -> Path:
    (tmp_path / "intent").mkdir(parents=True, exist_ok=True)
    (tmp_path / "intent" / "helper.py").write_text("print('helper')\n")
    (tmp_path / "data.txt").write_text("data\n")
    return write(tmp_path, FULL + f"files = {value}\n")


def test_intent_files_are_read(tmp_path: Path) -> None:
    task = load_task(_with_intent_files(tmp_path, f'["intent", "./data.txt", "{tmp_path}/intent/helper.py"]'))
    assert task.intent is not None
    assert task.intent.files == (tmp_path / "intent", tmp_path / "data.txt", tmp_path / "intent" / "helper.py")
    assert load_task(write(tmp_path, FULL)).intent.files == ()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "key", "fault"),
    [
        ('"intent"', "intent.files", "must be an array of strings, got a string"),
        ('["intent", 3]', "intent.files[1]", "must be a string, got an integer"),
        ('[" "]', "intent.files[0]", "must not be empty"),
        ('["intent/he\\u0007lper.py"]', "intent.files[0]", "a path must not contain control characters, found U+0007"),
        (
            '["intent/nope.py"]',
            "intent.files[0]",
            "file or folder 'intent/nope.py' does not exist (resolved to {d}/intent/nope.py)",
        ),
        (
            '["../elsewhere"]',
            "intent.files[0]",
            "'../elsewhere' is not inside the task folder (resolved to {p}/elsewhere)",
        ),
        ('["/etc/passwd"]', "intent.files[0]", "'/etc/passwd' is not inside the task folder (resolved to /etc/passwd)"),
        ('["intent/.."]', "intent.files[0]", "'intent/..' is the task folder itself; name files or folders inside it"),
    ],
)
def test_bad_intent_files(tmp_path: Path, value: str, key: str, fault: str) -> None:
    folder = tmp_path / "task"
    path = _with_intent_files(folder, value)
    with pytest.raises(TaskError) as err:
        load_task(path)
    assert str(err.value) == f"{path}: key '{key}': {fault.format(d=folder, p=tmp_path)}"


def test_hidden_parts_and_support_files(tmp_path: Path) -> None:
    import os

    from ssebench.taskfiles import hidden_parts, intent_entries, left_out, support_files

    path = _with_intent_files(tmp_path, '["intent"]')
    (tmp_path / "build.sh").write_text("make\n")
    (tmp_path / "src" / "main.c").write_text("")
    (tmp_path / "pocs" / "README").write_text("about the PoCs\n")
    os.link(tmp_path / "pocs" / "crash-1", tmp_path / "copy-of-crash-1")  # the same file: hidden too
    (tmp_path / "link").symlink_to("pocs/crash-2")  # a symlink is kept (it leads nowhere in a check)
    (tmp_path / "empty-after-hiding").mkdir()
    (tmp_path / "empty-after-hiding" / "x").symlink_to("../intent.diff")
    (tmp_path / "intent" / "intent.diff").symlink_to("../intent.diff")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref\n")
    (tmp_path / "fifo-dir").mkdir()
    os.mkfifo(tmp_path / "fifo-dir" / "fifo")
    task = load_task(path)
    assert [(p.key, p.path.relative_to(tmp_path).as_posix(), p.step) for p in hidden_parts(task)] == [
        ("the task file", "task.toml", "never"),
        ("intent.diff", "intent.diff", "never"),
        ("pocs.files[0]", "pocs/crash-1", "its PoC run"),
        ("pocs.files[1]", "pocs/crash-2", "its PoC run"),
        ("intent.files[0]", "intent", "the intent step"),
    ]
    assert sorted(str(e.rel) for e in support_files(task)) == [
        "build.sh",
        "data.txt",
        "empty-after-hiding",
        "empty-after-hiding/x",
        "link",
        "pocs",
        "pocs/README",
    ]
    assert [str(e.rel) for e in intent_entries(task)] == ["intent", "intent/helper.py", "intent/intent.diff"]
    assert left_out(task) == [
        "src (the source tree: checks get their copy of it as SSE_TREE)",
        ".git (its objects may hold the hidden parts)",
    ]
