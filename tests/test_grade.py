"""``ssebench grade``: the example task fails unfixed and passes with fix.patch."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from ssebench.supervise import ssebench_argv
from tests.helpers.daemon import marked_processes, run_ssebench
from tests.test_daemon import tree_hash
from tests.test_daemon_lifecycle import ESCAPES

DEMO = Path(__file__).resolve().parent.parent / "examples" / "tasks" / "demo-overflow"


def no_times(text: str) -> str:
    return re.sub(r"\d+\.\d s", "T s", text)


@pytest.fixture
def fixed_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "fixed"
    shutil.copytree(DEMO / "src", tree)
    subprocess.run(["patch", "-s", "-p1", "-i", str(DEMO.with_name(DEMO.name + ".fix.patch"))], cwd=tree, check=True)
    return tree


def test_demo_unfixed_fails(tmp_path):
    before = tree_hash(DEMO / "src")
    proc = run_ssebench("grade", "--task", str(DEMO / "task.toml"), env={"SSE_DIFFICULTY": "4"})
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    head = no_times(proc.stdout).split("\n\nLog (PoCs)")[0]
    assert head == (
        f"Grade of task 'demo-overflow' on {DEMO / 'src'}: FAILED (2 of 4 checks failed)\n\n"
        "Checks:\n"
        "- build: passed (T s)\n"
        "- PoCs: FAILED (passed 0 of 2; stopped at the first that still triggers the bug; T s)\n"
        "- intent tests: FAILED (T s)\n"
        "- functional tests: passed (T s)"
    )
    assert "\nSUMMARY: AddressSanitizer: stack-buffer-overflow " in proc.stdout
    assert "Log (intent tests), last 40 lines at most (--logs DIR saves all of it):\n" in proc.stdout
    assert "FAIL tests/cases/long-name.in" in proc.stdout
    assert tree_hash(DEMO / "src") == before
    assert not (DEMO / "src" / "greet").exists()


def test_demo_fixed_passes(fixed_tree):
    proc = run_ssebench("grade", "--task", str(DEMO / "task.toml"), "--tree", str(fixed_tree))
    assert proc.returncode == 0, proc.stdout
    assert no_times(proc.stdout) == (
        f"Grade of task 'demo-overflow' on {fixed_tree}: every check passed\n\n"
        "Checks:\n"
        "- build: passed (T s)\n"
        "- PoCs: passed (2 of 2; T s)\n"
        "- intent tests: passed (T s)\n"
        "- functional tests: passed (covered by the intent tests)\n"
    )


def test_json_output(fixed_tree):
    proc = run_ssebench("grade", "--task", str(DEMO / "task.toml"), "--tree", str(fixed_tree), "--json")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert data["task"] == "demo-overflow" and data["tree"] == str(fixed_tree) and data["passed"] is True
    assert [(c["check"], c["state"]) for c in data["checks"]] == [
        ("build", "passed"),
        ("pocs", "passed"),
        ("intent", "passed"),
        ("functional", "passed"),
    ]
    assert (data["checks"][1]["pocs_passed"], data["checks"][1]["pocs_total"]) == (2, 2)
    assert data["checks"][3]["covered_by_intent"] is True


@pytest.mark.slow
def test_json_failure_carries_the_log_tail():
    proc = run_ssebench("grade", "--task", str(DEMO / "task.toml"), "--json")
    assert proc.returncode == 1
    checks = {c["check"]: c for c in json.loads(proc.stdout)["checks"]}
    assert "SUMMARY: AddressSanitizer: stack-buffer-overflow" in checks["pocs"]["log_tail"]
    assert "log_tail" not in checks["build"]


def test_grade_ignores_the_level_even_an_invalid_one(task_factory):
    t = task_factory(pocs=["fixed"], intent="true", functional="true")
    proc = run_ssebench("grade", "--task", str(t.file), "--json", env={"SSE_DIFFICULTY": "bogus"})
    assert proc.returncode == 0, proc.stderr
    assert [c["check"] for c in json.loads(proc.stdout)["checks"]] == ["build", "pocs", "intent", "functional"]


def test_failed_build(task_factory):
    t = task_factory(build="echo nope >&2; exit 1", pocs=["fixed"])
    proc = run_ssebench("grade", "--task", str(t.file))
    assert proc.returncode == 1
    assert no_times(proc.stdout) == (
        f"Grade of task 'test-task' on {t.tree}: FAILED (1 of 3 checks failed)\n\nChecks:\n"
        "- build: FAILED (T s)\n- PoCs: not run (the build failed)\n"
        "- functional tests: not run (the build failed)\n\n"
        "Log (build), last 40 lines at most (--logs DIR saves all of it):\n\nnope\n"
    )


def test_logs_keeps_every_checks_whole_log(task_factory, tmp_path):
    """Issue 31: the summary shows 40 lines; ``--logs DIR`` keeps each check's whole log."""
    t = task_factory(build="seq 1 100; echo to-stderr >&2", pocs=None, functional="seq 1 70; exit 3")
    logs = tmp_path / "logs" / "new"  # made, parents too
    proc = run_ssebench("grade", "--task", str(t.file), "--logs", str(logs))
    assert (proc.returncode, proc.stderr) == (1, "")
    assert sorted(p.name for p in logs.iterdir()) == ["build.log", "functional.log"]  # no PoCs: no log
    assert (logs / "build.log").read_text() == "".join(f"{i}\n" for i in range(1, 101)) + "\nto-stderr\n"
    assert (logs / "functional.log").read_text() == "".join(f"{i}\n" for i in range(1, 71)) + "\n"
    tail = "\n".join(str(i) for i in range(32, 71)) + "\n"  # 39 lines + the blank one before stderr
    assert proc.stdout.endswith(
        f"Log (functional tests), last 40 lines at most (all of it: {logs / 'functional.log'}):\n{tail}\n\n"
        f"Whole logs in {logs}: build.log, functional.log\n"
    )


def test_logs_refuses_a_folder_with_files_before_grading(task_factory, tmp_path):
    t = task_factory()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine\n")
    (tmp_path / "file").write_text("")
    for where, problem in (("full", "is not empty (give a new or empty folder)"), ("file", "is not a folder")):
        proc = run_ssebench("grade", "--task", str(t.file), "--logs", str(tmp_path / where))
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == f"ssebench grade: --logs {tmp_path / where}: {problem}\n"
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine\n"


def test_task_without_pocs_and_timeouts(task_factory):
    t = task_factory(pocs=None, functional="sleep 20", functional_timeout=0.5)
    proc = run_ssebench("grade", "--task", str(t.file))
    assert proc.returncode == 1
    assert "- PoCs: passed (the task has none; T s)\n" in no_times(proc.stdout)
    assert "- functional tests: FAILED (timed out; T s)\n" in no_times(proc.stdout)
    assert proc.stdout.endswith(
        "[ssebench] timed out after 0.5 s: the command and every process it started were killed.\n"
    )


def test_bad_task_exits_2(tmp_path):
    bad = tmp_path / "task.toml"
    bad.write_text('id = "x"\n')
    proc = run_ssebench("grade", "--task", str(bad))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"{bad}: key 'source': missing (required)\n"


def test_bad_tree_exits_2(tmp_path):
    proc = run_ssebench("grade", "--task", str(DEMO / "task.toml"), "--tree", str(tmp_path / "nope"))
    assert (proc.returncode, proc.stderr) == (2, f"ssebench grade: --tree {tmp_path / 'nope'}: is not a folder\n")


def test_grade_leaves_no_process(task_factory):
    mark = uuid.uuid4().hex
    t = task_factory(build=ESCAPES, build_timeout=1)
    proc = run_ssebench("grade", "--task", str(t.file), env={"SSE_TEST_MARK": mark})
    assert proc.returncode == 1
    assert marked_processes(mark) == []


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_grading_leaves_nothing_behind(task_factory, tmp_path: Path, signum: int) -> None:
    """Issue 31: Ctrl-C (or SIGTERM, as a supervisor stops it) while a check runs ends
    grading at once; its workspace (ssebench-grade-*) and the sandbox's /etc copy go too."""
    t = task_factory(build="true", functional="sleep 300")
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = subprocess.Popen(
        ssebench_argv("grade", "--task", str(t.file)),
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not list(temp.glob("ssebench-grade-*/*/logs/functional.out")):  # the check is running
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signum)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum
    assert sorted(p.name for p in temp.iterdir()) == []
