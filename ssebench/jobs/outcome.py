"""How a run ended: its record (ssebench/runrecord.py), the child's or one written here.

Every run that ended has a record in its folder, so ``jobs report``, ``jobs resume`` and
``ssebench view`` read one thing. ``ssebench run`` (or the entrypoint in a container or
Pod) writes it; where it could not — killed, refused (exit 2), never started, stopped by
the scheduler, lost with its Pod — the backend writes one here through
:func:`ssebench.runrecord.write`, with the spec from the job, the status naming the cause
and a one-line reason. Shared by every backend so a run is recorded the same wherever it
ran. docs/jobs.md, "Outcomes", has the statuses.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from ssebench import runrecord
from ssebench.difficulty import LEVELS
from ssebench.jobs.backend import JobRun
from ssebench.runrecord import DifficultyRef, Outcome, RecordError, RunResult, TaskRef

KILLED = "killed"  # the run's process died of a signal it did not handle
NO_RESULTS = "no_results"  # the run ended without writing a (readable) record
CANCELLED = "cancelled"  # Ctrl-C or SIGTERM: the scheduler stopped the run
RUN_TIMEOUT = "run_timeout"  # [timeouts] run: the whole run took too long
START_FAILED = "start_failed"  # the run could not be started at all (no engine, no ssebench)
USAGE = "usage_error"  # ssebench run refused to start (exit 2): a setting, the task, the agent
BACKEND_ERROR = "backend_error"  # the backend itself raised
#: where a record the child wrote but this ssebench cannot read is kept
REJECTED = "results.rejected.json"
#: outcomes that are no verdict on the agent's fix (``jobs run`` exits 1 when a run ends so)
NO_VERDICT = (Outcome.INFRASTRUCTURE, Outcome.USAGE, Outcome.CANCELLED)


@dataclass(frozen=True)
class Ending:
    """How a run ended, as ``ssebench jobs`` counts it (kept for every run of a job: its
    record, a few KiB each, is read again where more is needed)."""

    outcome: Outcome
    status: str
    reason: str | None = None

    @classmethod
    def of(cls, record: RunResult) -> Ending:
        return cls(record.outcome, record.status, record.reason)


@dataclass(frozen=True)
class Clock:
    """When a try started: the record's ``started_at`` and its duration."""

    at: str = field(default_factory=runrecord.now)
    began: float = field(default_factory=time.monotonic)

    def seconds(self) -> float:
        return round(time.monotonic() - self.began, 3)


def written(
    run: JobRun, status: str, reason: str, clock: Clock, exit_code: int | None = None, error: str | None = None
) -> RunResult:
    """A record for a run whose child left none, written into its folder."""
    level = run.spec.level
    result = RunResult(
        spec=run.spec,
        outcome=runrecord.outcome_of(status),
        reason=reason,
        status=status,
        exit_code=exit_code,
        error=error,
        task=TaskRef(id=run.spec.task_id, file=run.spec.task_file),
        difficulty=DifficultyRef(level=level, name=LEVELS[level].name),
        started_at=clock.at,
        duration=clock.seconds(),
    )
    runrecord.write(run.folder, result)
    return result


def stopped_reason(run: JobRun, why: str) -> str:
    """The reason of a run the backend stopped: ``cancelled``, ``run_timeout`` (or its own error)."""
    if why == RUN_TIMEOUT:
        limit = run.spec.run_timeout
        what = f"[timeouts] run of {limit:g} s" if limit else "time limit"
        return f"the run took longer than its {what}; it was stopped"
    if why == CANCELLED:
        return "stopped by ssebench jobs (Ctrl-C or SIGTERM); jobs resume runs it again"
    return "the backend failed while the run was in flight; the run was stopped"


def child_record(run: JobRun) -> tuple[RunResult | None, str | None]:
    """The record the run's child wrote (None: none), and why one it wrote cannot be read;
    such a file is kept as results.rejected.json beside the record written for it."""
    try:
        return runrecord.read_if_any(run.folder), None
    except RecordError as error:
        os.replace(runrecord.path_in(run.folder), run.folder / REJECTED)
        return None, f"{error} (kept as {REJECTED})"


def settle(
    run: JobRun, exit_code: int | None, clock: Clock, stopped: str | None = None, log: Path | None = None
) -> RunResult:
    """The record of a run whose child exited with *exit_code* (negative: a signal);
    *stopped*: why the backend stopped it (``cancelled``, ``run_timeout``), if it did;
    *log*: the child's stderr, whose last lines explain a refusal."""
    child, unreadable = child_record(run)
    if stopped is not None:
        return restated(run, child, stopped, stopped_reason(run, stopped), clock, exit_code)
    if child is not None:
        return child
    lines = _tail(log)
    if unreadable is not None:
        return written(run, NO_RESULTS, unreadable, clock, exit_code)
    if exit_code is not None and exit_code < 0:
        return written(run, KILLED, f"ssebench run died of {_signal_name(-exit_code)}", clock, None, lines)
    if exit_code == 2:
        return written(run, USAGE, f"ssebench run refused to start: {refusal(lines)}", clock, exit_code, lines)
    reason = f"ssebench run exited {exit_code} without writing results.json"
    return written(run, NO_RESULTS, reason, clock, exit_code, lines)


def refusal(lines: str | None) -> str:
    """``ssebench run``'s refusal in one line: its last ``ssebench run: ...`` message with the
    ``  - ...`` items under it (a preflight lists every problem so), else its last line."""
    if not lines:
        return "no message (see ssebench-run.log)"
    rows = lines.splitlines()
    starts = [i for i, row in enumerate(rows) if row.startswith("ssebench run: ")]
    if not starts:
        return rows[-1].strip()
    head = rows[starts[-1]].removeprefix("ssebench run: ").strip()
    items = []
    for row in rows[starts[-1] + 1 :]:
        if not row.startswith("  - "):
            break
        items.append(row.removeprefix("  - ").strip())
    return f"{head} {'; '.join(items)}" if items else head


def restated(
    run: JobRun, child: RunResult | None, status: str, reason: str, clock: Clock, exit_code: int | None = None
) -> RunResult:
    """The run's record with the cause the backend knows better than its child (the
    scheduler stopped it, its Pod was lost): the child's facts kept, the status its own."""
    if child is None:
        return written(run, status, reason, clock, exit_code)
    result = child.model_copy(update={"status": status, "outcome": runrecord.outcome_of(status), "reason": reason})
    runrecord.write(run.folder, result)
    return result


def _tail(log: Path | None) -> str | None:
    if log is None:
        return None
    from ssebench.supervise import tail_lines

    return "\n".join(line for line in tail_lines(log, 20) if line.strip()) or None


def _signal_name(number: int) -> str:
    try:
        return f"signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal {number}"
