"""``ssebench jobs report``: a job's numbers per agent × level and per task, or two jobs compared.

Read from the job folder only: job.json (with its journal) for the matrix and each run's
place in the schedule, and each run's record (results.json, read through
ssebench/runrecord.py) for how it ended: its outcome, verdict, duration and test_patch
calls. docs/jobs.md says what each number means; :mod:`ssebench.jobs.stats` computes them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench import runrecord
from ssebench.jobs import reportfmt
from ssebench.jobs.state import read
from ssebench.jobs.stats import pass_at_k, quantile, wilson
from ssebench.runrecord import Outcome, RunResult

#: how a test_patch call ended (runrecord.CallRecord.outcome), in the report's order
CALL_ENDINGS = ("passed", "failed", "no_checks", "internal_failure", "cancelled", "error")
AGENT_OUTCOMES = (Outcome.AGENT_ERROR, Outcome.AGENT_TIMEOUT, Outcome.BUDGET)


@dataclass(frozen=True)
class ReportRun:
    """One run as the report sees it: its row of job.json and its record (None: not ended)."""

    run_id: str
    task: str
    agent: str
    level: int
    attempt: int
    record: RunResult | None

    @property
    def outcome(self) -> Outcome | None:
        return self.record.outcome if self.record is not None else None

    @property
    def passed(self) -> bool | None:
        """The grading verdict (None: no verdict)."""
        return self.record.passed if self.record is not None else None

    @property
    def duration(self) -> float | None:
        return self.record.duration if self.record is not None else None

    def calls(self) -> dict[str, int]:
        """How its test_patch calls ended, counted by ending."""
        counts: dict[str, int] = {}
        for call in self.record.calls if self.record is not None else ():
            counts[call.outcome] = counts.get(call.outcome, 0) + 1
        return counts


@dataclass(frozen=True)
class JobData:
    job_id: str
    folder: Path
    attempts: int
    runs: tuple[ReportRun, ...]


def load(folder: Path) -> JobData:
    """The job in FOLDER; StateError for a bad job.json, RecordError for a record this
    ssebench cannot read (one line naming it)."""
    document = read(folder)
    runs = []
    for row in document["runs"]:
        record = runrecord.read_if_any(folder / row["folder"]) if row["state"] != "pending" else None
        task = row.get("task_id") or Path(row["task"]).parent.name
        runs.append(ReportRun(row["run_id"], task, row["agent"], int(row["level"]), int(row["attempt"]), record))
    attempts = max((r.attempt for r in runs), default=1)
    return JobData(str(document["job_id"]), folder, attempts, tuple(runs))


def cell(runs: list[ReportRun], k: int) -> dict[str, Any]:
    """The numbers of a group of runs (an agent × level cell, or a task)."""
    verdicts = [r for r in runs if r.passed is not None]
    passed = sum(1 for r in verdicts if r.passed)
    low, high = wilson(passed, len(verdicts))
    durations = sorted(r.duration for r in runs if r.duration is not None)
    per_task: dict[tuple[str, str, int], list[bool]] = {}  # pass@k: over the attempts of one task × agent × level
    for r in verdicts:
        per_task.setdefault((r.task, r.agent, r.level), []).append(bool(r.passed))
    ks = [pass_at_k(len(v), sum(v), k) for v in per_task.values() if len(v) >= k]
    ended = [r for r in runs if r.record is not None]
    counted = [r.calls() for r in ended]
    call_counts = {e: sum(c.get(e, 0) for c in counted) for e in CALL_ENDINGS}
    total_calls = sum(call_counts.values())
    return {
        "runs": len(runs),
        "graded": len(verdicts),
        "passed": passed,
        "pass_rate": passed / len(verdicts) if verdicts else None,
        "pass_rate_ci95": [low, high] if verdicts else None,
        "k": k,
        "pass_at_k": sum(ks) / len(ks) if ks else None,
        "duration_median": quantile(durations, 0.5),
        "duration_p90": quantile(durations, 0.9),
        "test_patch_calls": total_calls,
        "test_patch_calls_per_run": total_calls / len(ended) if ended else None,
        "test_patch_endings": call_counts,
        "never_called": sum(1 for r in ended if r.record is not None and r.record.never_called),
        "agent_failures": sum(1 for r in runs if r.outcome in AGENT_OUTCOMES),
        "infra_failures": sum(1 for r in runs if r.outcome is Outcome.INFRASTRUCTURE),
        "usage_failures": sum(1 for r in runs if r.outcome is Outcome.USAGE),
        "not_run": sum(1 for r in runs if r.outcome in (None, Outcome.CANCELLED)),
    }


def summarize(job: JobData) -> dict[str, Any]:
    """The whole report of one job (what ``--json`` prints)."""
    cells: dict[tuple[str, int], list[ReportRun]] = {}
    for r in job.runs:
        cells.setdefault((r.agent, r.level), []).append(r)
    tasks: dict[str, list[ReportRun]] = {}
    for r in job.runs:
        tasks.setdefault(r.task, []).append(r)
    return {
        "job_id": job.job_id,
        "folder": str(job.folder),
        "runs": len(job.runs),
        "cells": [{"agent": a, "level": lvl, **cell(rs, job.attempts)} for (a, lvl), rs in cells.items()],
        "tasks": [{"task": t, **cell(rs, job.attempts)} for t, rs in tasks.items()],
    }


def compare(first: dict[str, Any], second: dict[str, Any]) -> list[dict[str, Any]]:
    """Per agent × level in either job: both pass rates and the change."""
    a = {(c["agent"], c["level"]): c for c in first["cells"]}
    b = {(c["agent"], c["level"]): c for c in second["cells"]}
    rows = []
    for key in list(dict.fromkeys([*a, *b])):
        ra, rb = (a.get(key) or {}).get("pass_rate"), (b.get(key) or {}).get("pass_rate")
        delta = rb - ra if ra is not None and rb is not None else None
        rows.append({"agent": key[0], "level": key[1], "pass_rate_a": ra, "pass_rate_b": rb, "delta": delta})
    return rows


def render(jobs: list[JobData], fmt: str) -> str:
    summaries = [summarize(j) for j in jobs]
    document: dict[str, Any] = summaries[0] if len(summaries) == 1 else {"jobs": summaries}
    if len(summaries) == 2:
        document["comparison"] = compare(summaries[0], summaries[1])
    if fmt == "json":
        return json.dumps(document, indent=2) + "\n"
    if fmt == "csv":
        return _csv(summaries)
    return reportfmt.markdown(document) if fmt == "markdown" else reportfmt.text(document)


def _csv(summaries: Iterable[dict[str, Any]]) -> str:
    """One row per job × agent × level cell; the call endings as columns."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(reportfmt.CSV_COLUMNS)
    for summary in summaries:
        for c in summary["cells"]:
            writer.writerow(reportfmt.csv_row(summary["job_id"], c))
    return out.getvalue()
