"""A check's guard: the check dies with the daemon, even after ``kill -9`` of the daemon.

The daemon kills a check's process group on timeout, cancel and shutdown, and as child
subreaper it collects what escaped the group. None of that happens when the daemon
itself is killed with SIGKILL: ``PR_SET_PDEATHSIG`` would stop only the first process
(it is not inherited across ``fork``), and escaped processes are re-parented past the
dead daemon. So each command runs under this small guard::

    daemon ─ guard (child subreaper, watches the daemon through a pidfd) ─ bash -c ...

The guard is a child subreaper too, so everything the command starts, ``setsid`` and
double forks included, stays below it. When the command ends, the guard exits with
the same status, and what it left behind is re-parented to the daemon, which sweeps
it as before. When the daemon dies first, the guard kills every process below it,
round after round until none is left, then exits. The guard shares the command's
process group, so the daemon's group kill takes both at once.

This file runs as a script (``python -I -S guard.py PARENT_PID -- ARGV...``) and
imports only the standard library: about 10 ms per command. With the bwrap sandbox,
``--die-with-parent`` plus the PID namespace do the same inside; the guard is kept
on both paths, so there is one rule.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import select
import signal
import sys
import time
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
KILL_PATIENCE = 5.0


def wrap(argv: list[str], parent: int | None = None, user: tuple[int, int] | None = None) -> list[str]:
    """*argv* run under the guard of process *parent* (default: this process); with
    *user* (uid, gid) the command runs as that host user, the guard as the caller."""
    parent = os.getpid() if parent is None else parent
    as_user = ["--user", f"{user[0]}:{user[1]}"] if user is not None else []
    return [sys.executable, "-I", "-S", str(Path(__file__).resolve()), str(parent), *as_user, "--", *argv]


def _become(user: str, argv: list[str]) -> int | None:
    """Drop to *user* ("uid:gid", no supplementary groups) in the command's process; an
    fd of the program opened before, so a program the user cannot reach by its path
    (a venv under /root) still starts. Exits 126 when the switch fails."""
    uid, gid = (int(x) for x in user.split(":"))
    fd = None
    if os.path.isabs(argv[0]):
        with contextlib.suppress(OSError):
            fd = os.open(argv[0], os.O_RDONLY | os.O_CLOEXEC)
            if os.pread(fd, 2, 0) == b"#!":  # a script's interpreter reads it from /dev/fd/N
                os.set_inheritable(fd, True)
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as exc:
        sys.stderr.write(f"ssebench guard: cannot run as uid {uid}: {exc.strerror}\n")
        os._exit(126)
    if fd is not None and os.access(argv[0], os.X_OK):
        os.close(fd)  # reachable by its path: exec it as usual
        return None
    return fd


# ----------------------------------------------------------------------- the guard itself


def _prctl(option: int, value: int) -> bool:
    with contextlib.suppress(Exception):
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    return False


def _children() -> list[int]:
    me = os.getpid()
    try:
        text = Path(f"/proc/{me}/task/{me}/children").read_text()
    except OSError:
        return _children_by_scan(me)
    return [int(p) for p in text.split()]


def _children_by_scan(me: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(entry))
    return found


def _group_members(pgid: int) -> list[int]:
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me:
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                fields = stat.rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    found.append(int(entry))
    return found


def _reap() -> dict[int, int]:
    """Reap every exited child; their statuses by pid."""
    reaped: dict[int, int] = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped[pid] = status


def _kill_everything() -> None:
    """Kill every process below us and in our group, round after round, until none is left."""
    own_group = os.getpgrp()
    deadline = time.monotonic() + KILL_PATIENCE
    while True:
        targets = set(_children()) | set(_group_members(own_group))
        if not targets:
            return
        for pid in targets:
            with contextlib.suppress(OSError):
                pgid = os.getpgid(pid)
                if pgid != own_group:
                    os.killpg(pgid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
        _reap()
        if time.monotonic() > deadline:
            return


def _exit_like(status: int) -> None:
    """End this process the way the command ended (same exit code or signal)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(Exception):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
            os.kill(os.getpid(), sig)
            time.sleep(1)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def main(args: list[str]) -> None:
    user = None
    if len(args) > 2 and args[1] == "--user":
        user = args[2]
        args = [args[0], *args[3:]]
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: guard.py PARENT_PID [--user UID:GID] -- ARGV...\n")
        os._exit(2)
    parent = int(args[0])
    argv = args[2:]
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    try:
        parent_fd: int | None = os.pidfd_open(parent)
    except (AttributeError, OSError):
        parent_fd = None
        # No pidfd (old kernel): at least the signal, and a poll of our parent below.
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        signal.signal(signal.SIGTERM, lambda *_: None)
    if os.getppid() != parent:  # the daemon died before we could watch it
        os._exit(137)

    try:
        child = os.fork()
    except OSError as exc:
        sys.stderr.write(f"ssebench guard: cannot start the command: {exc}\n")
        os._exit(126)
    if child == 0:
        # Python ignores these; an ignored signal stays ignored across exec (``yes |
        # head`` would then print "Broken pipe" instead of dying quietly).
        for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        try:
            program = _become(user, argv) if user is not None else None
            if program is not None:
                os.execve(program, argv, os.environ)
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"ssebench guard: {argv[0]}: {exc.strerror}\n")
        os._exit(127)

    watch = [parent_fd] if parent_fd is not None else []
    with contextlib.suppress(OSError):
        watch.append(os.pidfd_open(child))
    while True:
        try:
            ready, _, _ = select.select(watch, [], [], 1.0)
        except InterruptedError:
            ready = []
        statuses = _reap()  # also orphans re-parented to us while the command runs
        if child in statuses:
            _exit_like(statuses[child])
        if (parent_fd is not None and parent_fd in ready) or os.getppid() != parent:
            _kill_everything()
            os._exit(137)


if __name__ == "__main__":
    main(sys.argv[1:])
