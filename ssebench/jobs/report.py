"""``ssebench jobs report``: a job's numbers per agent × level and per task, or two jobs compared.

Read from the job folder only: job.json (with its journal) for the matrix and each run's
state, each run's results.json for its verdict and duration, and its server.log (the
server's call log: one line per test_patch call) for the calls. docs/jobs.md says what
each number means; :mod:`ssebench.jobs.stats` computes them.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.jobs import reportfmt
from ssebench.jobs.outcome import read_results
from ssebench.jobs.state import read
from ssebench.jobs.stats import pass_at_k, quantile, wilson

# "test_patch call 3 (level 2): FAILED [build: FAILED] in 1.8 s" / ": cancelled after 2.0 s"
_CALL = re.compile(r"test_patch call \d+ \(level \d\): (?P<how>.*?) (?:in|after) [\d.]+ s$")
CALL_ENDINGS = ("passed", "failed", "no_checks", "internal_failure", "cancelled", "error")


@dataclass(frozen=True)
class Run:
    """One run as the report sees it."""

    run_id: str
    task: str
    agent: str
    level: int
    attempt: int
    state: str
    status: str | None
    passed: bool | None  # the grading verdict (None: no verdict)
    duration: float | None
    calls: dict[str, int]


@dataclass(frozen=True)
class JobData:
    job_id: str
    folder: Path
    attempts: int
    runs: tuple[Run, ...]


def call_ending(how: str) -> str:
    """The call log's summary of one call, as one of :data:`CALL_ENDINGS`."""
    if how.startswith("every check"):
        return "passed"
    if how.startswith("FAILED"):
        return "failed"
    if how.startswith("no checks ran"):
        return "no_checks"
    if how.startswith("internal failure"):
        return "internal_failure"
    return "cancelled" if how == "cancelled" else "error"


def calls(folder: Path) -> dict[str, int]:
    """How the run's test_patch calls ended, counted from its server.log (streamed)."""
    counts: dict[str, int] = {}
    try:
        stream = open(folder / "server.log", encoding="utf-8", errors="replace")
    except OSError:
        return counts
    with stream:
        for line in stream:
            match = _CALL.search(line.rstrip("\n"))
            if match:
                ending = call_ending(match["how"])
                counts[ending] = counts.get(ending, 0) + 1
    return counts


def load(folder: Path) -> JobData:
    document = read(folder)
    runs = []
    for record in document["runs"]:
        run_folder = folder / record["folder"]
        results = read_results(run_folder) if record["state"] in ("graded", "agent") else None
        passed = results.get("passed") if results else None
        duration = results.get("duration") if results else record.get("duration")
        runs.append(
            Run(
                record["run_id"],
                record.get("task_id") or Path(record["task"]).parent.name,
                record["agent"],
                int(record["level"]),
                int(record["attempt"]),
                record["state"],
                record.get("status"),
                passed if isinstance(passed, bool) else None,
                float(duration) if isinstance(duration, int | float) else None,
                calls(run_folder) if record["state"] != "pending" else {},
            )
        )
    attempts = max((r.attempt for r in runs), default=1)
    return JobData(str(document["job_id"]), folder, attempts, tuple(runs))


def cell(runs: list[Run], k: int) -> dict[str, Any]:
    """The numbers of a group of runs (an agent × level cell, or a task)."""
    verdicts = [r for r in runs if r.passed is not None]
    passed = sum(1 for r in verdicts if r.passed)
    low, high = wilson(passed, len(verdicts))
    durations = sorted(r.duration for r in runs if r.duration is not None and r.state != "pending")
    per_task: dict[tuple[str, str, int], list[bool]] = {}  # pass@k: over the attempts of one task × agent × level
    for r in verdicts:
        per_task.setdefault((r.task, r.agent, r.level), []).append(bool(r.passed))
    ks = [pass_at_k(len(v), sum(v), k) for v in per_task.values() if len(v) >= k]
    ended = [r for r in runs if r.state != "pending"]
    call_counts = {e: sum(r.calls.get(e, 0) for r in ended) for e in CALL_ENDINGS}
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
        "agent_failures": sum(1 for r in runs if r.state == "agent"),
        "infra_failures": sum(1 for r in runs if r.state == "infra"),
        "not_run": sum(1 for r in runs if r.state in ("pending", "running")),
    }


def summarize(job: JobData) -> dict[str, Any]:
    """The whole report of one job (what ``--json`` prints)."""
    cells: dict[tuple[str, int], list[Run]] = {}
    for r in job.runs:
        cells.setdefault((r.agent, r.level), []).append(r)
    tasks: dict[str, list[Run]] = {}
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
