"""Run a task's checks in the daemon's own trees, in the spec's order, with its skip rules.

One :class:`Run` is one request: the agent's sources are snapshotted by content when
the request arrives (``prepare``, :mod:`ssebench.daemon.workspace`), so the agent's
tree is only ever read and a run sees the tree as it was when it was asked for. The
build runs incrementally in the daemon's one build mirror, brought to that snapshot
(and, when an incremental build fails, once more in a fresh mirror); every later check
runs in its own fresh view of the built mirror (a copy-on-write overlay, or a copy),
discarded after the check, so no check sees another's side effects and the mirror is
only changed by builds. ``execute`` yields progress events (dicts, the NDJSON lines of
docs/daemon-api.md) and ends with the ``result`` event.

Every tree a check sees is at one fixed path (:attr:`Runner.tree_path`, or the
sandbox's ``/sse/tree``), so the absolute paths a build writes stay valid in the views.

Order and skip rules (test_patch-server.md): build first; after a failed build nothing
else runs (``not_run``); PoCs in order in one fresh view of the built tree, stopping
at the first that still triggers; intent tests in a fresh view after ``git apply -p1``
of the diff; when they pass, the functional tests count as passed without running,
otherwise (or when intent is not run) the functional tests run in a fresh view.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import os
import secrets
import subprocess
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from ssebench.checks import Check, State, task_checks
from ssebench.contract import CheckFinished, CheckStarted, Result
from ssebench.daemon import buildgraph, procs, tracefile
from ssebench.daemon.build import BuildEngine
from ssebench.daemon.committed import committed_files
from ssebench.daemon.housekeeping import check_reachable
from ssebench.daemon.limits import Limits
from ssebench.daemon.logs import CheckLog
from ssebench.daemon.mirror import BuildMirror
from ssebench.daemon.runtypes import DEFAULT_LOG_BUDGET, DISK_FULL, MIN_FREE, CheckRun, Outcome, Run, RunError
from ssebench.daemon.sandbox import Sandbox, TreeView
from ssebench.daemon.taskview import TaskView
from ssebench.daemon.workspace import Snapshot, SourceStore, SyncCancelled, SyncError
from ssebench.task import Task

# The records and the error live in runtypes.py (shared by the runner's parts); their
# users import them from here.
__all__ = ["DEFAULT_LOG_BUDGET", "DISK_FULL", "MIN_FREE", "CheckRun", "Outcome", "Run", "RunError", "Runner"]


class Runner(BuildEngine):
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
    ) -> None:
        self.task = task
        # No sandbox unless the caller passes one (the daemon and grade always do).
        self.sandbox = sandbox if sandbox is not None else Sandbox(None)
        self.limits = limits if limits is not None else Limits()
        self.tree = tree
        self.workspace = workspace
        self.heartbeat = heartbeat
        self.log_budget = log_budget
        self.base_env = dict(os.environ if env is None else env)
        self._counter = itertools.count(1)
        self._runs: dict[str, Run] = {}
        self._running: set[subprocess.Popen[bytes]] = set()
        self._closing = False
        self._pending_sweep: asyncio.Task[int] | None = None
        # The daemon's own state between runs (workspace.py): sources and the build mirror.
        engine = workspace / "engine"
        engine.mkdir(mode=0o700, exist_ok=True)
        # Checks may run as another uid (the daemon is root): bwrap, started as that uid,
        # must reach the trees it binds; nothing here is listable or readable by it.
        self.sandbox.share(workspace)
        self.sandbox.share(engine)
        check_reachable(workspace, self.sandbox.check_user)
        self.sandbox.hide("the task folder", task.dir)
        self.sandbox.hide("the daemon's workspace", workspace)
        # git reads the agent's .git in the check sandbox (it can be made to run a program).
        self.store = SourceStore(tree, engine, committed=lambda top: committed_files(top, self.sandbox))
        self.mirror = BuildMirror(self.store, engine / "mirror")
        self.tree_path = engine / "tree"  # the one path every check's tree has (no sandbox)
        # What checks see at SSE_TASK_DIR in the sandbox: a copy of the support files, made
        # now (a snapshot); without the sandbox SSE_TASK_DIR is the task folder itself.
        self.task_view: TaskView | None = None
        self._make_task_view()
        self._overlay: asyncio.Future[bool] | None = None  # views are overlays? (probed once)
        # The build engine (buildgraph.py): is strace usable (probed once), the mirror's graph.
        self.trace = trace
        self._strace: str | None = None
        self._strace_probed = False
        self.tracing = "not probed yet"  # what /health shows
        self._graph: buildgraph.Graph | None = None
        self.last_build = ""  # "incremental" or "clean: <why>" (benchmarks, tests)
        self.build_counts: collections.Counter[str] = collections.Counter()
        self.last_record: tracefile.Record | None = None  # the last build's (tests, benchmarks)

    # -- runs -----------------------------------------------------------------------

    async def prepare(self) -> Run:
        """Create a run and snapshot the agent's sources for it (the tree is only read)."""
        run_id = f"r-{next(self._counter)}-{secrets.token_hex(4)}"
        run_dir = self.workspace / run_id
        self._ensure_workspace()
        os.mkdir(run_dir, 0o700)
        os.mkdir(run_dir / "logs", 0o700)
        self.sandbox.share(run_dir)  # its overlay folders are bound; its logs stay 0700
        run = Run(run_id, run_dir, None)
        sync = asyncio.get_running_loop().run_in_executor(None, self.store.sync)
        try:
            run.snapshot = await asyncio.shield(sync)
        except SyncCancelled:
            self._remove_later(run.dir)
            raise RunError("the daemon is shutting down") from None
        except SyncError as exc:
            self._remove_later(run.dir)
            raise RunError(f"could not copy the source tree: {exc}") from None
        except BaseException:
            # Cancelled: the sync still finishes in its thread; then free what it kept.
            sync.add_done_callback(self._release_synced)
            self._remove_later(run.dir)
            raise
        return run

    def _release_synced(self, sync: asyncio.Future[Snapshot]) -> None:
        """A cancelled prepare's sync ended in its thread: free the blobs it kept."""
        if not sync.cancelled() and sync.exception() is None:
            self.store.release(sync.result())

    def get(self, run_id: str) -> Run | None:
        return self._runs.get(run_id)

    def discard(self, run: Run) -> None:
        """Drop a prepared run that will never execute (its client went away)."""
        self._release(run)
        self._remove_later(run.dir)

    async def execute(self, run: Run, checks: Iterable[Check]) -> AsyncIterator[dict[str, Any]]:
        """Run *checks* (plus the build, which every run starts with); yield events.

        The last event is ``{"event": "result", ...}``. Checks the task lacks are left
        out, except PoCs (a task without PoCs passes that step).
        """
        wanted = set(checks)
        if wanted:
            wanted.add(Check.BUILD)
        plan = [c for c in task_checks(self.task) if c in wanted]
        self._runs[run.id] = run
        self._prune()
        if self._pending_sweep is not None and not self._pending_sweep.done():
            # Shielded: if this client goes away now, the sweep must still finish.
            await asyncio.shield(self._pending_sweep)
        try:
            async for event in self._execute(run, plan):
                yield event
            yield Result(run.id, tuple(run.results[c].result() for c in plan)).to_json()
        finally:
            # Processes a check left behind outside its group are killed after the
            # run, off the client's clock; the next run waits for it.
            self._pending_sweep = asyncio.get_running_loop().create_task(procs.sweep(""))
            self._remove_trees_later(run)

    async def _execute(self, run: Run, plan: list[Check]) -> AsyncIterator[dict[str, Any]]:
        intent_passed = False
        for check in plan:
            if Check.BUILD in run.results and run.results[Check.BUILD].state != State.PASSED:
                result = CheckRun(check, State.NOT_RUN)
            elif check is Check.FUNCTIONAL and intent_passed:
                result = CheckRun(check, State.PASSED, covered_by_intent=True)
            else:
                if self._closing:
                    raise RunError("the daemon is shutting down")
                yield CheckStarted(check).to_json()
                result = CheckRun(check, State.FAILED)
                start = asyncio.get_running_loop().time()
                if check is Check.BUILD:
                    async for event in self._build(run, result):
                        yield event
                else:
                    try:
                        view: Path | TreeView = self.tree_path
                        if await self._overlays():
                            # Upper and work folders live in the run's folder, go with it.
                            upper, work = run.dir / f"view-{check.value}", run.dir / f"work-{check.value}"
                            upper.mkdir(mode=0o700)
                            work.mkdir(mode=0o700)
                            self.sandbox.give(upper)
                            self.sandbox.give(work)
                            view = TreeView.overlay(self.mirror.path, upper, work)
                        else:
                            async for event in self._copy(
                                self.mirror.path, self.tree_path, run.dir / "logs" / f"copy-{check.value}", check
                            ):
                                yield event
                        if check is Check.POCS:
                            async for event in self._pocs(run, view, result):
                                yield event
                        else:
                            async for event in self._check(run, check, view, result):
                                yield event
                    finally:
                        self._discard_view(run, check)
                result.elapsed = asyncio.get_running_loop().time() - start
                if check is Check.INTENT:
                    intent_passed = result.state == State.PASSED
            run.results[check] = result
            yield CheckFinished(result.result()).to_json()

    async def _copy(self, src: Path, dst: Path, log_base: Path, check: Check) -> AsyncIterator[dict[str, Any]]:
        """A fresh view of the built mirror: ``cp -a`` (reflinks where the filesystem has
        them: big trees copy in no time)."""
        self._discard_view()
        log = CheckLog(log_base.with_suffix(".out"), log_base.with_suffix(".err"))
        outcome = Outcome()
        argv = ["cp", "-a", "--reflink=auto", "--", str(src), str(dst)]
        async for event in self._supervise(check, argv, self.workspace, self._env(dst), log, outcome, timeout=None):
            yield event
        if not outcome.ok:
            detail = log.stderr.read_text("utf-8", "replace").strip().splitlines()
            raise RunError("could not copy the source tree: " + (detail[-1] if detail else "cp failed"))
