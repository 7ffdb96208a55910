"""What ``ssebench jobs run`` shows while it works: a live rich panel on a terminal, plain lines otherwise.

The panel: runs done / running / failed of the total, the elapsed time and an ETA (the
mean duration of the ended runs × what is left ÷ the runs at once), and the last failures
as they happen. Without a terminal each run that ends (or is retried) is one line on
stderr, so a CI log reads like a list.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from types import TracebackType
from typing import IO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ssebench.jobs.outcome import NO_VERDICT
from ssebench.jobs.scheduler import RunEvent

FAILURES_SHOWN = 5


def _line(event: RunEvent) -> str:
    """``RUN: OUTCOME STATUS (SECONDS)``, and the record's reason for a run that did not pass."""
    took = f"{event.seconds:.1f} s" if event.seconds is not None else "-"
    result = event.result
    if result is None:
        return f"{event.run_id}: ({took})"
    line = f"{event.run_id}: {result.outcome.value} {result.status} ({took})"
    return line + (f": {result.reason}" if result.reason else "")


class Progress:
    """Counts of the runs and the last failures; told of each start and end by the scheduler."""

    def __init__(self, total: int, done: int = 0, stream: IO[str] | None = None, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.total, self.done, self.running, self.failed = total, done, 0, 0
        self.started = time.monotonic()
        self._durations: list[float] = []
        self.failures: deque[str] = deque(maxlen=FAILURES_SHOWN)
        self._lock = threading.Lock()
        self.live = self.stream.isatty() if live is None else live
        self._live: Live | None = None

    def __enter__(self) -> Progress:
        if self.live:
            console = Console(file=self.stream)
            self._live = Live(self.render(), console=console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self._live is not None:
            self._live.update(self.render())
            self._live.__exit__(kind, value, tb)

    def event(self, event: RunEvent) -> None:
        """The scheduler's listener: a run started, ended, or will be tried again."""
        with self._lock:
            if event.kind == "started":
                self.running += 1
                return
            self.running -= 1
            if event.seconds is not None:
                self._durations.append(event.seconds)
            if event.kind == "ended":
                self.done += 1
            verdictless = event.result is not None and event.result.outcome in NO_VERDICT
            if verdictless or event.kind == "retry":
                self.failed += event.kind == "ended"
                self.failures.append(_line(event) + (" - tried again" if event.kind == "retry" else ""))
            self._show(event)

    def _show(self, event: RunEvent) -> None:
        if self._live is not None:
            self._live.update(self.render())
        else:
            again = " - will be tried again" if event.kind == "retry" else ""
            print(f"[{self.done}/{self.total}] {_line(event)}{again}", file=self.stream, flush=True)

    def eta(self) -> float | None:
        if not self._durations:
            return None
        at_once = max(1, self.running)
        return sum(self._durations) / len(self._durations) * (self.total - self.done) / at_once

    def render(self) -> Group:
        table = Table.grid(padding=(0, 2))
        eta = self.eta()
        table.add_row(
            Text(f"{self.done}/{self.total} done", style="bold"),
            Text(f"{self.running} running"),
            Text(f"{self.failed} failed", style="red" if self.failed else ""),
            Text(f"{time.monotonic() - self.started:.0f} s elapsed"),
            Text(f"ETA {eta:.0f} s" if eta is not None else "ETA -"),
        )
        shown = [Text(f"  {line}", style="red") for line in self.failures]
        return Group(table, *shown)
