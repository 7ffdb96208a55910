"""``ssebench task check|new`` through the real command: exact output, exit codes, files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import DEMO_TASK
from tests.helpers.daemon import run_ssebench
from tests.helpers.realtasks import apply_patch
from tests.helpers.tasks import make_task

pytestmark = pytest.mark.timeout(120)

DEMO = DEMO_TASK.parent

DEMO_CHECK = f"""\
{DEMO_TASK}: valid task 'demo-overflow'
  source: {DEMO / "src"}
  description (shown to the agent): greet reads NAME=<name> lines and greets each name. A long name \
overflows a stack buffer in the name parser; fix it without breaking the existing behaviour.
  build: make (timeout 120 s)
  PoCs: 2, each run as: ASAN_OPTIONS=detect_leaks=0 ./greet < "$SSE_POC" (timeout 30 s each): \
pocs/long-name, pocs/sixteen-chars
  intent tests: apply intent.diff, then: make test (timeout 120 s)
  functional tests: make test (timeout 120 s)

What test_patch runs for the agent at each difficulty level (SSE_DIFFICULTY):
  0 FULL_ASSISTANCE: runs build, PoCs, intent tests, functional tests (only when the intent tests fail)
  1 NO_INTENT_TEST: runs build, PoCs, functional tests; withheld: intent tests
  2 NO_FUTURE_TEST (default): runs build, functional tests; withheld: PoCs, intent tests
  3 BUILD_ONLY: runs build; withheld: PoCs, intent tests, functional tests
  4 NO_BUILD: runs nothing; withheld: build, PoCs, intent tests, functional tests
Final grading (ssebench grade) runs every check the task has: build, PoCs, intent tests, functional tests.

What checks see at SSE_TASK_DIR (in the sandbox; with --no-sandbox it is the task folder, nothing hidden):
  support files (read-only, every check): none
  hidden from every check: task.toml (the task file), intent.diff (applied by the daemon from a pipe, never a file)
  hidden except in its own PoC run: pocs/long-name, pocs/sixteen-chars
  not there: src (the source tree: checks get their copy of it as SSE_TREE)
"""
# The demo keeps its reference fix beside its folder: no support file, no warning.
DEMO_WARNING = ""


def test_check_prints_what_each_level_shows(tmp_path: Path) -> None:
    done = run_ssebench("task", "check", str(DEMO_TASK), env={"SSE_DIFFICULTY": "0"})
    assert (done.returncode, done.stderr) == (0, DEMO_WARNING)
    assert done.stdout == DEMO_CHECK  # SSE_DIFFICULTY changes nothing: every level is shown


def test_check_a_task_with_only_a_build(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", task_id="bare", description="", build="true", functional=None)
    done = run_ssebench("task", "check", str(task.file))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"{task.file}: valid task 'bare'\n"
        f"  source: {task.tree}\n"
        "  description (shown to the agent): (none)\n"
        "  build: true (timeout 1800 s)\n"
        "  PoCs: none (the PoC step passes: 'the task has none')\n"
        "  intent tests: none\n"
        "  functional tests: none\n"
        "\n"
        "What test_patch runs for the agent at each difficulty level (SSE_DIFFICULTY):\n"
        "  0 FULL_ASSISTANCE: runs build, PoCs (none: reported passed)\n"
        "  1 NO_INTENT_TEST: runs build, PoCs (none: reported passed)\n"
        "  2 NO_FUTURE_TEST (default): runs build; withheld: PoCs\n"
        "  3 BUILD_ONLY: runs build; withheld: PoCs\n"
        "  4 NO_BUILD: runs nothing; withheld: build, PoCs\n"
        "Final grading (ssebench grade) runs every check the task has: build, PoCs.\n"
        "\n"
        "What checks see at SSE_TASK_DIR (in the sandbox; with --no-sandbox it is the task folder, "
        "nothing hidden):\n"
        "  support files (read-only, every check): none\n"
        "  hidden from every check: task.toml (the task file)\n"
        "  not there: src (the source tree: checks get their copy of it as SSE_TREE)\n"
    )


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('id = "x"\n', "key 'source': missing (required)"),
        (
            'id = "x"\nsource = "src"\n[build]\nrun = "make"\ntimout = 5\n',
            "key 'build.timout': unknown key (known keys: network, run, timeout)",
        ),
        ('id = "x"\nsource = "nope"\n[build]\nrun = "make"\n', "key 'source': folder 'nope' does not exist"),
        ("id = \n", "not valid TOML"),
    ],
)
def test_check_refuses_a_bad_task_with_the_loaders_one_line(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "src").mkdir()
    bad = tmp_path / "task.toml"
    bad.write_text(toml)
    done = run_ssebench("task", "check", str(bad))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"{bad}: {message}")
    assert done.stderr.count("\n") == 1


def test_check_shows_where_a_check_has_the_network(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", functional="make test", extra_toml="network = true\n")
    done = run_ssebench("task", "check", str(task.file))
    assert done.returncode == 0, done.stderr
    assert "  build: true (timeout 1800 s)\n" in done.stdout
    assert "  functional tests: make test (timeout 1800 s, network on)\n" in done.stdout


def test_check_warns_about_hidden_parts_inside_the_tree(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "crash").write_text("x")
    (tmp_path / "task.toml").write_text(
        'id = "leaky"\nsource = "src"\n[build]\nrun = "true"\n[pocs]\nrun = "true"\nfiles = ["src/crash"]\n'
    )
    done = run_ssebench("task", "check", str(tmp_path / "task.toml"))
    assert done.returncode == 0
    assert done.stderr == (
        f"ssebench task check: warning: pocs.files[0] ({tmp_path / 'src' / 'crash'}) is inside "
        f"the source tree {tmp_path / 'src'}: the agent can read it\n"
    )


def test_check_a_missing_file(tmp_path: Path) -> None:
    done = run_ssebench("task", "check", str(tmp_path / "nope.toml"))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"{tmp_path / 'nope.toml'}: the task file does not exist\n"


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_new_writes_a_skeleton_that_checks_and_grades(tmp_path: Path) -> None:
    target = tmp_path / "tasks" / "my task!"
    done = run_ssebench("task", "new", str(target))
    assert (done.returncode, done.stderr) == (0, "")
    task_file = target / "task.toml"
    assert done.stdout == (
        f"Wrote task 'my-task' to {target}:\n"
        "  task.toml               what to build and run (docs/task-format.md)\n"
        "  src/                    the tree the agent edits: app.c, Makefile, tests/run-tests.sh\n"
        "  pocs/no-equals          a PoC (hidden from the agent)\n"
        "  README.md               what to edit next\n"
        f"and its reference fix beside it (outside the task folder): {target}.fix.patch\n"
        "Next:\n"
        f"  ssebench task check {task_file}\n"
        f"  ssebench grade --task {task_file}\n"
        f"  ssebench task verify {target} --fix {target}.fix.patch\n"
    )
    assert _files(target) == [
        "README.md",
        "pocs",
        "pocs/no-equals",
        "src",
        "src/Makefile",
        "src/app.c",
        "src/tests",
        "src/tests/run-tests.sh",
        "task.toml",
    ]
    # No staging left; the fix beside the folder, where no check can read it.
    assert _files(target.parent) == ["my task!", "my task!.fix.patch"] + [f"my task!/{f}" for f in _files(target)]

    check = run_ssebench("task", "check", str(task_file))
    assert check.returncode == 0, check.stderr
    assert check.stdout.splitlines()[0] == f"{task_file}: valid task 'my-task'"

    # Unfixed: builds, the functional tests pass, the PoC still crashes the program.
    grade = run_ssebench("grade", "--task", str(task_file))
    assert grade.returncode == 1, grade.stdout + grade.stderr
    head = re.sub(r"\d+\.\d s", "T s", grade.stdout).split("\n\nLog (PoCs)")[0]
    assert head == (
        f"Grade of task 'my-task' on {target / 'src'}: FAILED (1 of 3 checks failed)\n\n"
        "Checks:\n"
        "- build: passed (T s)\n"
        "- PoCs: FAILED (passed 0 of 1; stopped at the first that still triggers the bug; T s)\n"
        "- functional tests: passed (T s)"
    )
    # The fix written beside the folder makes every check pass.
    apply_patch(target / "src", Path(f"{target}.fix.patch"))
    fixed = run_ssebench("grade", "--task", str(task_file))
    assert fixed.returncode == 0, fixed.stdout
    assert fixed.stdout.startswith(f"Grade of task 'my-task' on {target / 'src'}: every check passed\n")


def test_new_into_an_empty_folder_with_an_id(tmp_path: Path) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    done = run_ssebench("task", "new", str(target), "--id", "cve-2026-1")
    assert done.returncode == 0, done.stderr
    assert 'id = "cve-2026-1"\n' in (target / "task.toml").read_text()


def test_new_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "keep.txt").write_text("mine\n")
    done = run_ssebench("task", "new", str(target))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"ssebench task new: {target} is not empty; give a new or empty folder\n"
    assert _files(target) == ["keep.txt"]
    assert _files(tmp_path) == ["busy", "busy/keep.txt"]


def test_new_never_replaces_a_fix_beside_the_folder(tmp_path: Path) -> None:
    fix = tmp_path / "t.fix.patch"
    fix.write_text("mine\n")
    done = run_ssebench("task", "new", str(tmp_path / "t"))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench task new: {fix} exists; it would be the new task's reference fix (move it away)\n"
    )
    assert _files(tmp_path) == ["t.fix.patch"] and fix.read_text() == "mine\n"


def test_new_refuses_a_file_and_a_bad_id(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("")
    done = run_ssebench("task", "new", str(file))
    assert (done.returncode, done.stderr) == (2, f"ssebench task new: {file} exists and is not a folder\n")
    done = run_ssebench("task", "new", str(tmp_path / "x"), "--id", "bad id")
    assert (done.returncode, done.stderr) == (2, "ssebench task new: --id must match [A-Za-z0-9._-]+, got 'bad id'\n")
    assert _files(tmp_path) == ["file"]


def test_the_skeleton_is_what_the_docs_show() -> None:
    """docs/task-format.md quotes the skeleton's task.toml; they must not drift apart."""
    from ssebench.taskcmd import skeleton

    doc = (Path(__file__).resolve().parent.parent / "docs" / "task-format.md").read_text()
    assert skeleton("my-task")["task.toml"] in doc


def test_every_key_the_loader_accepts_is_documented() -> None:
    """docs/task-format.md's key table lists exactly the keys ssebench/task.py accepts."""
    from ssebench import task

    whole = (Path(__file__).resolve().parent.parent / "docs" / "task-format.md").read_text()
    doc = whole.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]  # the keys' section, not verify's JSON keys
    documented = set(re.findall(r"^\| `([a-z_.]+)` \|", doc, re.M))
    tables = {f"[{t}]" for t in (*task._TABLE_KEYS, "resources")}
    documented |= {name for name in re.findall(r"^\| `(\[[a-z_]+\])` \|", doc, re.M) if name in tables}
    accepted = {k for k in task._TOP_KEYS if k not in task._TABLE_KEYS and k != "resources"}
    accepted |= tables | {f"resources.{k}" for k in task._RESOURCE_KEYS}
    accepted |= {f"{t}.{k}" for t, keys in task._TABLE_KEYS.items() for k in keys}
    assert documented == accepted


def test_help_lists_the_actions() -> None:
    done = run_ssebench("task", "--help")
    assert done.returncode == 0
    assert "check" in done.stdout and "new" in done.stdout


def test_check_lists_support_files_and_hidden_parts(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", pocs=["1"], intent="true", functional=None)
    (tmp_path / "outside-poc").write_text("2")
    (task.dir / "intent").mkdir()
    (task.dir / "intent" / "data.txt").write_text("x")
    (task.dir / "build.sh").write_text("make\n")
    (task.dir / "data").mkdir()
    for i in range(25):
        (task.dir / "data" / f"in-{i:02}").write_text("x")
    (task.dir / "inside-link").symlink_to("build.sh")
    (task.dir / "outside-link").symlink_to("/opt/shared/helper.sh")
    (task.dir / "upstream.patch").write_text("--- a/x\n+++ b/x\n")
    (task.dir / ".git").mkdir()
    text = task.file.read_text().replace('files = ["pocs/poc-1"]', f'files = ["pocs/poc-1", "{tmp_path}/outside-poc"]')
    task.file.write_text(text + 'files = ["intent"]\n')
    done = run_ssebench("task", "check", str(task.file))
    assert done.returncode == 0, done.stderr
    data = ", ".join(f"data/in-{i:02}" for i in range(19))
    assert done.stdout.split("Final grading")[1].split("\n", 2)[2] == (
        "What checks see at SSE_TASK_DIR (in the sandbox; with --no-sandbox it is the task folder, nothing hidden):\n"
        f"  support files (read-only, every check): build.sh, {data}, and 9 more (29 files in all)\n"
        "  hidden from every check: task.toml (the task file), intent.diff (applied by the daemon from a pipe, "
        "never a file)\n"
        f"  hidden except in its own PoC run: pocs/poc-1, {tmp_path}/outside-poc (seen as .poc/outside-poc)\n"
        "  hidden except in the intent step (intent.files): intent/\n"
        "  not there: src (the source tree: checks get their copy of it as SSE_TREE), "
        ".git (its objects may hold the hidden parts)\n"
    )
    assert done.stderr == (
        "ssebench task check: warning: support file outside-link is a symlink to /opt/shared/helper.sh, outside "
        "the task folder: in the sandbox it leads nowhere (copy it in instead)\n"
        "ssebench task check: warning: support file upstream.patch is a diff: every check can read it, the "
        "agent's own build and tests included; keep a reference fix out of the task folder\n"
    )
