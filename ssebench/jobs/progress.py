"""What ``ssebench jobs run|resume`` shows while it works.

On a terminal (rich): a line per run that ended, printed above a live bar of the runs
done of the total, those passed so far, running now, the time so far and the ETA, and
which runs are running (redrawn as each starts and ends, and twice a second). Elsewhere
(a pipe, a CI log): the same line per run that ended, plain text, no control characters.
A line is ``[done/total] task · agent · L<level> · a<attempt> · outcome · duration`` and
the record's reason when the run did not pass.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import IO, Any

from ssebench import ui
from ssebench.jobs.backend import JobRun
from ssebench.jobs.outcome import NO_VERDICT
from ssebench.jobs.scheduler import RunEvent
from ssebench.plural import count
from ssebench.runrecord import Outcome

RUNNING_SHOWN = 4  # runs named under the bar (then "+N more")
_STYLE = {Outcome.PASSED: "ok", Outcome.FAILED: "fail"}


def clock(seconds: float) -> str:
    """``42 s``, ``3m 05s``, ``1h 02m``."""
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


def describe(run: JobRun | None, run_id: str) -> str:
    """``task · agent · L2 · a1`` (the run id where the run is not known)."""
    if run is None:
        return run_id
    return f"{run.spec.task_id} · {run.agent_name} · L{run.spec.level} · a{run.spec.attempt}"


class Progress:
    """Counts of the runs; told of each start and end by the scheduler (from its main thread)."""

    def __init__(
        self,
        total: int,
        done: int = 0,
        runs: Mapping[str, JobRun] | None = None,
        stream: IO[str] | None = None,
        live: bool | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        self.runs = runs or {}
        self.total, self.done, self.passed, self.no_verdict = total, done, 0, 0
        self.running: dict[str, float] = {}  # run id -> when it started
        self.started = time.monotonic()
        self._durations: list[float] = []
        self._most = 1  # the most runs seen at once (the ETA's parallelism)
        self._lock = threading.Lock()
        self.live = ui.is_tty(self.stream) if live is None else live
        self._live: Any = None

    def __enter__(self) -> Progress:
        if self.live:
            from rich.live import Live

            console = ui.console(self.stream)
            self._live = Live(console=console, refresh_per_second=2, transient=True, get_renderable=self.render)
            self._live.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self._live is not None:
            self._live.__exit__(kind, value, tb)
            self._live = None

    def event(self, event: RunEvent) -> None:
        """The scheduler's listener: a run started, ended, will be tried again; Ctrl-C."""
        said = None
        with self._lock:  # never print while holding it: the live display's refresh takes it too
            if event.kind == "started":
                self.running[event.run_id] = time.monotonic()
                self._most = max(self._most, len(self.running))
            elif event.kind in ("cancelling", "aborting"):
                said = (self._stopping(event.kind), "warn")
            else:
                said = self._ended(event)
        if said is not None:
            self._say(*said)
        if self._live is not None:
            self._live.refresh()

    def _stopping(self, kind: str) -> str:
        if kind == "aborting":
            return "stopping at once: every run of the job is killed"
        n = len(self.running)
        being = f"{count(n, 'run')} {'is' if n == 1 else 'are'} being cancelled"
        return f"stopping: no new run starts; {being} (Ctrl-C again to stop at once)"

    def _ended(self, event: RunEvent) -> tuple[str, str]:
        self.running.pop(event.run_id, None)
        if event.seconds is not None:
            self._durations.append(event.seconds)
        result = event.result
        if event.kind == "ended":
            self.done += 1
            self.passed += result is not None and result.outcome is Outcome.PASSED
            self.no_verdict += result is not None and result.outcome in NO_VERDICT
        took = ui.seconds(event.seconds) if event.seconds is not None else "-"
        line = f"[{self.done}/{self.total}] {describe(self.runs.get(event.run_id), event.run_id)}"
        outcome = result.outcome if result is not None else None
        line += f" · {outcome.value if outcome else '?'} · {took}"
        line += f" · {result.reason}" if result is not None and result.reason else ""
        line += " · will be tried again" if event.kind == "retry" else ""
        return line, _STYLE.get(outcome, "warn") if outcome else "warn"

    def _say(self, line: str, meaning: str) -> None:
        if self._live is not None:
            self._live.console.print(ui.styled((line, meaning)))
        else:
            print(line, file=self.stream, flush=True)

    def eta(self) -> float | None:
        """Seconds left: the mean wall time of the tries that ended × the runs left ÷ the runs at once."""
        if not self._durations:
            return None
        return sum(self._durations) / len(self._durations) * (self.total - self.done) / self._most

    def render(self) -> Any:
        """The live part: the bar and its counts, then the runs running now."""
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        with self._lock:
            now, eta = time.monotonic(), self.eta()
            counts = [f"{self.done}/{self.total} done", f"{self.passed} passed", f"{len(self.running)} running"]
            counts += [f"{self.no_verdict} no verdict"] if self.no_verdict else []
            counts += [clock(now - self.started), f"ETA {clock(eta)}" if eta is not None else "ETA -"]
            names = [f"{describe(self.runs.get(r), r)} ({clock(now - t)})" for r, t in self.running.items()]
        bar = Table.grid(padding=(0, 1))
        bar.add_row(ProgressBar(total=max(self.total, 1), completed=self.done, width=30), ui.styled(" · ".join(counts)))
        shown = names[:RUNNING_SHOWN] + ([f"+{len(names) - RUNNING_SHOWN} more"] if len(names) > RUNNING_SHOWN else [])
        return Group(bar, *[ui.styled(("  running: " + name, "dim")) for name in shown])
