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
import contextlib
import itertools
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.checks import Check, State, task_checks
from ssebench.contract import CheckFinished, CheckHeartbeat, CheckResult, CheckStarted, Result
from ssebench.daemon import buildgraph, procs, safefs, stale, taskview, tracefile
from ssebench.daemon.logs import CheckLog, note
from ssebench.daemon.sandbox import TASK_PATH, TREE_PATH, Guard, Launch, Limits, Sandbox, TreeView, limit_note
from ssebench.daemon.sandbox_setup import overlay_supported, run_sandboxed
from ssebench.daemon.taskview import TaskView
from ssebench.daemon.workspace import (
    BuildMirror,
    Snapshot,
    SourceStore,
    SyncCancelled,
    SyncError,
    committed_files,
    fs_now,
)
from ssebench.task import Command, Task

# Old runs' logs are kept within this many bytes in all (``--log-budget``).
DEFAULT_LOG_BUDGET = 256 << 20
# Less free space than this on the workspace's filesystem: the disk is full, and a
# check that failed may have failed for that alone (never the patch's fault).
MIN_FREE = 1 << 20
DISK_FULL = "the daemon's disk is full"


class RunError(RuntimeError):
    """The run itself failed (not a check): its message is safe to show the agent."""


@dataclass
class Outcome:
    """How one process ended."""

    returncode: int | None = None
    timed_out: bool = False
    limit: str | None = None  # the sandbox limit that killed it ("output", "memory", "pids")

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.limit is None


@dataclass
class CheckRun:
    """One check of a run as the daemon keeps it: its result so far, and its log files."""

    check: Check
    state: State
    timed_out: bool = False
    elapsed: float = 0.0
    pocs_passed: int | None = None
    pocs_total: int | None = None
    covered_by_intent: bool = False
    log: CheckLog | None = None

    def result(self) -> CheckResult:
        """The check's result as the contract (ssebench/contract.py) puts it on the wire."""
        return CheckResult(
            self.check,
            self.state,
            self.timed_out,
            self.elapsed,
            self.pocs_passed or 0,
            self.pocs_total or 0,
            self.covered_by_intent,
            self.log is not None,
            self.log.size() if self.log else 0,
        )

    def to_json(self) -> dict[str, Any]:
        return self.result().to_json()


@dataclass
class Run:
    id: str
    dir: Path
    snapshot: Snapshot | None
    results: dict[Check, CheckRun] = field(default_factory=dict)


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
        _check_reachable(workspace, self.sandbox.check_user)
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
            sync.add_done_callback(lambda f: f.cancelled() or f.exception() or self.store.release(f.result()))
            self._remove_later(run.dir)
            raise
        return run

    def _make_task_view(self) -> None:
        """Copy the support files for the checks (sandbox only): at start, and again when
        the workspace was removed under us."""
        if not self.sandbox.enabled:
            return
        folder = self.workspace / "task"
        try:
            self.task_view = taskview.build(self.task, folder, TASK_PATH, leave_out=(self.workspace, self.tree))
            # Checks that run as another uid read the copies (bound read-only).
            self.sandbox.share(folder)
            self.sandbox.give(folder)
        except (taskview.TaskViewError, OSError) as exc:
            raise RunError(str(exc)) from None

    def _ensure_workspace(self) -> None:
        """A tmp cleaner may have removed the workspace (or its engine) under us: make it
        again, with a fresh blob store and mirror, so this call is answered normally."""
        engine = self.mirror.path.parent
        if os.path.isdir(self.store.blobs) and not os.path.islink(engine):
            return
        print(
            f"ssebench daemon: the workspace {self.workspace} was removed; recreating it", file=sys.stderr, flush=True
        )
        try:
            stale.recreate_workspace(self.workspace)
            with contextlib.suppress(FileExistsError):
                os.mkdir(engine, 0o700)
            self.sandbox.share(self.workspace)
            self.sandbox.share(engine)
            self.store.reset()
            if self.task_view is not None and not self.task_view.root.is_dir():
                shutil.rmtree(self.workspace / "task", ignore_errors=True)
                self._make_task_view()
        except OSError as exc:  # the agent gets one line without the host path; stderr has it
            print(f"ssebench daemon: cannot recreate {self.workspace}: {exc}", file=sys.stderr, flush=True)
            raise RunError(
                f"the daemon's workspace was removed and cannot be made again: {exc.strerror or exc}"
            ) from None
        self.mirror.invalidate()
        self._graph = None
        self._runs.clear()  # their logs went with it

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

    # -- checks ---------------------------------------------------------------------

    async def _check(
        self,
        run: Run,
        check: Check,
        tree: Path | TreeView,
        result: CheckRun,
        *,
        append: bool = False,
        trace_fd: int | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        log = CheckLog(run.dir / "logs" / f"{check.value}.out", run.dir / "logs" / f"{check.value}.err")
        result.log = log
        if check is Check.BUILD:
            command = self.task.build
        elif check is Check.FUNCTIONAL:
            assert self.task.functional is not None
            command = self.task.functional
        else:
            assert self.task.intent is not None
            command = self.task.intent.command
            if not await self._apply_intent(tree, log):
                result.state = State.FAILED
                return
        outcome = Outcome()
        async for event in self._command(
            check, command, tree, log, outcome, append=append or check is Check.INTENT, trace_fd=trace_fd
        ):
            yield event
        result.state = State.PASSED if outcome.ok else State.FAILED
        result.timed_out = outcome.timed_out

    async def _pocs(self, run: Run, tree: Path | TreeView, result: CheckRun) -> AsyncIterator[dict[str, Any]]:
        pocs = self.task.pocs
        result.pocs_total = len(pocs.files) if pocs else 0
        result.pocs_passed = 0
        if pocs is None or not pocs.files:
            result.state = State.PASSED
            return
        for index, poc in enumerate(pocs.files, start=1):
            log = CheckLog(run.dir / "logs" / f"poc-{index}.out", run.dir / "logs" / f"poc-{index}.err")
            result.log = log
            outcome = Outcome()
            async for event in self._command(Check.POCS, pocs.command, tree, log, outcome, poc=poc):
                yield event
            if not outcome.ok:
                result.state = State.FAILED
                result.timed_out = outcome.timed_out
                return
            result.pocs_passed = index
        result.state = State.PASSED

    async def _apply_intent(self, tree: Path | TreeView, log: CheckLog) -> bool:
        """``git apply -p1`` the intent diff; git's own output is the log when it fails.

        git runs in the check's sandbox (the tree may carry a hostile ``.git/config``)
        and reads the diff from a pipe, so the diff is never visible as a file.
        """
        assert self.task.intent is not None
        view = _view(tree)
        env = self._env(view.lower)
        # Never let git find a repository above the copy (it would apply relative to it).
        env["GIT_CEILING_DIRECTORIES"] = str(Path(env["SSE_TREE"]).parent)
        outcome = Outcome()
        diff = await asyncio.to_thread(self.task.intent.diff.read_bytes)
        argv = ["git", "apply", "-p1", "-"]
        async for _ in self._supervise(
            Check.INTENT,
            argv,
            view.lower,
            env,
            log,
            outcome,
            timeout=None,
            view=view,
            stdin_data=diff,
            network=self.task.intent.command.network,
            files=self._extras(Check.INTENT),
        ):
            pass
        return outcome.ok

    async def _command(
        self,
        check: Check,
        command: Command,
        tree: Path | TreeView,
        log: CheckLog,
        outcome: Outcome,
        *,
        poc: Path | None = None,
        append: bool = False,
        trace_fd: int | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Run a check's command in the sandbox, in *tree* (a host folder: bound read-write);
        with *trace_fd*, under strace (in the sandbox) writing the trace to that fd."""
        view = _view(tree)
        env = self._env(view.lower)
        files = self._extras(check)
        if poc is not None:
            env["SSE_POC"] = self.sandbox.poc(self.task.dir, poc)
            if self.sandbox.enabled:  # the one PoC being run, as a file (bound through any symlink)
                files[env["SSE_POC"]] = Path(os.path.realpath(poc))
        argv = ["bash", "-c", command.run]
        if trace_fd is not None and self._strace is not None:
            argv = tracefile.command(self._strace, argv, trace_fd)
        async for event in self._supervise(
            check,
            argv,
            view.lower,
            env,
            log,
            outcome,
            timeout=command.timeout,
            append=append,
            view=view,
            files=files,
            network=command.network,
            pass_fds=() if trace_fd is None else (trace_fd,),
        ):
            yield event
        if outcome.timed_out:
            note(
                log,
                f"[ssebench] timed out after {command.timeout:g} s: the command and "
                "every process it started were killed.\n",
            )
        elif outcome.limit is not None:
            note(log, limit_note(outcome.limit, self.limits))

    def _extras(self, check: Check) -> dict[str, Path]:
        """The hidden parts *check* sees besides the support files: the ``[intent] files``
        in the intent step (git apply and the command); the PoC is added per run."""
        if check is Check.INTENT and self.task_view is not None:
            return dict(self.task_view.intent)
        return {}

    def _env(self, tree: Path) -> dict[str, str]:
        if self.sandbox.enabled:
            env = self.sandbox.environment(self.base_env)
            env["SSE_TASK_DIR"] = TASK_PATH
            env["SSE_TREE"] = TREE_PATH
        else:
            env = dict(self.base_env)
            env["SSE_TASK_DIR"] = str(self.task.dir)
            env["SSE_TREE"] = str(tree)
        env.pop("SSE_POC", None)
        return env

    async def _supervise(
        self,
        check: Check,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        log: CheckLog,
        outcome: Outcome,
        *,
        timeout: float | None,
        append: bool = False,
        view: TreeView | None = None,
        files: dict[str, Path] | None = None,
        network: bool = False,
        stdin_data: bytes | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> AsyncIterator[dict[str, Any]]:
        """Run one process to the end; heartbeats while it runs; kill all on timeout/cancel.

        With a *view* the process is a check's: it runs in the sandbox with *view* at
        ``/sse/tree`` and within the limits (output, memory, pids); without one it is the
        daemon's own (``cp``) and runs as is. When the process ends by itself, what is
        left of its process group is killed at once; processes that left the group are
        swept after the run (see ``execute``). After a timeout or a kill they are swept
        at once, before the next check.
        """
        token = secrets.token_hex(8)
        env[procs.TOKEN_VAR] = token
        loop = asyncio.get_running_loop()
        proc, guard = self._spawn(
            argv,
            cwd,
            env,
            log,
            append=append,
            view=view,
            files=files,
            network=network,
            stdin_data=stdin_data,
            pass_fds=pass_fds,
        )
        self._running.add(proc)
        waiter = loop.create_task(procs.wait_exit(proc))
        watcher: asyncio.Task[str] | None = None
        if guard is not None:
            guard.start_watchdog(proc.pid)
            watcher = loop.create_task(_watch(guard, proc.pid))
        finished = False
        try:
            beats = self._wait(check, proc.pid, waiter, watcher, guard, outcome, timeout)
            async with contextlib.aclosing(beats):
                async for event in beats:
                    yield event
            finished = True
        finally:
            self._running.discard(proc)
            if watcher is not None:
                watcher.cancel()
            if finished:
                await self._settle(proc.pid, guard, outcome, token)
            else:  # cancelled (client went away) or failed: kill without awaiting
                waiter.cancel()
                procs.kill_now(proc, token)
            if guard is not None:
                guard.close()
        if self._closing and not outcome.ok:
            raise RunError("the daemon is shutting down")

    def _spawn(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        log: CheckLog,
        *,
        append: bool,
        view: TreeView | None,
        files: dict[str, Path] | None,
        network: bool,
        stdin_data: bytes | None,
        pass_fds: tuple[int, ...],
    ) -> tuple[subprocess.Popen[bytes], Guard | None]:
        """Start the process: a check's (with a *view*) in the sandbox under a Guard, else as is."""
        guard: Guard | None = None
        launch = Launch()
        if view is not None:
            launch = self.sandbox.launch(files)
            argv = self.sandbox.wrap(
                argv,
                view,
                files=files,
                network=network,
                limits=self.limits,
                launch=launch,
                task=self.task_view.root if self.task_view else None,
            )
            base = sum(p.stat().st_size for p in (log.stdout, log.stderr) if append and p.exists())
            guard = Guard(self.limits, (log.stdout, log.stderr), base=base)
        try:
            proc = procs.spawn(
                argv,
                cwd=cwd,
                env=env,
                stdout=log.stdout,
                stderr=log.stderr,
                append=append,
                stdin_data=stdin_data,
                preexec=guard.preexec() if guard else None,
                user=launch.user if view is not None else None,
                pass_fds=tuple(pass_fds) + launch.pass_fds,
            )
        finally:
            launch.close()
            if guard is not None:
                guard.spawned()
        return proc, guard

    async def _wait(
        self,
        check: Check,
        pid: int,
        waiter: asyncio.Task[int],
        watcher: asyncio.Task[str] | None,
        guard: Guard | None,
        outcome: Outcome,
        timeout: float | None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Wait for the process's end, a limit, the timeout or shutdown (killing its group
        on the last three), with a heartbeat event every ``heartbeat`` seconds meanwhile."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = None if timeout is None else start + timeout
        next_beat = start + self.heartbeat
        while True:
            until = next_beat if deadline is None else min(next_beat, deadline)
            watched = {waiter} if watcher is None else {waiter, watcher}
            done, _ = await asyncio.wait(
                watched, timeout=max(0.0, until - loop.time()), return_when=asyncio.FIRST_COMPLETED
            )
            if waiter in done:
                outcome.returncode = waiter.result()
                if guard is not None:
                    outcome.limit = guard.check()
                return
            if watcher is not None and watcher in done:
                outcome.limit = watcher.result()
                procs.kill_group(pid)
                outcome.returncode = await waiter
                return
            outcome.timed_out = deadline is not None and loop.time() >= deadline
            if outcome.timed_out or self._closing:
                procs.kill_group(pid)
                outcome.returncode = await waiter
                return
            next_beat += self.heartbeat
            yield CheckHeartbeat(check, loop.time() - start).to_json()

    async def _settle(self, pid: int, guard: Guard | None, outcome: Outcome, token: str) -> None:
        """After the process ended: kill what is left of its group, sweep escapees after a
        timeout, kill or limit, and cut an over-long output once every writer is gone."""
        procs.kill_group(pid)
        if outcome.timed_out or self._closing or outcome.limit:
            await procs.sweep(token)
        if guard is not None and outcome.limit == "output":
            # Every writer is gone now (the sandbox's pid namespace died with it).
            await asyncio.to_thread(guard.settle)
            guard.cut_output()

    # -- the build mirror and the views of it ------------------------------------------------

    async def _build(self, run: Run, result: CheckRun) -> AsyncIterator[dict[str, Any]]:
        """Build in the mirror: incrementally where the build engine (buildgraph.py) can
        show the answer is a clean build's, else clean (a fresh mirror, agent's mtimes).

        Every build is traced. An incremental build is kept only when it passed and its
        trace shows nothing a clean build could do differently; otherwise the build runs
        once more, clean, and that build's log is the log. The mirror sits at
        :attr:`tree_path` while it builds. A build that did not end by itself (timeout,
        cancel, shutdown) leaves the mirror unknown, so the next run starts clean.
        """
        assert run.snapshot is not None
        snapshot = run.snapshot
        ended = False
        if self._overlay is None:  # probe while the build runs, not when the first view is due
            self._overlay = asyncio.get_running_loop().run_in_executor(
                None, overlay_supported, self.mirror.path.parent, self.sandbox
            )
        try:
            await self._tracer()
            incremental, changed = await self._to_mirror(snapshot)
            before = await asyncio.to_thread(buildgraph.scan, self.mirror.path) if incremental else {}
            self._mirror_in()
            records: list[tracefile.Record] = []
            async for event in self._traced(run, result, records):
                yield event
            retry = None
            if incremental and not result.timed_out and not self._closing:
                retry = (
                    "the incremental build failed"
                    if result.state != State.PASSED
                    else await self._verify(records[-1], changed, before, snapshot)
                )
            if retry is not None:
                self.last_build = f"clean: {retry}"
                incremental = False
                async for event in self._rebuild(run, result, records, snapshot, traced=True):
                    yield event
            if result.state != State.PASSED and not result.timed_out and self._ptrace_broke(result):
                # LeakSanitizer refuses to run under ptrace: what the build ran must run
                # as it would untraced (as in a fresh daemon without strace, and in grade).
                self.last_build = "clean: a program of the build cannot run under strace"
                incremental = False
                async for event in self._rebuild(run, result, records, snapshot, traced=False):
                    yield event
            self._remember(incremental, result, records[-1])
            ended = not result.timed_out
            # The probe's bwrap must be gone before the run ends: the sweep after a run
            # kills every child the daemon did not start through procs.
            await asyncio.shield(self._overlay)
        finally:
            if not ended:
                self.mirror.invalidate()
                self._graph = None
            self._mirror_out()
            with contextlib.suppress(OSError):  # the workspace may be going away (shutdown)
                self.mirror.last_build_end_ns = fs_now(self.mirror.path.parent)

    async def _rebuild(
        self, run: Run, result: CheckRun, records: list[tracefile.Record], snapshot: Snapshot, *, traced: bool
    ) -> AsyncIterator[dict[str, Any]]:
        """The build once more, clean: a fresh mirror; its log is the log, nothing added
        (the task format defines a check's log as its output; the agent is not told
        about the retry: it changes nothing about what the result means)."""
        self._mirror_out()
        try:
            await asyncio.to_thread(self.mirror.fresh, snapshot)
            await asyncio.to_thread(self.sandbox.give, self.mirror.path)
        except OSError as exc:
            raise RunError(f"could not copy the source tree: {exc}") from None
        self._mirror_in()
        assert result.log is not None
        result.log.stdout.write_bytes(b"")
        result.log.stderr.write_bytes(b"")
        result.timed_out = False
        async for event in self._traced(run, result, records, append=True, traced=traced):
            yield event

    def _ptrace_broke(self, result: CheckRun) -> bool:
        """Did a traced build fail because a program refuses ptrace (LeakSanitizer)?"""
        if self._strace is None or result.log is None:
            return False
        with contextlib.suppress(OSError):
            return b"does not work under ptrace" in result.log.tail()
        return False

    async def _tracer(self) -> None:
        """Can builds be traced here? Probed once, through the sandbox (ptrace may be denied)."""
        if self._strace_probed:
            return
        self._strace_probed = True
        if not self.trace:
            self.tracing = "off: every build is clean"
            return
        folder = self.mirror.path.parent / ".trace-probe-tree"
        folder.mkdir(mode=0o700, exist_ok=True)
        try:
            self.sandbox.give(folder)
            self._strace, self.tracing = await asyncio.to_thread(
                tracefile.probe,
                lambda argv, fds: run_sandboxed(self.sandbox, argv, TreeView.bind(folder), timeout=60, pass_fds=fds),
                self.mirror.path.parent,
                self.sandbox.check_user,
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if self._strace is None:
            print(f"ssebench daemon: build tracing {self.tracing}", file=sys.stderr, flush=True)

    async def _to_mirror(self, snapshot: Snapshot) -> tuple[bool, set[str]]:
        """Bring the mirror to *snapshot*, incrementally or fresh: (incremental?, changed files)."""

        def go() -> tuple[str | None, set[str]]:
            now = fs_now(self.mirror.path.parent)
            for _ in range(20):  # a coarse clock: let it pass the last build's end
                if now > self.mirror.last_build_end_ns + 1000:
                    break
                time.sleep(0.005)
                now = fs_now(self.mirror.path.parent)
            why, changed = (
                ("tracing is off", set())
                if self._strace is None
                else buildgraph.plan(self.mirror.manifest, snapshot.manifest, self._graph, now)
            )
            stamps = None
            if why is None:
                stamps = buildgraph.stamps(changed, snapshot.manifest, self.mirror.last_build_end_ns, now)
                why = "no room for fresh mtimes" if stamps is None else None
            if why is None and stamps is not None:
                if self.mirror.update(snapshot, stamps)[0]:
                    self.sandbox.give(self.mirror.path)
                    return None, changed
                why = "the mirror could not be updated"
            self.mirror.fresh(snapshot)
            self.sandbox.give(self.mirror.path)
            return why, set()

        try:
            why, changed = await asyncio.to_thread(go)
        except OSError as exc:
            raise RunError(f"could not copy the source tree: {exc}") from None
        self.last_build = "incremental" if why is None else f"clean: {why}"
        return why is None, changed

    async def _traced(
        self, run: Run, result: CheckRun, records: list[tracefile.Record], *, append: bool = False, traced: bool = True
    ) -> AsyncIterator[dict[str, Any]]:
        """The build command, traced (when tracing works); its record goes to *records*."""
        if self._strace is None or not traced:
            async for event in self._check(run, Check.BUILD, self.tree_path, result, append=append):
                yield event
            records.append(tracefile.Record(complete=False, problem="not traced"))
            return
        trace = run.dir / "build.trace"
        fd = os.open(trace, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            if self.sandbox.check_user is not None:  # strace, as the check's uid, reopens it
                os.fchown(fd, *self.sandbox.check_user)
            async for event in self._check(run, Check.BUILD, self.tree_path, result, append=append, trace_fd=fd):
                yield event
        finally:
            os.close(fd)
        tree = TREE_PATH if self.sandbox.enabled else os.path.realpath(self.tree_path)
        try:
            records.append(await asyncio.to_thread(tracefile.parse_trace, trace, tree, tree))
        finally:
            with contextlib.suppress(OSError):
                os.unlink(trace)

    async def _verify(
        self, record: tracefile.Record, changed: set[str], before: buildgraph.Scan, snapshot: Snapshot
    ) -> str | None:
        """Why a passed incremental build may differ from a clean one (None: it cannot)."""
        assert self._graph is not None
        graph = self._graph

        def go() -> str | None:
            wrote = buildgraph.written(before, buildgraph.scan(self.tree_path))
            return buildgraph.verify(graph, record, changed, wrote, snapshot.manifest, self.tree_path)

        return await asyncio.to_thread(go)

    def _remember(self, incremental: bool, result: CheckRun, record: tracefile.Record) -> None:
        """Keep the build graph: a clean build's record replaces it, an incremental one's
        updates it; a failed or untraced build leaves none (the next build is clean)."""
        self.build_counts[self.last_build.split(":")[0]] += 1
        self.last_record = record
        if result.state != State.PASSED or not record.complete:
            self._graph = None
        elif incremental and self._graph is not None:
            self._graph.update(record)
        else:
            self._graph = buildgraph.Graph.of(record)

    def _mirror_in(self) -> None:
        """Move the mirror to the fixed tree path for a build."""
        self._discard_view()
        os.rename(self.mirror.path, self.tree_path)

    def _mirror_out(self) -> None:
        """Move the mirror back to where it waits between builds (no-op if it is there)."""
        if self.tree_path.is_dir() and not self.mirror.path.exists():
            os.rename(self.tree_path, self.mirror.path)

    def _discard_view(self, run: Run | None = None, check: Check | None = None) -> None:
        """Throw away the view at the fixed tree path (never the mirror itself), and the
        overlay folders of *check*."""
        if self.tree_path.exists() and self.mirror.path.exists():
            self._remove_later(self.tree_path)
        if run is not None and check is not None:
            # overlayfs leaves a mode-000 folder in its work folder: make it removable.
            with contextlib.suppress(OSError):  # never through a symlink a check left
                safefs.chmod_path(run.dir / f"work-{check.value}" / "work", 0o700)
            for name in (f"view-{check.value}", f"work-{check.value}"):
                if (run.dir / name).exists():
                    self._remove_later(run.dir / name)

    async def _overlays(self) -> bool:
        """Are views copy-on-write overlays? Probed once (sandboxes only; not where the
        workspace is itself on overlayfs, as in Docker); else views are copies."""
        if self._overlay is None:
            self._overlay = asyncio.get_running_loop().run_in_executor(
                None, overlay_supported, self.mirror.path.parent, self.sandbox
            )
        return await asyncio.shield(self._overlay)

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

    # -- housekeeping -------------------------------------------------------------------

    def kill_running(self) -> None:
        """Stop for shutdown: kill the running command's group; no new check starts."""
        self._closing = True
        self.store.stop.set()  # a snapshot in progress gives up at its next entry
        for proc in list(self._running):
            procs.kill_group(proc.pid)

    def _prune(self) -> None:
        """Keep old runs' logs within ``log_budget`` bytes in all, by size, not count.

        Called as a run starts. The old runs are kept newest first while the total of
        their logs stays within the budget; the newest old run (whose log the server
        may still be fetching) always stays. On a full disk every other old run goes.
        """
        runs = list(self._runs.values())  # in start order: the last is the one starting now
        total = 0
        for age, run in enumerate(reversed(runs)):
            total += _disk_use(run.dir)
            if age >= 2 and (total > self.log_budget or self.low_on_space()):
                del self._runs[run.id]
                self._remove_later(run.dir)

    # -- a full disk -------------------------------------------------------------------

    def low_on_space(self) -> bool:
        """Is the workspace's filesystem full (under ``MIN_FREE`` bytes or no inode left)?"""
        try:
            st = os.statvfs(self.workspace)
        except OSError:
            return False
        return st.f_bavail * st.f_frsize < MIN_FREE or (st.f_files > 0 and st.f_favail == 0)

    async def reclaim(self, failed: Run | None, *, exclusive: bool) -> None:
        """After a run failed on a full disk: free the disk so that the next run works.

        Done before the failure is answered, not in the background: the failed run,
        what waits in the trash, then old runs oldest first while the disk is still
        full. *exclusive*: no run is executing nor can start (the caller holds the
        queue), so the newest old run may go too and, if the disk is still full, the
        build mirror (the next build starts from a fresh copy; after a build that ran
        out of space its objects cannot be trusted anyway). Last, the source blobs no
        snapshot needs.
        """
        doomed: list[Path] = []
        if failed is not None:
            self._runs.pop(failed.id, None)
            self._release(failed)
            doomed.append(failed.dir)
        for folder in (self.workspace, self.mirror.path.parent):
            doomed += folder.glob(".trash-*")  # being removed in the background: now, and wait
        older = list(self._runs.values())  # oldest first
        if not exclusive:
            older = older[:-1]  # the newest may be executing

        def drop_runs() -> None:
            for path in doomed:
                shutil.rmtree(path, ignore_errors=True)
            for old in older:
                if not self.low_on_space():
                    break
                self._runs.pop(old.id, None)
                shutil.rmtree(old.dir, ignore_errors=True)

        await asyncio.shield(asyncio.to_thread(drop_runs))
        if exclusive:
            self.mirror.invalidate()
            if self.low_on_space() and self.mirror.path.is_dir():
                self._discard_view()
                trash = self.mirror.path.with_name(f".trash-mirror-{secrets.token_hex(4)}")
                os.rename(self.mirror.path, trash)  # at once: a next build never sees half of it
                await asyncio.shield(asyncio.to_thread(shutil.rmtree, trash, ignore_errors=True))
        with contextlib.suppress(OSError):  # blobs of failed syncs and of ended runs
            await asyncio.shield(asyncio.to_thread(self.store.release, _NO_SNAPSHOT))

    def _remove_trees_later(self, run: Run) -> None:
        """After a run: no view is left, and the blobs only this run needed are freed."""
        self._discard_view()
        self._release(run)

    def _release(self, run: Run) -> None:
        if run.snapshot is not None:
            snapshot, run.snapshot = run.snapshot, None
            _in_thread(self.store.release, snapshot)

    def _remove_later(self, path: Path) -> None:
        trash = path.with_name(f".trash-{path.name}-{secrets.token_hex(4)}")
        with contextlib.suppress(OSError):
            os.rename(path, trash)
            path = trash
        _in_thread(shutil.rmtree, path, ignore_errors=True)


_NO_SNAPSHOT = Snapshot({}, 0, 0, 0)


def _disk_use(run_dir: Path) -> int:
    """Disk bytes a finished run holds: its folder, its logs folder and the logs (blocks,
    so a run of tiny logs still counts for what it costs, and many of them add up)."""
    total = 0
    for folder in (run_dir, run_dir / "logs"):
        with contextlib.suppress(OSError):
            total += os.lstat(folder).st_blocks * 512
    with contextlib.suppress(OSError), os.scandir(run_dir / "logs") as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                total += entry.stat(follow_symlinks=False).st_blocks * 512
    return total


def _check_reachable(workspace: Path, user: tuple[int, int] | None) -> None:
    """Checks that run as another uid (the daemon is root) need every folder above the
    workspace searchable by that uid: bwrap, as that uid, opens the trees it binds."""
    if user is None:
        return
    for folder in Path(os.path.realpath(workspace)).parents:
        st = os.stat(folder)
        if not (
            st.st_mode & 0o001
            or (st.st_uid == user[0] and st.st_mode & 0o100)
            or (st.st_gid == user[1] and st.st_mode & 0o010)
        ):
            raise RunError(
                f"checks run as uid {user[0]} and cannot reach the workspace {workspace}: "
                f"{folder} is not searchable by that uid (put the workspace elsewhere, "
                f"e.g. TMPDIR=/tmp)"
            )


def _view(tree: Path | TreeView) -> TreeView:
    return tree if isinstance(tree, TreeView) else TreeView.bind(tree)


async def _watch(guard: Guard, pid: int, interval: float = 0.05) -> str:
    """Poll *guard* until a limit is hit; returns which. (Without cgroups the guard's
    own watchdog thread counts processes and memory, and kills at once.)"""
    while True:
        reason = guard.check()
        if reason is not None:
            if guard.cgroups is None and reason == "output":
                with contextlib.suppress(RuntimeError):  # no thread to be had: settle skips it
                    await asyncio.to_thread(guard.remember, pid)
            return reason
        await asyncio.sleep(interval)


def _in_thread(func: Any, *args: Any, **kwargs: Any) -> None:
    threading.Thread(target=func, args=args, kwargs=kwargs, daemon=True).start()
