"""One check's processes: its command (a PoC, git apply of the intent diff) in the
sandbox, supervised to the end with heartbeats, limits, timeout and the sweep after."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import subprocess
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

from ssebench.checks import Check, State
from ssebench.contract import CheckHeartbeat
from ssebench.daemon import procs, tracefile
from ssebench.daemon.housekeeping import Housekeeping
from ssebench.daemon.limits import Guard, limit_note
from ssebench.daemon.logs import CheckLog, note
from ssebench.daemon.runtypes import CheckRun, Outcome, Run, RunError
from ssebench.daemon.sandbox import TASK_PATH, TREE_PATH, Launch, TreeView
from ssebench.task import Command


class CheckProcesses(Housekeeping):
    """Runs a check's processes (the runner's middle layer)."""

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

        With a *view* the process is a check's: it runs in the sandbox with *view* at ``/sse/tree``
        and within the limits (output, memory, pids); without one it is the daemon's own (``cp``)
        and runs as is. When the process ends by itself, what is left of its process group is
        killed at once; processes that left the group are swept after the run (see ``execute``).
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


def _view(tree: Path | TreeView) -> TreeView:
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
