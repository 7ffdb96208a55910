"""Child processes of the entrypoint: each in its own process group, logged to a file.

A check, a CLI or a server may start processes of its own; signalling the whole
group is the only way to be sure nothing outlives the run.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

STOP_GRACE_SECONDS = 10.0
TAIL_BYTES = 64 * 1024


def ssebench_argv(*args: str) -> list[str]:
    """The ``ssebench`` command run by this same interpreter (no PATH lookup)."""
    return [sys.executable, "-c", "from ssebench.cli import main; main()", *args]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (for a child server to bind)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def open_log(path: Path):  # noqa: ANN201
    """A log file of ours: created exclusively, never through a symlink."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(path, flags, 0o644), "wb", buffering=0)


@dataclass
class Child:
    name: str
    proc: subprocess.Popen
    log: Path | None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def signal(self, signum: int) -> None:
        """Send *signum* to the child's whole process group."""
        try:
            os.killpg(self.proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> int | None:
        """SIGTERM the group, SIGKILL what is left after *grace* seconds; reap the leader."""
        if self.running():
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        # Members may outlive the leader (a daemonised grandchild): kill the group.
        self.signal(signal.SIGKILL)
        try:
            return self.proc.wait(timeout=max(grace, 2.0))  # KILL is immediate: reap it even with no grace
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
            return None

    def tail(self, lines: int = 20) -> list[str]:
        return tail_lines(self.log, lines) if self.log else []


def kill_strays(keep: set[int], spare: list[Child] = ()) -> list[str]:  # type: ignore[assignment]
    """SIGKILL every descendant of ours not in *keep* nor in the process tree of a *spare*
    child; returns their command lines."""
    import psutil

    keep = set(keep)
    for child in spare:
        try:
            leader = psutil.Process(child.pid)
            keep.add(leader.pid)
            keep.update(p.pid for p in leader.children(recursive=True))
        except psutil.Error:
            pass
    me = psutil.Process()
    strays = [p for p in me.children(recursive=True) if p.pid not in keep]
    names = []
    for proc in strays:
        try:
            names.append(" ".join(proc.cmdline()) or proc.name())
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(strays, timeout=5)
    return names


def stop_all(children: list[Child], grace: float = STOP_GRACE_SECONDS) -> None:
    """Stop several children at once: one shared grace period, not one each."""
    for child in children:
        if child.running():
            child.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for child in children:
        try:
            child.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for child in children:
        child.stop(0.0)  # SIGKILL whatever is left of each group at once (the grace is spent), reap


def spawn(name: str, argv: Sequence[str], *, env: Mapping[str, str], log: Path | None,
          cwd: Path | None = None, stdout: int | IO[bytes] | None = None) -> Child:
    """Start *argv* in a new session (so a new process group) with empty stdin.

    Output goes to *log* (stdout and stderr together) unless *stdout* is given, in
    which case only stderr goes to the log.
    """
    handle = open_log(log) if log else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(
            list(argv), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
            stdout=stdout if stdout is not None else handle,
            stderr=handle if stdout is not None else subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        if log:
            handle.close()
    return Child(name, proc, log)


def wait_for_exit(child: Child, timeout: float, interrupted) -> bool:  # noqa: ANN001
    """Wait up to *timeout* seconds; False on timeout. Returns early when *interrupted()*."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return child.proc.poll() is not None
        try:
            child.proc.wait(timeout=min(remaining, 0.2))
            return True
        except subprocess.TimeoutExpired:
            if interrupted():
                return child.proc.poll() is not None


def tail_lines(path: Path, lines: int = 20) -> list[str]:
    """The last *lines* lines of a file, reading at most its last 64 KiB."""
    try:
        with path.open("rb") as stream:
            stream.seek(0, os.SEEK_END)
            size = stream.tell()
            stream.seek(max(0, size - TAIL_BYTES))
            data = stream.read()
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace").rstrip("\n")
    return text.split("\n")[-lines:] if text else []
