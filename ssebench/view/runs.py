"""One run folder read for the list: its record (ssebench/runrecord.py), its job row, its dialog's head.

How a run ended is its record's word and nothing else's: a run with a record shows the
record's outcome and reason, whatever the files' times say; a run is ``running`` only when
its job says so and it has no record yet. A record that cannot be read (half-written by
hand, another ssebench's) is shown with the RecordError's one line, never a crash. Nothing
here runs anything from the folder: it only opens files, without following a symlink out.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ssebench import runrecord
from ssebench.runrecord import CallRecord, RecordError, RunResult
from ssebench.view.files import open_nofollow

if TYPE_CHECKING:
    from ssebench.view.jobs import JobFolder

RESULTS = runrecord.RESULTS_FILE
DIALOG = "dialog.jsonl"
#: the files whose size and mtime decide whether a run is read again
WATCHED = (RESULTS, DIALOG)
#: what the list shows for a run without a readable record
PENDING, RUNNING, NO_RECORD, UNREADABLE = "pending", "running", "no record", "unreadable"


@dataclass
class RunRow:
    """What the list and the run page show of one run (JSON-able for the index)."""

    root: int
    rel: str
    job: str | None = None  # the job's folder (relative to the root; "" the root itself), if in one
    job_id: str | None = None
    run_id: str | None = None  # the job's name of the run
    attempt: int | None = None
    task: str | None = None
    agent: str | None = None
    model: str | None = None
    level: int | None = None
    outcome: str = NO_RECORD  # the record's outcome, else pending, running, no record, unreadable
    status: str | None = None  # the record's precise cause
    reason: str | None = None  # the record's one line (every outcome but passed has one)
    passed: bool | None = None
    exit_code: int | None = None
    agent_exit: int | None = None
    never_called: bool = False  # the agent ran and never called test_patch
    duration: float | None = None
    started: str | None = None
    checks: list[tuple[str, str]] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    live: bool = False  # no record yet and the dialog has not ended: the page follows it
    problems: list[str] = field(default_factory=list)

    @property
    def has_record(self) -> bool:
        return self.outcome not in (PENDING, RUNNING, NO_RECORD, UNREADABLE)

    def as_json(self) -> dict[str, Any]:
        data = {k: v for k, v in vars(self).items() if k != "calls"}
        return {**data, "calls": [c.model_dump(mode="json") for c in self.calls]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRow:
        calls = [CallRecord.model_validate(c) for c in data.pop("calls", [])]
        checks = [(str(a), str(b)) for a, b in data.pop("checks", [])]
        return cls(**data, calls=calls, checks=checks)


def read_record(folder: Path, problems: list[str]) -> RunResult | None:
    """The run's record, or None: none yet, or one that cannot be read (its line in PROBLEMS)."""
    try:
        return runrecord.read_if_any(folder)
    except RecordError as error:
        problems.append(str(error))
        return None


def read_run(
    folder: Path, root: int, rel: str, job_row: dict[str, Any] | None = None, job: JobFolder | None = None
) -> RunRow:
    """Everything the list needs from FOLDER (which may not exist yet: a pending run); never raises."""
    run = RunRow(root=root, rel=rel)
    if job is not None:
        run.job, run.job_id = job.rel, job.job_id
    scheduled = _from_job(run, job_row or {})
    unreadable = len(run.problems)
    record = read_record(folder, run.problems)
    _from_dialog_head(run, folder / DIALOG)
    if record is not None:
        _from_record(run, record)
        return run
    if len(run.problems) > unreadable:
        run.outcome = UNREADABLE
        return run
    run.outcome = scheduled if scheduled in (PENDING, RUNNING) else NO_RECORD
    run.live = run.outcome != PENDING and not _dialog_complete(folder / DIALOG)
    if scheduled == "ended":
        run.problems.append(f"{RESULTS}: missing, although job.json says the run ended")
    elif scheduled is None and not run.live:
        run.problems.append(f"{RESULTS}: missing (the run did not finish, or was stopped)")
    return run


def _from_job(run: RunRow, row: dict[str, Any]) -> str | None:
    """The job row's facts; its scheduling state (pending, running, ended), if any."""
    run.task = _str(row.get("task_id")) or _str(row.get("task"))
    run.run_id, run.attempt = _str(row.get("run_id")), _int(row.get("attempt"))
    run.agent = _str(row.get("agent"))
    run.level = _int(row.get("level"))
    run.started = _str(row.get("started"))
    return _str(row.get("state"))


def _from_record(run: RunRow, record: RunResult) -> None:
    run.task = record.task.id or record.spec.task_id or run.task
    run.level = record.difficulty.level if record.difficulty else record.spec.level
    run.outcome = record.outcome.value
    run.status, run.reason, run.passed = record.status, record.reason, record.passed
    run.exit_code, run.duration = record.exit_code, record.duration
    run.started = record.started_at or run.started
    run.calls = list(record.calls)
    run.never_called = record.never_called
    if record.agent is not None:
        run.agent_exit = record.agent.exit_code
        if not run.agent and record.agent.command:
            run.agent = os.path.basename(record.agent.command[0])
    run.agent = run.agent or record.spec.agent
    run.model = run.model or record.spec.model
    run.run_id, run.attempt = run.run_id or record.spec.run_id, run.attempt or record.spec.attempt
    run.job_id = run.job_id or record.spec.job_id
    run.checks = [(c.check, c.state) for c in record.grading.checks] if record.grading else []


def _from_dialog_head(run: RunRow, path: Path) -> None:
    """Agent and model from the dialog's first line (``init``), read alone."""
    try:
        with open_nofollow(path) as stream:
            head = stream.readline(64 << 10)
    except OSError:
        return
    event = _loads(head)
    if event is not None and event.get("type") == "init":
        run.agent = _str(event.get("agent")) or run.agent
        run.model = _str(event.get("model"))


def _dialog_complete(path: Path) -> bool:
    """Whether the dialog's last line is ``complete`` (read from the end, not whole)."""
    try:
        with open_nofollow(path) as stream:
            size = stream.seek(0, os.SEEK_END)
            stream.seek(max(0, size - (64 << 10)))
            tail = stream.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    except OSError:
        return False
    event = _loads(tail)
    return bool(event and event.get("type") == "complete")


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
