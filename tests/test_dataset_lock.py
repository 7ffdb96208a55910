"""``ssebench dataset lock`` and ``dataset verify``: the lock's bytes, every changed file
named, bad input named by file and key, nothing half-written. Verdicts come from the
real ``task verify`` (real runner and sandbox) or this machine's cache of them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.daemon import run_ssebench
from tests.test_task_verify import small_task

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "tasks"


def dataset(*args: str | Path, cache: Path, cwd: Path | None = None) -> tuple[int, str, str]:
    done = run_ssebench("dataset", *map(str, args), env={"SSEBENCH_CACHE": str(cache)}, timeout=300, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


def two_tasks(root: Path) -> Path:
    ds = root / "ds"
    shutil.copytree(EXAMPLES / "demo-overflow", ds / "demo-overflow")
    shutil.copy(EXAMPLES / "demo-overflow.fix.patch", ds / "demo-overflow.fix.patch")
    small_task(ds / "more", pocs=["crash"])
    return ds


def test_lock_verifies_each_task_and_records_its_files(tmp_path: Path) -> None:
    ds = two_tasks(tmp_path)
    code, out, err = dataset("lock", ds, cache=tmp_path / "cache")
    assert (code, err) == (0, ""), out
    lock = json.loads((ds / "ssebench.lock").read_text())
    assert set(lock) == {"ssebench_lock", "created", "tasks"}
    assert [t["id"] for t in lock["tasks"]] == ["demo-overflow", "small"]
    demo, small = lock["tasks"]
    assert (demo["task_file"], demo["folder"], demo["source"], demo["source_files"]) == (
        "demo-overflow/task.toml",
        "demo-overflow",
        "demo-overflow/src",
        None,
    )
    assert demo["fix"]["path"] == "demo-overflow.fix.patch"
    assert demo["verify"]["verdict"] == "sound" and demo["verify"]["problems"] == []
    assert small["verify"]["verdict"] == "sound" and small["fix"]["path"] == "more/t.fix.patch"
    assert sorted(demo["files"]) == sorted(
        p.relative_to(ds / "demo-overflow").as_posix() for p in (ds / "demo-overflow").rglob("*") if p.is_file()
    )
    assert demo["files"]["src/tests/run-tests.sh"].endswith(" x")  # an executable keeps its bit in the entry
    assert out.splitlines()[-1].startswith(f"Wrote {ds / 'ssebench.lock'}: 2 tasks, sha256:")
    # Locked again: the same bytes, so the verdicts come from the cache (no second verify).
    code, out, _ = dataset("lock", ds, cache=tmp_path / "cache")
    assert code == 0 and out.count("(cached)") == 2

    code, out, err = dataset("verify", ds / "ssebench.lock", cache=tmp_path / "cache")
    assert (code, err) == (0, "")
    assert out == f"{ds / 'ssebench.lock'}: every file as locked (2 tasks, locked {lock['created']})\n".replace(
        lock["created"], json.loads((ds / "ssebench.lock").read_text())["created"]
    )


def test_verify_names_every_file_that_changed(tmp_path: Path) -> None:
    ds = two_tasks(tmp_path)
    assert dataset("lock", ds, "--no-verify", cache=tmp_path / "cache")[0] == 0
    (ds / "demo-overflow" / "src" / "greet.c").write_text("changed\n")
    (ds / "demo-overflow" / "pocs" / "sixteen-chars").unlink()
    (ds / "demo-overflow" / "new-file").write_text("new\n")
    os.chmod(ds / "more" / "t" / "src" / "state", 0o755)
    (ds / "more" / "t.fix.patch").write_text("another fix\n")
    shutil.copytree(ds / "more", ds / "copy")  # a task not in the lock (and two tasks with one id)
    code, out, err = dataset("verify", cache=tmp_path / "cache", cwd=ds)
    assert (code, err) == (1, "")
    created = json.loads((ds / "ssebench.lock").read_text())["created"]
    assert out == (
        f"ssebench.lock: 6 changed since it was locked ({created}):\n"
        "  task 'demo-overflow': added: demo-overflow/new-file\n"
        "  task 'demo-overflow': removed: demo-overflow/pocs/sixteen-chars\n"
        "  task 'demo-overflow': changed: demo-overflow/src/greet.c\n"
        "  task 'small': changed: more/t/src/state\n"
        "  task 'small': fix more/t.fix.patch changed\n"
        "  copy/t/task.toml: a task that is not in the lock\n"
    )


def test_bad_input_is_one_line_naming_file_and_key(tmp_path: Path) -> None:
    ds = two_tasks(tmp_path)
    shutil.copytree(ds / "more", ds / "copy")
    code, out, err = dataset("lock", ds, "--no-verify", cache=tmp_path / "cache")
    assert (code, out) == (2, "")
    first, second = ds / "copy" / "t" / "task.toml", ds / "more" / "t" / "task.toml"
    assert err == (f"ssebench dataset: {second}: key 'id': two tasks have the id 'small': {first} and {second}\n")
    assert not (ds / "ssebench.lock").exists()  # nothing written

    shutil.rmtree(ds / "copy")
    (ds / "more" / "t" / "pocs" / "poc-1").unlink()  # a PoC file that is missing
    code, _, err = dataset("lock", ds, "--no-verify", cache=tmp_path / "cache")
    poc = ds / "more" / "t" / "pocs" / "poc-1"
    assert (code, err) == (
        2,
        f"ssebench dataset: {second}: key 'pocs.files[0]': file 'pocs/poc-1' does not exist (resolved to {poc})\n",
    )
    assert dataset("lock", tmp_path / "nothing-here", cache=tmp_path / "cache")[2] == (
        f"ssebench dataset: {tmp_path / 'nothing-here'}: not a folder\n"
    )


def test_a_lock_from_another_dataset(tmp_path: Path) -> None:
    ds = two_tasks(tmp_path)
    assert dataset("lock", ds, "--no-verify", cache=tmp_path / "cache")[0] == 0
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(ds / "ssebench.lock", other / "ssebench.lock")
    code, out, err = dataset("verify", other / "ssebench.lock", cache=tmp_path / "cache")
    assert (code, out) == (2, "")
    assert err == (
        f"ssebench dataset: {other / 'ssebench.lock'}: a lock from another dataset: none of its 2 tasks is "
        f"there (key 'tasks[0].task_file': {other / 'demo-overflow/task.toml'} does not exist)\n"
    )
    # The same layout, other tasks: the id names it.
    small_task(other / "more", pocs=["x"])
    (other / "demo-overflow").mkdir()
    toml = (ds / "more" / "t" / "task.toml").read_text().replace('id = "small"', 'id = "someone-else"')
    (other / "more" / "t" / "task.toml").write_text(toml)
    code, _, err = dataset("verify", other / "ssebench.lock", cache=tmp_path / "cache")
    assert (code, err) == (
        2,
        f"ssebench dataset: {other / 'ssebench.lock'}: key 'tasks[1].id': the lock says 'small', but "
        f"{other / 'more/t/task.toml'} is task 'someone-else': a lock from another dataset?\n",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not a lock file: not valid JSON"),
        ('{"tasks": []}', "not an ssebench lock (version 1): key 'ssebench_lock' missing or other"),
        ('{"ssebench_lock": 1, "created": "x", "tasks": [{"id": 3}]}', "key 'tasks[0].files': must be an object"),
    ],
)
def test_a_lock_that_does_not_read(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "ssebench.lock").write_text(text)
    code, _, err = dataset("verify", tmp_path / "ssebench.lock", cache=tmp_path / "cache")
    assert code == 2
    assert err.startswith(f"ssebench dataset: {tmp_path / 'ssebench.lock'}: {message}")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=64), mode=st.sampled_from([0o644, 0o755]))
def test_any_change_to_a_file_changes_its_entry(tmp_path: Path, content: bytes, mode: int) -> None:
    """Property: an entry is equal exactly when content and executable bit are."""
    from ssebench.dataset.hashing import file_entry

    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(content)
    b.write_bytes(content + b"!")
    os.chmod(a, mode)
    os.chmod(b, mode)
    assert file_entry(a) != file_entry(b)
    before = file_entry(a)
    os.chmod(a, mode ^ 0o111)
    assert file_entry(a) != before


def test_lock_is_replaced_atomically(tmp_path: Path) -> None:
    """A new lock replaces the old one by a rename: a reader of the old file still reads
    it whole; no temporary file is left beside it."""
    ds = two_tasks(tmp_path)
    assert dataset("lock", ds, "--no-verify", cache=tmp_path / "cache")[0] == 0
    with open(ds / "ssebench.lock", "rb") as old:
        before = (ds / "ssebench.lock").read_bytes()
        (ds / "demo-overflow" / "src" / "greet.c").write_text("changed\n")
        assert dataset("lock", ds, "--no-verify", cache=tmp_path / "cache")[0] == 0
        assert old.read() == before
    assert (ds / "ssebench.lock").read_bytes() != before
    assert sorted(p.name for p in ds.iterdir()) == ["demo-overflow", "demo-overflow.fix.patch", "more", "ssebench.lock"]
