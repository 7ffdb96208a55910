"""The job page's numbers: ``ssebench jobs report``'s typed report, rendered, never recomputed.

Every figure on the page is a field of :class:`ssebench.jobs.reportmodel.JobReport` (the one
place pass rates and pass@k are computed), and every one links to the runs behind it: a
*pick* names a part of the report (the totals, a cell, a group, a task) and which of its
numbers (its runs, the passed ones, a failure bucket...), and :func:`pick` answers with
that number's run ids, taken from the report itself. So the runs a link lists are exactly
the runs the number counts.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ssebench.jobs.reportmodel import GroupNumbers, JobComparison, JobReport
from ssebench.runrecord import RecordError

#: what a pick may ask for, and its words on the page
OF = {
    "runs": "runs",
    "passed": "passed",
    "not_run": "not run yet",
    "never_called": "never called test_patch",
    "outcome": "ended",
    "failure": "did not pass",
}


def load_report(folder: Path) -> JobReport | str:
    """The report of the job in FOLDER, or the one line saying why there is none."""
    from ssebench.jobs.report import load, summarize
    from ssebench.jobs.state import StateError

    try:
        return summarize(load(folder))
    except (StateError, RecordError) as exc:
        return f"the job's report cannot be made: {exc}"


class ReportCache:
    """One report per job and version of the folder (the index's generation): a page polled
    every 2 s while nothing changed costs no re-reading of the job's records."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[Path, tuple[Any, JobReport | str]] = {}

    def get(self, folder: Path, version: Any) -> JobReport | str:
        with self._lock:
            known = self._known.get(folder)
            if known is not None and known[0] == version:
                return known[1]
        report = load_report(folder)
        with self._lock:
            self._known[folder] = (version, report)
        return report


def scope_of(report: JobReport, query: Mapping[str, str]) -> GroupNumbers | None:
    """The part of REPORT the query's keys name: a group (task, agent, level), a cell (agent,
    level), a task (task), else the totals; ``model`` must match too when given."""
    task, agent, level = query.get("task"), query.get("agent"), query.get("level")
    model = query.get("model") or None
    if agent is not None and level is not None:
        parts: Any = report.groups if task is not None else report.cells
        for part in parts:
            if (part.agent, str(part.level), part.model) == (agent, level, model) and (
                task is None or part.task == task
            ):
                return part
        return None
    if task is not None:
        return next((t for t in report.tasks if t.task == task), None)
    return report.totals


def pick(report: JobReport, query: Mapping[str, str]) -> tuple[str, tuple[str, ...]] | None:
    """(what the runs are, their run ids) for the number QUERY names, or None if it names none."""
    numbers = scope_of(report, query)
    of = query.get("of", "runs")
    if numbers is None or of not in OF:
        return None
    words = OF[of]
    if of == "runs":
        return words, numbers.run_ids
    if of == "passed":
        return words, numbers.passed_run_ids
    if of == "not_run":
        return words, numbers.not_run_run_ids
    if of == "never_called":
        return words, numbers.never_called_run_ids
    outcome = query.get("outcome", "")
    if of == "outcome":
        wanted = set(numbers.run_ids)
        ended = (e for e in report.run_index if e.run_id in wanted and e.outcome is not None)
        ids = tuple(e.run_id for e in ended if e.outcome is not None and e.outcome.value == outcome)
        return f"{words} {outcome}", ids
    reason = query.get("reason", "")
    for bucket in numbers.failures:
        if bucket.outcome.value == outcome and bucket.reason == reason:
            return f"{outcome}: {reason}", bucket.run_ids
    return None


def keys(part: Any) -> dict[str, str]:
    """The query keys naming PART of a report (a group, cell, task or the totals)."""
    found = {name: getattr(part, name) for name in ("task", "agent", "model", "level") if hasattr(part, name)}
    return {k: str(v) for k, v in found.items() if v is not None}


def runs_url(base: str, part: Any, of: str = "runs", **extra: str) -> str:
    """The link to the runs behind one number: BASE (``/job-runs/N/REL``) and the pick."""
    return f"{base}?{urlencode({**keys(part), 'of': of, **extra})}"


def heat(rate: float | None) -> str:
    """The CSS class colouring a cell by its pass rate (tenths), or ``heat-none``."""
    return "heat-none" if rate is None else f"heat-{round(rate * 10)}"


def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def matrix(report: JobReport) -> dict[str, Any]:
    """Tasks × (agent, model, level) columns, each cell the group (or None) and the margins."""
    columns = [(c.agent, c.model, c.level) for c in report.cells]
    groups = {(g.task, g.agent, g.model, g.level): g for g in report.groups}
    rows = [(t, [groups.get((t.task, *col)) for col in columns]) for t in report.tasks]
    return {"columns": report.cells, "rows": rows}


def compare_rows(comparison: JobComparison) -> list[dict[str, Any]]:
    """The comparison's rows with the cell of each job they come from (for the links)."""
    first, second = comparison.jobs
    cells_a = {(c.agent, c.model, c.level): c for c in first.cells}
    cells_b = {(c.agent, c.model, c.level): c for c in second.cells}
    return [
        {
            "row": row,
            "a": cells_a.get((row.agent, row.model, row.level)),
            "b": cells_b.get((row.agent, row.model, row.level)),
        }
        for row in comparison.comparison
    ]
