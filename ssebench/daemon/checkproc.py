"""The check executor: one process of a check (its command, a PoC, ``git apply`` of the
intent diff) in the sandbox and within the limits, supervised to the end with heartbeats,
a timeout and the sweep after; and the daemon's own processes (``cp``) as they are.

It knows nothing of check kinds: the steps (steps.py) and the build engine (build.py)
say what to run, in which tree, with which extra files and environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import subprocess
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from pathlib import Path

from ssebench.checks import Check, State
from ssebench.contract import CheckHeartbeat
from ssebench.daemon import procs
from ssebench.daemon.limits import Guard, limit_note
from ssebench.daemon.logs import CheckLog, note
from ssebench.daemon.runtypes import CallRun, CheckRun, DaemonContext, ProcessEnd, RunError
from ssebench.daemon.sandbox import TASK_PATH, TREE_PATH, LaunchFds, TreeView
from ssebench.daemon.warmguard import Spares
from ssebench.task import Command


class CheckExecutor:
    """Runs the processes of checks for one daemon; kills them all at shutdown."""

    def __init__(self, ctx: DaemonContext, *, warm: bool = False) -> None:
        """*warm*: keep a guard started ahead of the next check (warmguard.py; the
        daemon's, whose life ends with :meth:`kill_all`)."""
        self.ctx = ctx
        self._running: set[subprocess.Popen[bytes]] = set()
        self.spares = Spares(ctx.limits) if warm else None
        if self.spares is not None:
            self.spares.refill()

    def kill_all(self) -> None:
        """Shutdown: kill the running command's group (``ctx.closing`` is set: nothing new
        starts) and the guard waiting for the next check."""
        for proc in list(self._running):
            procs.kill_group(proc.pid)
        if self.spares is not None:
            self.spares.close()

    @staticmethod
    def log(run: CallRun, name: str) -> CheckLog:
        """The log files *name* (``build``, ``poc-1``, ...) of *run*."""
        return CheckLog(run.dir / "logs" / f"{name}.out", run.dir / "logs" / f"{name}.err")

    async def run_check(
        self,
        run: CallRun,
        result: CheckRun,
        command: Command,
        tree: Path | TreeView,
        *,
        append: bool = False,
        files: Mapping[str, Path] | None = None,
        wrap: Callable[[list[str]], list[str]] | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> AsyncIterator[CheckHeartbeat]:
        """Run *result*'s check as one *command* in *tree*, into the check's log; *result*
        says how it ended (passed, failed, timed out)."""
        log = self.log(run, result.check.value)
        result.log = log
        end = ProcessEnd()
        async for event in self.command(
            result.check, command, tree, log, end, append=append, files=files, wrap=wrap, pass_fds=pass_fds
        ):
            yield event
        result.state = State.PASSED if end.ok else State.FAILED
        result.timed_out = end.timed_out

    async def command(
        self,
        check: Check,
        command: Command,
        tree: Path | TreeView,
        log: CheckLog,
        end: ProcessEnd,
        *,
        append: bool = False,
        files: Mapping[str, Path] | None = None,
        env: Mapping[str, str] | None = None,
        wrap: Callable[[list[str]], list[str]] | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> AsyncIterator[CheckHeartbeat]:
        """Run a check's command in the sandbox, in *tree* (a host folder: bound read-write),
        with the extra read-only *files* and variables *env*; *wrap* turns the argv into the
        one to start (the build's strace), *pass_fds* reach it."""
        view = as_view(tree)
        full_env = self.env(view.lower)
        full_env.update(env or {})
        argv = ["bash", "-c", command.run]
        if wrap is not None:
            argv = wrap(argv)
        async for event in self.supervise(
            check,
            argv,
            view.lower,
            full_env,
            log,
            end,
            timeout=command.timeout,
            append=append,
            view=view,
            files=dict(files or {}),
            network=command.network,
            pass_fds=pass_fds,
        ):
            yield event
        if end.timed_out:
            note(
                log,
                f"[ssebench] timed out after {command.timeout:g} s: the command and "
                "every process it started were killed.\n",
            )
        elif end.limit is not None:
            note(log, limit_note(end.limit, self.ctx.limits))

    def env(self, tree: Path) -> dict[str, str]:
        """A check's environment: the daemon's (as the sandbox lets checks see it) plus
        ``SSE_TASK_DIR`` and ``SSE_TREE``; never the daemon's own ``SSE_POC``."""
        ctx = self.ctx
        if ctx.sandbox.enabled:
            env = ctx.sandbox.environment(ctx.base_env)
            env["SSE_TASK_DIR"] = TASK_PATH
            env["SSE_TREE"] = TREE_PATH
        else:
            env = dict(ctx.base_env)
            env["SSE_TASK_DIR"] = str(ctx.task.dir)
            env["SSE_TREE"] = str(tree)
        env.pop("SSE_POC", None)
        return env

    async def supervise(
        self,
        check: Check,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        log: CheckLog,
        end: ProcessEnd,
        *,
        timeout: float | None,
        append: bool = False,
        view: TreeView | None = None,
        files: dict[str, Path] | None = None,
        network: bool = False,
        stdin_data: bytes | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> AsyncIterator[CheckHeartbeat]:
        """Run one process to the end; heartbeats while it runs; kill all on timeout/cancel.

        With a *view* the process is a check's: it runs in the sandbox with *view* at ``/sse/tree``
        and within the limits (output, memory, pids); without one it is the daemon's own (``cp``)
        and runs as is. When the process ends by itself, what is left of its process group is
        killed at once; processes that left the group are swept after the run (housekeeping.py).
        After a timeout or a kill they are swept at once, before the next check."""
        env[procs.TOKEN_VAR] = token = secrets.token_hex(8)
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
        waiter = asyncio.get_running_loop().create_task(procs.wait_exit(proc))
        watcher = _watcher(guard, proc.pid)
        finished = False
        try:
            beats = self._wait(check, proc.pid, waiter, watcher, guard, end, timeout)
            async with contextlib.aclosing(beats):
                async for event in beats:
                    yield event
            finished = True
        finally:
            self._running.discard(proc)
            if watcher is not None:
                watcher.cancel()
            if finished:
                await self._settle(proc.pid, guard, end, token)
            else:  # cancelled (client went away) or failed: kill without awaiting
                waiter.cancel()
                procs.kill_now(proc, token)
            if guard is not None:
                guard.close()
        if self.ctx.closing and not end.ok:
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
        launch = LaunchFds()
        ctx = self.ctx
        if view is not None and self.spares is not None:
            return self._hand(argv, cwd, env, log, append, view, files, network, stdin_data, pass_fds)
        if view is not None:
            launch = ctx.sandbox.launch(files)
            argv, base = self._sandboxed(argv, view, files, network, launch, log, append)
            guard = Guard(ctx.limits, (log.stdout, log.stderr), base=base)
        try:
            proc = procs.spawn(
                argv,
                cwd=cwd,
                env=env,
                stdout=log.stdout,
                stderr=log.stderr,
                append=append,
                stdin_data=stdin_data,
                user=launch.user if view is not None else None,
                pass_fds=tuple(pass_fds) + launch.pass_fds,
                join=guard.join_fds() if guard else (),
            )
        finally:
            launch.close()
            if guard is not None:
                guard.spawned()
        return proc, guard

    def _sandboxed(
        self,
        argv: list[str],
        view: TreeView,
        files: dict[str, Path] | None,
        network: bool,
        launch: LaunchFds,
        log: CheckLog,
        append: bool,
    ) -> tuple[list[str], int]:
        """The check's command line in its sandbox, and the bytes its logs already hold (an
        appended step's output limit counts from there)."""
        ctx = self.ctx
        wrapped = ctx.sandbox.wrap(
            argv,
            view,
            files=files,
            network=network,
            limits=ctx.limits,
            launch=launch,
            task=ctx.task_view.root if ctx.task_view else None,
        )
        return wrapped, sum(p.stat().st_size for p in (log.stdout, log.stderr) if append and p.exists())

    def _hand(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        log: CheckLog,
        append: bool,
        view: TreeView,
        files: dict[str, Path] | None,
        network: bool,
        stdin_data: bytes | None,
        pass_fds: tuple[int, ...],
    ) -> tuple[subprocess.Popen[bytes], Guard]:
        """:meth:`_spawn` of a check through the guard waiting for it (warmguard.py): the
        same command line, fds, uid and limits; the next guard starts while it runs."""
        ctx, spares = self.ctx, self.spares
        assert spares is not None
        launch = ctx.sandbox.launch(files)
        try:
            argv, base = self._sandboxed(argv, view, files, network, launch, log, append)
            for attempt in (1, 2):  # a guard that died waiting: one started for the check
                warm = spares.take()
                guard = Guard(ctx.limits, (log.stdout, log.stderr), base=base, cgroups=warm.cgroups)
                try:
                    proc = warm.hand(
                        argv,
                        cwd=cwd,
                        env=env,
                        stdout=log.stdout,
                        stderr=log.stderr,
                        append=append,
                        stdin_data=stdin_data,
                        user=launch.user,
                        pass_fds=tuple(pass_fds) + launch.pass_fds,
                    )
                    break
                except OSError:
                    warm.drop()
                    if attempt == 2:
                        raise
        finally:
            launch.close()
        asyncio.get_running_loop().call_soon(spares.refill)
        return proc, guard

    async def _wait(
        self,
        check: Check,
        pid: int,
        waiter: asyncio.Task[int],
        watcher: asyncio.Task[str] | None,
        guard: Guard | None,
        end: ProcessEnd,
        timeout: float | None,
    ) -> AsyncGenerator[CheckHeartbeat, None]:
        """Wait for the process's end, a limit, the timeout or shutdown (killing its group
        on the last three), with a heartbeat event every ``heartbeat`` seconds meanwhile."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = None if timeout is None else start + timeout
        next_beat = start + self.ctx.heartbeat
        while True:
            until = next_beat if deadline is None else min(next_beat, deadline)
            watched = {waiter} if watcher is None else {waiter, watcher}
            done, _ = await asyncio.wait(
                watched, timeout=max(0.0, until - loop.time()), return_when=asyncio.FIRST_COMPLETED
            )
            if waiter in done:
                end.returncode = waiter.result()
                if guard is not None:
                    end.limit = guard.check()
                return
            if watcher is not None and watcher in done:
                end.limit = watcher.result()
                procs.kill_group(pid)
                end.returncode = await waiter
                return
            end.timed_out = deadline is not None and loop.time() >= deadline
            if end.timed_out or self.ctx.closing:
                procs.kill_group(pid)
                end.returncode = await waiter
                return
            next_beat += self.ctx.heartbeat
            yield CheckHeartbeat(check, round(loop.time() - start, 1))

    async def _settle(self, pid: int, guard: Guard | None, end: ProcessEnd, token: str) -> None:
        """After the process ended: kill what is left of its group, sweep escapees after a
        timeout, kill or limit, and cut an over-long output once every writer is gone."""
        procs.kill_group(pid)
        if end.timed_out or self.ctx.closing or end.limit:
            await procs.sweep(token)
        if guard is not None and end.limit == "output":
            # Every writer is gone now (the sandbox's pid namespace died with it).
            await asyncio.to_thread(guard.settle)
            guard.cut_output()


def as_view(tree: Path | TreeView) -> TreeView:
    """A host folder as the view that binds it read-write; a view as it is."""
    return tree if isinstance(tree, TreeView) else TreeView.bind(tree)


def _watcher(guard: Guard | None, pid: int) -> asyncio.Task[str] | None:
    """With a guard: its watchdog started, and a task that ends when a limit is hit."""
    if guard is None:
        return None
    guard.start_watchdog(pid)
    return asyncio.get_running_loop().create_task(_watch(guard, pid))


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
