"""A run's record (:class:`ssebench.runrecord.RunResult`): the exit-status rule and its builders.

The entrypoint builds the record at the end of a run (:func:`build`); in Docker's sidecar
layout and in a Kubernetes pod grading runs where the task is, afterwards, and
:func:`with_grading` merges that verdict in with the same exit-status rule
(:func:`exit_status`). Every record gets its ``outcome`` from the status
(:func:`ssebench.runrecord.outcome_of`) and a one-line ``reason`` a user can act on
(:func:`reason`). docs/container.md has the exit-status table; runrecord.py is the one
writer of the file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from ssebench import runrecord
from ssebench.runrecord import AgentFacts, CallRecord, Grading, Outcome, RunResult, RunSpec, Stage, TaskRef

RESULTS_FILE = runrecord.RESULTS_FILE
DIALOG_FILE = "dialog.jsonl"
GRADING_FILE = "grading.json"

# Exit statuses (docs/container.md has the same table). The first that applies wins.
EXIT_PASSED = 0  # agent exited 0, every check passed
EXIT_CHECKS_FAILED = 1  # agent exited 0, grading ran, a check failed
EXIT_USAGE = 2  # bad setting or task file: nothing started, nothing written
EXIT_DAEMON_FAILED = 3  # the daemon did not come up
EXIT_SERVER_FAILED = 4  # the MCP server did not answer initialize in time (or exited)
EXIT_AGENT_TIMEOUT = 5  # the agent ran out of time (grading still ran)
EXIT_AGENT_FAILED = 6  # the agent exited non-zero or could not start (grading still ran)
EXIT_GRADING_ERROR = 7  # grading could not run to a verdict
# 128 + N: the entrypoint got signal N; forwarded to the agent, grading skipped.
#: the agent ran to an end: grading elsewhere (sidecar, pod) is due
GRADING_DUE = (EXIT_PASSED, EXIT_AGENT_TIMEOUT, EXIT_AGENT_FAILED)

STATUS_BY_EXIT = {
    EXIT_PASSED: "passed",
    EXIT_CHECKS_FAILED: "checks_failed",
    EXIT_DAEMON_FAILED: "daemon_failed",
    EXIT_SERVER_FAILED: "server_failed",
    EXIT_AGENT_TIMEOUT: "agent_timeout",
    EXIT_AGENT_FAILED: "agent_failed",
    EXIT_GRADING_ERROR: "grading_error",
}
_BROKE = {"daemon_failed": "the daemon did not come up", "server_failed": "the MCP server did not come up"}


@dataclass
class AgentRun:
    """The agent's run while it happens (the entrypoint fills it in); :meth:`facts` is the record's."""

    command: list[str]
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    duration: float = 0.0
    timeout: int = 0
    error: str | None = None

    def facts(self, calls: int = 0) -> AgentFacts:
        return AgentFacts(
            command=tuple(self.command),
            exit_code=self.exit_code,
            signal=self.signal,
            timed_out=self.timed_out,
            duration=round(self.duration, 3),
            timeout=self.timeout,
            error=self.error,
            calls=calls,
        )


def exit_status(agent: AgentFacts, grade_error: str | None, passed: bool | None) -> tuple[int, str | None]:
    """The run's exit status and error: the agent's outcome first, then grading's (the
    record keeps both messages). *passed* None: no verdict (nothing graded here)."""
    if agent.timed_out:
        message = f"the agent did not finish within {agent.timeout} s"
        return EXIT_AGENT_TIMEOUT, "; ".join(filter(None, [message, grade_error]))
    if agent.exit_code != 0:
        return EXIT_AGENT_FAILED, "; ".join(filter(None, [agent.error, grade_error])) or None
    if grade_error is not None:
        return EXIT_GRADING_ERROR, grade_error
    if passed is False:
        return EXIT_CHECKS_FAILED, None
    return EXIT_PASSED, None


def status_name(exit_code: int) -> str:
    return STATUS_BY_EXIT.get(exit_code, "interrupted" if exit_code > 128 else "error")


def first_line(text: str | None) -> str:
    """The first non-empty line of *text*, stripped ("" for none)."""
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


def check_label(check: str) -> str:
    """The spec's name of a check (``pocs`` → ``PoCs``); an unknown one as it is."""
    from ssebench.checks import Check

    try:
        return Check(check).label
    except ValueError:
        return check


def reason(
    status: str, error: str | None, agent: AgentFacts | None, grading: Grading | None, grade_error: str | None = None
) -> str | None:
    """One line a user can act on, for every outcome but passed."""
    if runrecord.outcome_of(status) is Outcome.PASSED:
        return None
    if status == "checks_failed" and grading is not None:
        failed = [check_label(c.check) for c in grading.checks if c.state == "failed"]
        return "failed: " + (", ".join(failed) or "a check")
    if status == "agent_timeout" and agent is not None:
        return f"the agent did not finish within {agent.timeout} s"
    if status == "agent_failed" and agent is not None:
        return first_line(agent.error) or f"the agent exited with status {agent.exit_code}"
    if status in _BROKE:
        return f"{_BROKE[status]}: {first_line(error)}"
    if status == "grading_error":
        said = first_line(grade_error if grade_error is not None else error)
        return said if said.startswith("grading failed") else f"grading failed: {said}"
    return first_line(error) or status


def build(
    spec: RunSpec,
    *,
    task: TaskRef,
    level: runrecord.DifficultyRef,
    mode: Literal["process", "sidecar"],
    mcp_url: str,
    stages: dict[str, Stage],
    agent: AgentFacts | None,
    grading: Grading | None,
    grade_error: str | None,
    calls: tuple[CallRecord, ...],
    exit_code: int,
    error: str | None,
    started_at: str,
    duration: float,
    dialog: bool,
) -> RunResult:
    """The record of one entrypoint run (docs/container.md lists the keys)."""
    status = status_name(exit_code)
    graded = stages.get("grading")
    return RunResult(
        spec=spec,
        outcome=runrecord.outcome_of(status),
        reason=reason(status, error, agent, grading, grade_error),
        status=status,
        exit_code=exit_code,
        passed=graded.passed if graded else None,  # None: no verdict
        error=error,
        task=task,
        difficulty=level,
        mode=mode,
        mcp_url=mcp_url,
        started_at=started_at,
        duration=round(duration, 3),
        stages=stages,
        agent=agent,
        grading=grading,
        calls=calls,
        dialog=DIALOG_FILE if dialog else None,
    )


def with_grading(
    result: RunResult,
    grading: Grading | str,
    where: Literal["sidecar", "pod"],
    *,
    task_file: str,
    task_id: str | None = None,
) -> RunResult:
    """*result* (an agent container's record, graded nowhere yet) with the verdict of
    grading done *where* merged in: a :class:`Grading`, or the one message saying why
    grading reached none. The exit status follows :func:`exit_status` again."""
    assert result.agent is not None, "grading is merged into a run whose agent ran"
    if isinstance(grading, str):
        report, grade_error, passed = None, grading, None
        stage = Stage(state="failed", detail=grading, where=where)
    else:
        report, grade_error, passed = grading, None, grading.passed
        detail = "every check passed" if grading.passed else "a check failed"
        stage = Stage(state="done", detail=detail, passed=grading.passed, where=where)
    code, error = exit_status(result.agent, grade_error, passed)
    status = status_name(code)
    task = TaskRef(id=task_id or (report.task if report else result.task.id), file=task_file, tree=result.task.tree)
    return result.model_copy(
        update={
            "stages": {**result.stages, "grading": stage},
            "grading": report,
            "passed": passed,
            "task": task,
            "exit_code": code,
            "status": status,
            "outcome": runrecord.outcome_of(status),
            "reason": reason(status, error, result.agent, report, grade_error),
            "error": error,
        }
    )


def grading_of(code: int, report: Path, tail: list[str]) -> Grading | str:
    """``ssebench grade --json``'s verdict run elsewhere (exit CODE, stdout in REPORT; TAIL:
    its stderr's last lines): the typed grading, or why there is none. REPORT is rewritten
    from the typed object, as the entrypoint writes it."""
    grading: Grading | None = None
    if code in (0, 1):
        try:
            grading = Grading.model_validate_json(report.read_bytes())
        except (OSError, ValidationError):
            grading = None
    if grading is None:
        return f"grading failed (ssebench grade exited {code})" + (":\n" + "\n".join(tail) if tail else "")
    write_grading(report.parent, grading)
    return grading


def write_grading(folder: Path, grading: Grading) -> None:
    """grading.json: the record's ``grading``, on its own (documented; whole or not at all)."""
    from ssebench.agents.files import atomic_write

    data = json.dumps(grading.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    atomic_write(folder / GRADING_FILE, data.encode("utf-8"), 0o644)


def check_folder(folder: Path) -> None:
    """The results folder exists (made if need be), is writable and holds no earlier run."""
    from ssebench.container.settings import SettingsError

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(f"SSE_RESULTS_DIR: cannot create '{folder}': {exc.strerror}") from None
    if not folder.is_dir():
        raise SettingsError(f"SSE_RESULTS_DIR: '{folder}' is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SettingsError(f"SSE_RESULTS_DIR: '{folder}' is not writable")
    for name in (RESULTS_FILE, DIALOG_FILE):
        if os.path.lexists(folder / name):
            raise SettingsError(f"SSE_RESULTS_DIR: {folder} already holds {name}; use an empty folder for each run")
