"""The runs list's sorting, filters and its tally of outcomes (pure, no I/O).

Everything is done from the query string, server-side, so the list sorts and filters
with JavaScript off: a column header is a link, the filters a GET form. Pass rates are
not computed here: they are a job's (its report, ssebench/jobs/report.py, on the job page),
never pooled across jobs; the list only counts its own rows by outcome, each count a link
to the same filter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from ssebench.runrecord import Outcome
from ssebench.view.runs import NO_RECORD, PENDING, RUNNING, UNREADABLE, RunRow

#: column key → (heading, sort key)
COLUMNS: dict[str, tuple[str, Callable[[RunRow], Any]]] = {
    "job": ("Job", lambda r: r.job_id or ""),
    "task": ("Task", lambda r: r.task or ""),
    "agent": ("Agent", lambda r: r.agent or ""),
    "model": ("Model", lambda r: r.model or ""),
    "level": ("Level", lambda r: r.level),
    "outcome": ("Outcome", lambda r: r.outcome),
    "duration": ("Duration", lambda r: r.duration),
    "calls": ("test_patch calls", lambda r: len(r.calls) if r.has_record else None),
    "exit": ("Agent exit", lambda r: r.agent_exit),
    "started": ("Started", lambda r: r.started or ""),
    "folder": ("Folder", lambda r: (r.root, r.rel)),
}
#: the columns the filter form offers (a value must match exactly)
FILTERS = ("job", "task", "agent", "model", "level", "outcome", "reason", "calls", "exit")
#: filters that are no column (their value's key)
EXTRA: dict[str, tuple[str, Callable[[RunRow], Any]]] = {"reason": ("Reason", lambda r: r.reason)}
#: each filter's label in the form
LABELS = {c: (COLUMNS.get(c) or EXTRA[c])[0] for c in FILTERS}
#: the order outcomes are counted in (the record's, then the states of runs without one)
OUTCOME_ORDER = (*(o.value for o in Outcome), PENDING, RUNNING, NO_RECORD, UNREADABLE)


def value(run: RunRow, column: str) -> str:
    """A run's value in COLUMN as the filter form shows it."""
    raw = (COLUMNS.get(column) or EXTRA[column])[1](run)
    return "" if raw is None else str(raw)


def choices(runs: list[RunRow]) -> dict[str, list[str]]:
    """The distinct values of each filterable column, for the form's selects."""
    return {c: sorted({value(r, c) for r in runs} - {""}, key=_natural) for c in FILTERS}


def _natural(text: str) -> tuple[int, int | str]:
    return (0, int(text)) if text.lstrip("-").isdigit() else (1, text)


def select(runs: list[RunRow], query: Mapping[str, str]) -> list[RunRow]:
    """RUNS filtered by the query's column values, sorted by ``sort`` (``order=desc``)."""
    wanted = {c: query[c] for c in FILTERS if query.get(c)}
    shown = [r for r in runs if all(value(r, c) == v for c, v in wanted.items())]
    column = query.get("sort") or "folder"
    column = column if column in COLUMNS else "folder"
    key = COLUMNS[column][1]
    present = [r for r in shown if key(r) is not None]
    missing = [r for r in shown if key(r) is None]  # runs without the value: last either way
    present.sort(key=key, reverse=query.get("order") == "desc")
    return present + missing


def outcomes(runs: list[RunRow]) -> list[tuple[str, int]]:
    """How many of RUNS ended each way (and how many have no record yet), in a fixed order."""
    counts = Counter(r.outcome for r in runs)
    return [(o, counts[o]) for o in OUTCOME_ORDER if counts[o]]
