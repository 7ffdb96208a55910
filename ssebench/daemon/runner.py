"""The daemon's parts, wired in one place, and the spec's sequence of a run's checks.

:class:`Runner` is what ``ssebench daemon`` (app.py), ``ssebench grade`` and the tests
construct. It composes the parts, each with one job and testable alone, and hands them
the state they share (:class:`~ssebench.daemon.runtypes.DaemonContext`) explicitly:

- the workspace (workdirs.py): the snapshot store and build mirror, the run folders,
  old runs' logs within their budget, a full disk freed, the workspace made again;
- housekeeping (housekeeping.py): removals in the background, the sweep after a run;
- the check executor (checkproc.py): a check's processes in the sandbox, within the
  limits, with heartbeats and timeouts; and the views (views.py) checks run in;
- the build engine (build.py): the mirror brought to the snapshot, the traced build,
  incremental or clean, verified, retried clean;
- the steps (steps.py): how each check kind runs, named by its row in ssebench/checks.py.

One :class:`~ssebench.daemon.runtypes.CallRun` is one request: the agent's sources are
snapshotted when the request arrives (``prepare``), so the agent's tree is only ever
read and a run sees the tree as it was when it was asked for. ``execute`` yields the
typed events of ssebench/contract.py (the HTTP layer writes them as NDJSON) and ends
with the ``Result``.

Order and skip rules (test_patch-server.md), from the rows: the kinds run in table
order; the build (``gates``) runs whenever anything runs, and after it failed nothing
else runs (``not_run``); a kind ``covered_by`` another passes without running when that
one ran and passed (the functional tests after passing intent tests).
"""

from __future__ import annotations

import asyncio
import collections
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from pathlib import Path

from ssebench.checks import KINDS, Check, CheckKind, State, task_checks
from ssebench.contract import CheckFinished, CheckStarted, Result, RunEvent
from ssebench.daemon import tracefile
from ssebench.daemon.build import BuildEngine
from ssebench.daemon.checkproc import CheckExecutor
from ssebench.daemon.housekeeping import Housekeeping
from ssebench.daemon.limits import Limits
from ssebench.daemon.mirror import BuildMirror
from ssebench.daemon.runtypes import DEFAULT_LOG_BUDGET, CallRun, CheckRun, DaemonContext, RunError
from ssebench.daemon.sandbox import Sandbox
from ssebench.daemon.steps import DaemonParts
from ssebench.daemon.views import Views
from ssebench.daemon.workdirs import Workspace
from ssebench.task import Task

__all__ = ["CallRun", "RunError", "Runner"]


class Runner:
    """Runs checks for one task; the caller serializes runs (one at a time)."""

    def __init__(
        self,
        task: Task,
        tree: Path,
        workspace: Path,
        *,
        heartbeat: float = 10.0,
        log_budget: int = DEFAULT_LOG_BUDGET,
        env: dict[str, str] | None = None,
        sandbox: Sandbox | None = None,
        limits: Limits | None = None,
        trace: bool = True,
        warm: bool = False,
    ) -> None:
        """*warm*: keep a check's guard started ahead (checkproc.py, warmguard.py): the
        daemon's, which ends it in :meth:`kill_running`; in-process runners leave none."""
        # No sandbox unless the caller passes one (the daemon and grade always do).
        self.ctx = DaemonContext(
            task,
            sandbox if sandbox is not None else Sandbox(None),
            limits if limits is not None else Limits(),
            heartbeat,
            dict(os.environ if env is None else env),
            tree_path=workspace / "engine" / "tree",
        )
        self.housekeeping = Housekeeping()
        self.workspace = Workspace(self.ctx, tree, workspace, self.housekeeping, log_budget=log_budget)
        self.executor = CheckExecutor(self.ctx, warm=warm)
        self.views = Views(self.ctx, self.workspace, self.executor)
        self.builder = BuildEngine(self.ctx, self.workspace, self.executor, trace=trace)
        self.parts = DaemonParts(self.ctx, self.executor, self.builder, self.views)
        self.last_phases: dict[str, float] = {}  # the last executed run's (``/health``'s ``last_run``)

    # -- what callers read ------------------------------------------------------------

    @property
    def task(self) -> Task:
        return self.ctx.task

    @property
    def sandbox(self) -> Sandbox:
        return self.ctx.sandbox

    @property
    def heartbeat(self) -> float:
        return self.ctx.heartbeat

    @property
    def mirror(self) -> BuildMirror:
        return self.workspace.mirror

    @property
    def tracing(self) -> str:
        """Are builds traced (``/health``'s ``build_trace``)."""
        return self.builder.tracing

    @property
    def last_build(self) -> str:
        """``incremental`` or ``clean: <why>`` (``/health``, benchmarks, tests)."""
        return self.builder.last_build

    @property
    def build_counts(self) -> collections.Counter[str]:
        return self.builder.build_counts

    @property
    def last_record(self) -> tracefile.TraceRecord | None:
        """The last build's trace record (tests, benchmarks)."""
        return self.builder.last_record

    # -- runs -----------------------------------------------------------------------

    async def prepare(self) -> CallRun:
        """Create a run and snapshot the agent's sources for it (the tree is only read)."""
        start = time.perf_counter()
        run = await self.workspace.prepare()
        run.timed("snapshot", time.perf_counter() - start)
        return run

    def get(self, run_id: str) -> CallRun | None:
        return self.workspace.runs.get(run_id)

    def discard(self, run: CallRun) -> None:
        """Drop a prepared run that will never execute (its client went away)."""
        self.workspace.discard(run)

    def low_on_space(self) -> bool:
        return self.workspace.low_on_space()

    async def reclaim(self, failed: CallRun | None, *, exclusive: bool) -> None:
        """Free a full disk before the failure is answered (see :meth:`Workspace.reclaim`)."""
        await self.workspace.reclaim(failed, exclusive=exclusive)

    def kill_running(self) -> None:
        """Stop for shutdown: kill the running command's group; no new check starts."""
        self.ctx.closing = True
        self.workspace.store.stop.set()  # a snapshot in progress gives up at its next entry
        self.executor.kill_all()

    async def execute(self, run: CallRun, checks: Iterable[Check]) -> AsyncGenerator[RunEvent, None]:
        """Run *checks* (plus the build, which every run starts with); yield events.

        The last event is the :class:`~ssebench.contract.Result`. Checks the task lacks
        are left out, except the ``always`` kinds (a task without PoCs passes that step).
        """
        wanted = set(checks)
        if wanted:
            wanted |= {kind.check for kind in KINDS if kind.gates}
        plan = [check.kind for check in task_checks(self.task) if check in wanted]
        self.workspace.begin(run)
        await self.housekeeping.swept()
        try:
            async for event in self._sequence(run, plan):
                yield event
            start = time.perf_counter()
            result = Result(run.id, tuple(run.results[kind.check].result() for kind in plan))
            run.timed("report", time.perf_counter() - start)
            self.last_phases = run.phases
            yield result
        finally:
            # Processes a check left behind outside its group are killed after the
            # run, off the client's clock; the next run waits for it.
            self.housekeeping.sweep_later()
            self.workspace.end(run)

    async def _sequence(self, run: CallRun, plan: list[CheckKind]) -> AsyncIterator[RunEvent]:
        """Each kind of *plan* in turn: skipped by the rules, or started, stepped, finished."""
        loop = asyncio.get_running_loop()
        for kind in plan:
            result = _skipped(run, kind)
            if result is None:
                if self.ctx.closing:
                    raise RunError("the daemon is shutting down")
                yield CheckStarted(kind.check)
                result = CheckRun(kind.check, State.FAILED)
                start = loop.time()
                async for event in self._step(run, kind, result):
                    yield event
                result.elapsed = loop.time() - start
                run.timed(kind.check.value, result.elapsed)
            run.results[kind.check] = result
            yield CheckFinished(result.result())

    async def _step(self, run: CallRun, kind: CheckKind, result: CheckRun) -> AsyncIterator[RunEvent]:
        """The kind's step function, in a fresh view of the built mirror when the row says so."""
        step = kind.step_function()
        if not kind.fresh_view:
            async for event in step(self.parts, run, result, self.ctx.tree_path):
                yield event
            return
        try:
            start = time.perf_counter()
            view = await self.views.make(run, kind.check)
            async for event in self.views.fill(view, run, kind.check):
                yield event
            run.timed(f"{kind.check.value}: view", time.perf_counter() - start)
            async for event in step(self.parts, run, result, view):
                yield event
        finally:
            self.views.discard(run, kind.check)


def _skipped(run: CallRun, kind: CheckKind) -> CheckRun | None:
    """The record of a check that does not run (the rows' rules), or None: it runs."""
    if any(r.state is not State.PASSED for r in run.results.values() if r.check.kind.gates):
        return CheckRun(kind.check, State.NOT_RUN)
    cover = run.results.get(kind.covered_by) if kind.covered_by is not None else None
    if cover is not None and cover.state is State.PASSED:
        return CheckRun(kind.check, State.PASSED, covered_by_intent=True)
    return None
