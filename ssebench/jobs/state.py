"""job.json: the expanded matrix and each run's scheduling state, written by one writer, atomically.

A run's row says where it is in the schedule (``pending``, ``running``, ``ended``), its
tries and times; how it ended is its record (``runs/<id>/results.json``, ssebench/runrecord.py),
never copied here, so nothing can disagree with it.

Rewriting a 10,000-run job.json at every start and end would cost O(runs²); so each
change is first appended as one line to ``journal.jsonl`` (the whole run record: replay is
"last line wins", a torn last line from a kill -9 is skipped), and job.json itself is
rewritten atomically (temp file + rename) at most every :data:`FLUSH_SECONDS` (longer for a
big one: at most ~5 % of the time goes to rewriting it) and at the end. Whoever reads the
folder (``jobs resume``, ``jobs report``) loads job.json and replays the journal, so a
killed ``ssebench jobs`` loses at most the runs in flight.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ssebench.agents import files

JOB_FILE = "job.json"
JOURNAL_FILE = "journal.jsonl"
RUNS_DIR = "runs"
TRIES_DIR = "tries"  # earlier tries of a retried run, kept for the post-mortem
FLUSH_SECONDS = 1.0
STATES = ("pending", "running", "ended")


class StateError(ValueError):
    """job.json is missing or unreadable: one line."""


def atomic_write(path: Path, data: dict[str, Any]) -> None:
    """job.json whole or as it was, never half-written (agents/files.py's atomic write)."""
    files.atomic_write(path, (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode(), 0o644)


def new_run(run_id: str, task: str, task_id: str, agent: str, level: int, attempt: int) -> dict[str, Any]:
    """The record of a run that has not started (job.json ``runs[]``)."""
    return {
        "run_id": run_id,
        "folder": f"{RUNS_DIR}/{run_id}",
        "task": task,
        "task_id": task_id,
        "agent": agent,
        "level": level,
        "attempt": attempt,
        "state": "pending",
        "started": None,
        "ended": None,
        "duration": None,
        "tries": 0,
    }


class JobState:
    """The one writer of a job folder's job.json and journal (the scheduler's thread calls it)."""

    def __init__(self, folder: Path, header: dict[str, Any], runs: list[dict[str, Any]]) -> None:
        self.folder = folder
        self.header = header
        self.runs: dict[str, dict[str, Any]] = {r["run_id"]: r for r in runs}
        self._lock = threading.Lock()
        self._dirty = True
        self._flushed = 0.0
        self._interval = FLUSH_SECONDS
        self._journal = open(folder / JOURNAL_FILE, "a", encoding="utf-8")

    @property
    def job_id(self) -> str:
        return str(self.header["job_id"])

    def update(self, run_id: str, **changes: Any) -> dict[str, Any]:
        """Change a run's record: one journal line now, job.json at the next flush."""
        with self._lock:
            record = self.runs[run_id]
            record.update(changes)
            self._journal.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._journal.flush()
            self._dirty = True
            return dict(record)

    def flush(self, force: bool = False) -> None:
        """Rewrite job.json when something changed (at most every FLUSH_SECONDS unless forced)."""
        with self._lock:
            if not self._dirty or (not force and time.monotonic() - self._flushed < self._interval):
                return
            began = time.monotonic()
            atomic_write(self.folder / JOB_FILE, self.document())
            self._dirty, self._flushed = False, time.monotonic()
            # A big job.json is rewritten less often: at most ~5 % of the time goes to it.
            self._interval = max(FLUSH_SECONDS, 20 * (self._flushed - began))

    def document(self) -> dict[str, Any]:
        return {**self.header, "runs": list(self.runs.values())}

    def close(self) -> None:
        self.flush(force=True)
        self._journal.close()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.runs.values())


def read(folder: Path) -> dict[str, Any]:
    """job.json with the journal replayed over it: the latest state of every run."""
    path = folder / JOB_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StateError(f"{folder}: no {JOB_FILE} here (not a job folder)") from None
    except (OSError, json.JSONDecodeError) as error:
        raise StateError(f"{path}: unreadable ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("runs"), list):
        raise StateError(f"{path}: not a job.json (no runs list)")
    runs = {r["run_id"]: r for r in document["runs"]}
    for record in _journal(folder / JOURNAL_FILE):
        if record.get("run_id") in runs:
            runs[record["run_id"]] = record
    document["runs"] = list(runs.values())
    return document


def _journal(path: Path) -> Iterator[dict[str, Any]]:
    try:
        stream = open(path, encoding="utf-8")
    except FileNotFoundError:
        return
    with stream:
        for line in stream:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # the torn last line of a killed writer
            if isinstance(record, dict):
                yield record


def compact(folder: Path, document: dict[str, Any]) -> None:
    """job.json holds everything the journal said; the journal starts empty again."""
    atomic_write(folder / JOB_FILE, document)
    (folder / JOURNAL_FILE).write_text("", encoding="utf-8")
