"""The run record's builders (ssebench/container/results.py): the one exit-status rule, the
one-line reasons, grading from elsewhere merged in with the same rule; the server's typed
call log read back; and the sidecar's start-up wait."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssebench import runrecord
from ssebench.container import results
from ssebench.container.calls import read_calls
from ssebench.container.engine import DockerRunError
from ssebench.container.results import exit_status, grading_of, with_grading
from ssebench.runrecord import AgentFacts, CallRecord, CheckGrade, Grading, Outcome, RunResult, RunSpec, Stage
from ssebench.supervise import ssebench_argv


def agent(**kw: Any) -> AgentFacts:
    return AgentFacts(command=("agent",), timeout=60, **{"exit_code": 0, **kw})


def grading(*states: str) -> Grading:
    names = ("build", "pocs", "intent", "functional")
    checks = tuple(CheckGrade(check=n, state=s) for n, s in zip(names, states, strict=False))  # type: ignore[arg-type]
    return Grading(task="t", tree="/tree", passed=all(s == "passed" for s in states), checks=checks)


def ungraded(facts: AgentFacts, code: int = 0) -> RunResult:
    """An agent container's record before the sidecar graded (sidecar mode without a task)."""
    spec = RunSpec(task_file="", task_id="", command=("agent",), level=2)
    status = results.status_name(code)
    return RunResult(
        spec=spec,
        outcome=runrecord.outcome_of(status),
        status=status,
        exit_code=code,
        task=runrecord.TaskRef(id=None, file=None, tree="/tree"),
        stages={"agent": Stage(state="done", detail="exited 0 after 1.0 s")},
        agent=facts,
    )


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
    outcome: AgentFacts, grade_error: str | None, passed: bool | None, expected: tuple[int, str | None]
) -> None:
    assert exit_status(outcome, grade_error, passed) == expected


def test_sidecar_grading_is_merged_with_the_same_rule_and_says_which_checks_failed() -> None:
    merged = with_grading(
        ungraded(agent()), grading("passed", "failed", "failed"), "sidecar", task_file="/task/x.toml", task_id="t"
    )
    assert (merged.exit_code, merged.status, merged.outcome, merged.passed, merged.error) == (
        1,
        "checks_failed",
        Outcome.FAILED,
        False,
        None,
    )
    assert merged.reason == "failed: PoCs, intent tests"
    assert merged.stages["grading"] == Stage(state="done", detail="a check failed", passed=False, where="sidecar")
    assert merged.stages["agent"].state == "done"
    assert merged.task == runrecord.TaskRef(id="t", file="/task/x.toml", tree="/tree")
    assert merged.grading == grading("passed", "failed", "failed")


def test_a_grading_that_reached_no_verdict_is_an_infrastructure_outcome_with_its_first_line() -> None:
    broken = with_grading(
        ungraded(agent()), "grading failed (ssebench grade exited 2):\nTraceback ...", "pod", task_file="/task/t.toml"
    )
    assert (broken.exit_code, broken.status, broken.outcome) == (7, "grading_error", Outcome.INFRASTRUCTURE)
    assert broken.error == "grading failed (ssebench grade exited 2):\nTraceback ..."
    assert broken.reason == "grading failed (ssebench grade exited 2):"
    assert broken.stages["grading"].where == "pod" and broken.passed is None
    # the agent's failure comes first, whatever grading said
    failed = with_grading(
        ungraded(agent(exit_code=1, error="the agent exited with status 1: Not logged in")), "x", "pod", task_file="f"
    )
    assert (failed.status, failed.reason) == ("agent_failed", "the agent exited with status 1: Not logged in")


@pytest.mark.parametrize(
    ("status", "error", "facts", "expected"),
    [
        (
            "agent_timeout",
            "the agent did not finish within 60 s",
            agent(timed_out=True),
            "the agent did not finish within 60 s",
        ),
        (
            "agent_failed",
            None,
            agent(exit_code=127, error="the agent command could not start: No such file or directory: x"),
            "the agent command could not start: No such file or directory: x",
        ),
        (
            "daemon_failed",
            "the daemon (socket /s) exited with status 2 before it was ready\nLast lines of its log:\n  bad",
            None,
            "the daemon did not come up: the daemon (socket /s) exited with status 2 before it was ready",
        ),
        (
            "server_failed",
            "the MCP server (http://x) did not answer within 3 s",
            None,
            "the MCP server did not come up: the MCP server (http://x) did not answer within 3 s",
        ),
        ("grading_error", "grading failed: cannot sandbox checks", agent(), "grading failed: cannot sandbox checks"),
        ("interrupted", "interrupted by SIGTERM", agent(), "interrupted by SIGTERM"),
        ("passed", None, agent(), None),
    ],
)
def test_every_outcome_but_passed_has_a_reason_a_user_can_act_on(
    status: str, error: str | None, facts: AgentFacts | None, expected: str | None
) -> None:
    assert results.reason(status, error, facts, None) == expected


@given(
    status=st.sampled_from(sorted(runrecord.STATUSES)),
    error=st.none() | st.text(max_size=60),
    exit_code=st.integers(0, 255),
)
def test_a_reason_is_one_line_and_only_a_pass_has_none(status: str, error: str | None, exit_code: int) -> None:
    said = results.reason(status, error, agent(exit_code=exit_code), grading("failed"))
    if runrecord.outcome_of(status) is Outcome.PASSED:
        assert said is None
    else:
        assert said and "\n" not in said and "\r" not in said.strip()


def test_graded_elsewhere_is_typed_and_grading_json_is_rewritten_from_it(tmp_path: Path) -> None:
    report = tmp_path / "grading.json"
    document = {"task": "t", "tree": "/tree", "passed": True, "checks": [{"check": "build", "state": "passed"}]}
    report.write_text(json.dumps(document))
    typed = grading_of(0, report, [])
    assert typed == Grading(task="t", tree="/tree", passed=True, checks=(CheckGrade(check="build", state="passed"),))
    assert json.loads(report.read_text()) == typed.model_dump(mode="json")  # what results.json's grading holds
    report.write_text("not json")
    assert grading_of(1, report, ["Traceback", "boom"]) == "grading failed (ssebench grade exited 1):\nTraceback\nboom"
    assert grading_of(2, report, []) == "grading failed (ssebench grade exited 2)"


def test_the_call_log_is_read_bounded_skipping_what_is_not_a_record(tmp_path: Path) -> None:
    calls = tmp_path / "calls.jsonl"
    one = CallRecord(number=1, level=2, ended="passed", outcome="passed", seconds=1.5)
    lines = [
        one.model_dump_json(),
        "not a record",
        "x" * 10_000,
        one.model_copy(update={"number": 2}).model_dump_json(),
    ]
    calls.write_text("\n".join(lines) + "\n")
    assert read_calls(calls) == ((one, one.model_copy(update={"number": 2})), 2)
    assert read_calls(calls, limit=1) == ((one,), 2)  # the count stays right past the limit
    assert read_calls(tmp_path / "none.jsonl") == ((), 0)


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
