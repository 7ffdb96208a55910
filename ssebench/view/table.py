"""The runs list's sorting, filters and the summary by agent × level (pure, no I/O).

Everything is done from the query string, server-side, so the list sorts and filters
with JavaScript off: a column header is a link, the filters a GET form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ssebench.view.runs import RunRow

#: column key → (heading, sort key)
COLUMNS: dict[str, tuple[str, Callable[[RunRow], Any]]] = {
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
FILTERS = ("task", "agent", "model", "level", "outcome", "calls", "exit")


def value(run: RunRow, column: str) -> str:
    """A run's value in COLUMN as the filter form shows it."""
    raw = COLUMNS[column][1](run)
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


@dataclass
class Cell:
    passed: int = 0
    total: int = 0

    @property
    def rate(self) -> str:
        return f"{100 * self.passed / self.total:.0f}%" if self.total else "—"


def summary(runs: list[RunRow]) -> tuple[list[str], list[str], dict[tuple[str, str], Cell]]:
    """Agents, levels and the pass count of each (agent, level) pair (a run counts once)."""
    cells: dict[tuple[str, str], Cell] = {}
    for run in runs:
        agent = run.agent or "?"
        level = "?" if run.level is None else str(run.level)
        for key in ((agent, level), (agent, "all")):
            cell = cells.setdefault(key, Cell())
            cell.total += 1
            cell.passed += run.passed is True
    agents = sorted({a for a, _ in cells})
    levels = sorted({lv for _, lv in cells} - {"all"}, key=_natural) + ["all"]
    return agents, levels, cells
