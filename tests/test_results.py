"""results.json's one exit-status rule, as the entrypoint applies it and as Docker's sidecar
grading applies it again (ssebench/container/results.py); and the sidecar's start-up wait."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from ssebench.container import results
from ssebench.container.engine import DockerRunError
from ssebench.container.results import AgentOutcome, add_sidecar_grading, exit_status, grading_stage
from ssebench.supervise import ssebench_argv


def agent(**kw: Any) -> AgentOutcome:
    return AgentOutcome(command=["agent"], timeout=60, **{"exit_code": 0, **kw})


@pytest.mark.parametrize(
    ("outcome", "grade_error", "passed", "expected"),
    [
        (agent(), None, True, (0, None)),
        (agent(), None, False, (1, None)),
        (agent(), None, None, (0, None)),  # sidecar mode without a task: the sidecar grades
        (agent(), "grading failed", None, (7, "grading failed")),
        (agent(exit_code=3, error="the agent exited with status 3"), None, True, (6, "the agent exited with status 3")),
        (
            agent(exit_code=3, error="the agent exited with status 3"),
            "grading failed",
            None,
            (6, "the agent exited with status 3; grading failed"),
        ),
        (agent(exit_code=137, timed_out=True), None, False, (5, "the agent did not finish within 60 s")),
    ],
)
def test_the_agent_first_then_grading(
    outcome: AgentOutcome, grade_error: str | None, passed: bool | None, expected: tuple[int, str | None]
) -> None:
    assert exit_status(outcome, grade_error, passed) == expected


def test_sidecar_grading_is_merged_with_the_same_rule() -> None:
    before = {
        "exit_code": 0,
        "status": "passed",
        "error": None,
        "passed": None,
        "stages": {"agent": {"state": "done"}},
        "task": {"id": None, "file": None, "tree": "/tree"},
        "agent": agent().as_json(),
        "grading": None,
    }
    stage, passed = grading_stage(1, {"checks": []}, "")
    merged = add_sidecar_grading(before, {"checks": []}, stage, passed, {"id": "t", "file": "/task/task.toml"})
    assert (merged["exit_code"], merged["status"], merged["passed"], merged["error"]) == (
        1,
        "checks_failed",
        False,
        None,
    )
    assert merged["stages"] == {
        "agent": {"state": "done"},
        "grading": {"state": "done", "detail": "a check failed", "passed": False, "where": "sidecar"},
    }
    assert merged["task"] == {"id": "t", "file": "/task/task.toml", "tree": "/tree"}
    stage, passed = grading_stage(2, None, "Traceback ...")
    broken = add_sidecar_grading(before, None, stage, passed, {})
    assert (broken["exit_code"], broken["status"], broken["error"]) == (
        7,
        "grading_error",
        "grading failed (ssebench grade exited 2):\nTraceback ...",
    )


def test_the_writer_replaces_the_file_whole_and_readable(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    results.write(path, {"status": "passed"})
    results.write(path, {"status": "checks_failed", "note": "é"})
    assert path.read_text(encoding="utf-8") == '{\n  "status": "checks_failed",\n  "note": "é"\n}\n'
    assert path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


class LocalContainer:
    """Answers the two ``docker`` calls :func:`wait_for_sidecar` makes (inspect, logs) for a
    real local ``ssebench daemon`` process, where no engine is available."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.proc, self.log = proc, log

    def docker(self, *args: str) -> subprocess.CompletedProcess[str]:
        if args[0] == "inspect":
            state = "running 0" if self.proc.poll() is None else f"exited {self.proc.returncode}"
            return subprocess.CompletedProcess(args, 0, state, "")
        return subprocess.CompletedProcess(args, 0, "", self.log.read_text())


def test_a_sidecar_daemon_that_exits_is_named_with_its_own_line(tmp_path: Path) -> None:
    from ssebench.container.sidecar import wait_for_sidecar

    log = tmp_path / "daemon.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ssebench_argv("daemon", "--task", str(tmp_path / "none.toml"), "--socket", str(tmp_path / "d.sock")),
            stdout=out,
            stderr=out,
        )
    proc.wait(timeout=60)
    with pytest.raises(DockerRunError) as error:
        wait_for_sidecar(LocalContainer(proc, log), "sidecar", tmp_path / "d.sock", timeout=30)  # type: ignore[arg-type]
    assert str(error.value) == (
        f"the daemon's container exited with status 2:\n{tmp_path / 'none.toml'}: the task file does not exist"
    )
