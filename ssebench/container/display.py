"""``ssebench run``'s live stage table and its result summary (rich), on the console."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ssebench import runrecord
from ssebench.runrecord import RunResult
from ssebench.ui import seconds


class Display:
    """The live stage table (rich): one row per stage, its state, detail and time."""

    MARKS = {"start": "…", "done": "✓", "failed": "✗", "skipped": "–"}

    def __init__(self, console_file: Any) -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = Console(file=console_file, highlight=False)
        self.rows: dict[str, list[Any]] = {}
        self.started: dict[str, float] = {}
        self.live = Live(self._table(), console=self.console, refresh_per_second=4, transient=False)
        self.live.start()

    def on_stage(self, stage: str, state: str, detail: str) -> None:
        {"start": self.start, "done": self.done, "failed": self.fail, "skipped": self.skip}.get(state, self.start)(
            stage, detail
        )

    def start(self, stage: str, detail: str) -> None:
        self.started[stage] = time.monotonic()
        self._set(stage, "start", detail)

    def done(self, stage: str, detail: str) -> None:
        self._set(stage, "done", detail)

    def fail(self, stage: str, detail: str) -> None:
        self._set(stage, "failed", detail.splitlines()[0] if detail else "")

    def skip(self, stage: str, detail: str) -> None:
        self._set(stage, "skipped", detail)

    def _set(self, stage: str, state: str, detail: str) -> None:
        now = time.monotonic()  # one reading: two could make a skipped stage take "-0.0 s"
        took = now - self.started.get(stage, now)
        old = self.rows.get(stage)
        self.rows[stage] = [state, detail or (old[1] if old else ""), took]
        self.live.update(self._table())

    def _table(self):
        from rich.table import Table

        table = Table(title="ssebench run", show_header=True, header_style="bold")
        for column in ("stage", "state", "detail", "time"):
            table.add_column(column)
        for stage, (state, detail, took) in self.rows.items():
            style = {"done": "green", "failed": "red", "skipped": "dim"}.get(state, "yellow")
            table.add_row(stage, f"[{style}]{self.MARKS.get(state, state)} {state}[/]", detail, seconds(took))
        return table

    def stop(self) -> None:
        self.live.stop()

    def summary(self, result: RunResult, results: Path) -> None:
        from rich.table import Table

        from ssebench.container.results import check_label

        table = Table(title="result", show_header=False)
        table.add_column("key", style="bold")
        table.add_column("value")
        table.add_row("status", f"{result.status} (exit {result.exit_code})")
        table.add_row("task", str(result.task.id))
        level = result.difficulty
        table.add_row("difficulty", f"{level.level} ({level.name})" if level else "None (None)")
        agent = result.agent
        table.add_row(
            "agent",
            f"exit {agent.exit_code}, {seconds(agent.duration)}" + (", timed out" if agent.timed_out else "")
            if agent
            else "did not start",
        )
        table.add_row("passed", {True: "yes", False: "no", None: "no verdict"}[result.passed])
        for check in result.grading.checks if result.grading else ():
            table.add_row(f"  {check_label(check.check)}", check.state.replace("_", " "))
        if result.error:
            table.add_row("error", result.error)
        table.add_row("results", str(runrecord.path_in(results)))
        if result.dialog:
            table.add_row("dialog", str(results / result.dialog))
        self.console.print()
        self.console.print(table)
