"""A check's guard started ahead of the check, so a check's start costs its sandbox only.

Why: every check runs under guard.py (it dies with the daemon), in fresh cgroups (its
memory and process limits). Starting that guard costs a Python interpreter (~10 ms here)
and joining the cgroups one RCU grace period of the kernel (~13 ms in cgroup v1): about
half of a ``true`` check's time. The daemon therefore keeps guards started and joined
to fresh cgroups, waiting on a socket; a check hands it its command (argv, environment,
folder, uid, and its fds: the log files, stdin, the sandbox's fds), and the next one is
started while the check runs.

What the check sees is what a guard started for it sees: the same command, environment,
folder, fds at the same numbers, uid, session and process group (the guard's), the same
cgroups made for it alone (nothing else ever joined them), and the same supervision (the
guard's pid is what the daemon waits for and kills); only the guard's own interpreter
pages, allocated before it joined, are charged to the daemon's cgroup rather than the
check's (a few MiB: cgroups move no charges on a join). A guard that is waiting runs nothing
of the agent's, holds no fd of a check, and is killed when the daemon ends or drops it.
Only the daemon (``ssebench daemon``) keeps them; in-process runners start each guard for
its check (procs.spawn), so they leave no process behind.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.daemon import guard, procs
from ssebench.daemon.limits import Cgroups, Limits, new_cgroups


def waiting_argv(sock: int, join: tuple[int, ...] = ()) -> list[str]:
    """A guard (of this process) that waits on the socket *sock* (inherited) for its
    command; it joins the cgroups of *join* at once."""
    joins = ["--join", ",".join(map(str, join))] if join else []
    script = os.path.realpath(guard.__file__)
    return [sys.executable, "-I", "-S", script, str(os.getpid()), *joins, "--wait", str(sock)]


@dataclass
class WarmGuard:
    """A started guard waiting for its command on *sock*, joined to *cgroups*."""

    proc: subprocess.Popen[bytes]
    sock: socket.socket
    cgroups: Cgroups | None

    @classmethod
    def start(cls, limits: Limits) -> WarmGuard:
        """Start a guard in fresh cgroups (joined at once, in the guard); raises OSError."""
        cgroups = new_cgroups(limits)
        joins: list[int] = []
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            joins = [os.open(p, os.O_WRONLY) for p in cgroups.procs_files()] if cgroups else []
            proc = subprocess.Popen(
                waiting_argv(theirs.fileno(), tuple(joins)),
                cwd="/",
                env={},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
                pass_fds=(theirs.fileno(), *joins),
            )
        except BaseException:
            ours.close()
            if cgroups is not None:
                cgroups.remove()
            raise
        finally:
            theirs.close()
            for fd in joins:
                os.close(fd)
        procs.own(proc.pid)
        return cls(proc, ours, cgroups)

    def hand(
        self,
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
    ) -> subprocess.Popen[bytes]:
        """Start *argv* in this guard, as :func:`procs.spawn` starts it in a new one (the
        same arguments); the guard's process. Raises OSError when the guard is gone."""
        mode = "ab" if append else "wb"
        read = write = None
        with open(stdout, mode) as out, open(stderr, mode) as err:
            numbers, fds = [1, 2, *pass_fds], [out.fileno(), err.fileno(), *pass_fds]
            if stdin_data is not None:  # a pipe, never a file (the intent diff)
                read, write = os.pipe()
                numbers, fds = [0, *numbers], [read, *fds]
            message = {
                "argv": list(argv),
                "env": dict(env),
                "cwd": str(cwd),
                "user": None if user is None else f"{user[0]}:{user[1]}",
                "fds": numbers,
            }
            payload = marshal.dumps(message)
            data = len(payload).to_bytes(8, "big") + payload
            try:
                sent = socket.send_fds(self.sock, [data], fds)
                if sent < len(data):  # (an empty send to a guard that has read it all: EPIPE)
                    self.sock.sendall(data[sent:])
            except OSError:
                for fd in (read, write):
                    if fd is not None:
                        os.close(fd)
                raise
            finally:
                self.sock.close()
        if read is not None and write is not None and stdin_data is not None:
            os.close(read)
            threading.Thread(target=_feed, args=(write, stdin_data), daemon=True).start()
        return self.proc

    def drop(self) -> None:
        """Kill and reap the unused guard; remove its cgroups."""
        self.sock.close()
        procs.kill_group(self.proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        procs.disown(self.proc.pid)
        if self.cgroups is not None:
            self.cgroups.remove()


def _feed(fd: int, data: bytes) -> None:
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:  # a pipe: blocks until git has read it
            view = view[os.write(fd, view) :]
    with contextlib.suppress(OSError):
        os.close(fd)


class Spares:
    """Guards waiting for the next checks, oldest first (see the module's docstring)."""

    def __init__(self, limits: Limits, depth: int = 2) -> None:
        """*depth*: how many wait; two, so that back-to-back short checks (the PoCs, ``git
        apply`` then the intent tests) each find one that has finished starting."""
        self.limits = limits
        self.depth = depth
        self._waiting: list[WarmGuard] = []
        self._closed = False

    def take(self) -> WarmGuard:
        """The oldest waiting guard, or one started now; raises OSError."""
        while self._waiting:
            warm = self._waiting.pop(0)
            if warm.proc.poll() is None:
                return warm
            warm.drop()
        return WarmGuard.start(self.limits)

    def refill(self) -> None:
        """Start guards until *depth* wait, unless the daemon is closing (a failure here is
        the next check's own start's to report)."""
        while len(self._waiting) < self.depth and not self._closed:
            try:
                self._waiting.append(WarmGuard.start(self.limits))
            except OSError:
                return

    def close(self) -> None:
        """Shutdown: drop the waiting guards; start no other."""
        self._closed = True
        waiting, self._waiting = self._waiting, []
        for warm in waiting:
            warm.drop()
