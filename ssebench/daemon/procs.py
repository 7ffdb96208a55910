"""Run a check's command as a killable unit, and leave nothing of it behind.

Each command runs in its own session (so its process group can be killed whole) with
stdout and stderr written by the child straight into files: the daemon never reads a
check's output, so a check printing gigabytes costs it no memory. A process that
escapes the group (``setsid``, double fork) is re-parented to us because the daemon
makes itself a *child subreaper* (``PR_SET_CHILD_SUBREAPER``); after every command
we kill and reap every child we did not start on purpose.

Children are started with a plain ``subprocess.Popen`` in the event-loop thread and
awaited through a pidfd, not through asyncio's child watcher: that way the set of
children we started is updated in the same step as the fork, and a sweep (which
also runs in the loop thread) can never mistake a just-started child for a leftover.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import psutil

from ssebench.daemon import guard

_PR_SET_CHILD_SUBREAPER = 36
TOKEN_VAR = "SSEBENCH_CHECK_TOKEN"

_subreaper = False
# Pids of children we started and have not reaped yet: a sweep never touches these.
_managed: set[int] = set()
# Reaper tasks started from cancellation paths; kept so they are not garbage-collected.
_background: set[asyncio.Task[None]] = set()


def enable_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); True on success.

    Only processes that own all their children (the daemon, ``ssebench grade``, the
    entrypoint) call it.
    """
    global _subreaper
    if sys.platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return False
    _subreaper = True
    return True


def spawn(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout: Path,
    stderr: Path,
    append: bool = False,
    stdin_data: bytes | None = None,
    user: tuple[int, int] | None = None,
    pass_fds: tuple[int, ...] = (),
    join: tuple[int, ...] = (),
) -> subprocess.Popen[bytes]:
    """Start *argv* in a new session, stdin empty, output straight into two files.

    *pass_fds*: fds of ours the command inherits (the build's trace file, for strace).

    It runs under :mod:`ssebench.daemon.guard`, so it dies with us even if we are
    killed with SIGKILL. With *user* (uid, gid) the command runs as that host user (the
    guard drops to it just before the exec); *pass_fds* reach the command. *join*: fds of
    ``cgroup.procs`` files the guard joins before it starts the command (and closes).
    """
    mode = "ab" if append else "wb"
    with open(stdout, mode) as out, open(stderr, mode) as err:
        proc = subprocess.Popen(
            guard.wrap(argv, user=user, join=join),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL if stdin_data is None else subprocess.PIPE,
            stdout=out,
            stderr=err,
            start_new_session=True,
            close_fds=True,
            pass_fds=pass_fds + join,
        )
    _managed.add(proc.pid)
    if stdin_data is not None:
        # A pipe, never a file: the payload (the intent diff) is not visible by any path.
        threading.Thread(target=_feed, args=(proc, stdin_data), daemon=True).start()
    return proc


def own(pid: int) -> None:
    """*pid* is a child the daemon started on purpose and waits for (a guard started
    ahead of its check: warmguard.py): no sweep kills it."""
    _managed.add(pid)


def disown(pid: int) -> None:
    """*pid* (see :func:`own`) was reaped by its starter."""
    _managed.discard(pid)


@contextlib.contextmanager
def managed(pid: int) -> Iterator[None]:
    """*pid* is the daemon's own child, waited for by its starter: no sweep kills it
    meanwhile (a snapshot's git may run while another run ends and sweeps)."""
    _managed.add(pid)
    try:
        yield
    finally:
        _managed.discard(pid)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(OSError):
        proc.stdin.write(data)
    with contextlib.suppress(OSError):
        proc.stdin.close()


async def wait_exit(proc: subprocess.Popen[bytes]) -> int:
    """Wait for *proc* to exit without blocking the loop, reap it, return its status."""
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd (old kernel): poll
        while proc.poll() is None:
            await asyncio.sleep(0.005)
    else:
        try:
            if proc.poll() is None:
                ready: asyncio.Future[None] = loop.create_future()

                def wake() -> None:
                    if not ready.done():
                        ready.set_result(None)

                loop.add_reader(fd, wake)
                try:
                    await ready
                finally:
                    loop.remove_reader(fd)
        finally:
            os.close(fd)
    code = proc.wait()
    _managed.discard(proc.pid)
    return code


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by *pid* (its session), if any member is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_now(proc: subprocess.Popen[bytes], token: str) -> None:
    """Kill a command and everything it started, without awaiting (cancellation paths).

    Reaping it and sweeping its escaped descendants continue in a task of their own,
    outside the cancelled scope.
    """
    kill_group(proc.pid)
    _sweep_round(token)
    with contextlib.suppress(RuntimeError):
        task = asyncio.get_running_loop().create_task(_reap_later(proc, token))
        _background.add(task)
        task.add_done_callback(_background.discard)


async def _reap_later(proc: subprocess.Popen[bytes], token: str) -> None:
    await wait_exit(proc)
    kill_group(proc.pid)
    await sweep(token)


async def sweep(token: str, *, patience: float = 2.0) -> int:
    """Kill and reap every leftover process of our checks; returns how many were found.

    As subreaper, every child of ours that we did not start on purpose is a leftover
    of a check (an orphan re-parented to us). Killing one re-parents its own children
    to us, so rounds repeat until none is left. Each round is synchronous, so no spawn
    can interleave with it.
    """
    found = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    while True:
        n = _sweep_round(token)
        found += n
        if n == 0 or loop.time() > deadline:
            return found
        await asyncio.sleep(0.001)


def sweep_sync(token: str, *, patience: float = 2.0) -> int:
    """:func:`sweep` for shutdown, when no loop runs any more."""
    import time

    found = 0
    deadline = time.monotonic() + patience
    while (n := _sweep_round(token)) and time.monotonic() < deadline:
        found += n
        time.sleep(0.001)
    return found


def _sweep_round(token: str) -> int:
    if not _subreaper:
        return _sweep_by_token(token)
    try:
        children = [c for c in psutil.Process().children() if c.pid not in _managed]
    except psutil.Error:
        return 0
    for child in children:
        _kill_tree(child)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child.pid, os.WNOHANG)
    return len(children)


def _kill_tree(proc: psutil.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        pgid = os.getpgid(proc.pid)
        if pgid != os.getpgrp():
            os.killpg(pgid, signal.SIGKILL)
    try:
        targets = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        targets = [proc]
    for p in targets:
        with contextlib.suppress(psutil.Error):
            p.kill()


def _sweep_by_token(token: str) -> int:
    """Without subreaper rights: find the check's processes by the token they inherited."""
    me = os.getpid()
    found = 0
    for p in psutil.process_iter():
        if p.pid == me:
            continue
        with contextlib.suppress(psutil.Error):
            if p.environ().get(TOKEN_VAR) == token:
                p.kill()
                found += 1
    return found
