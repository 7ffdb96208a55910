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
imports only small built-in modules (no ``pathlib``, ``contextlib`` or ``signal``'s
enums: they cost ~15 ms of a check's start; ``ctypes`` is loaded while the cgroup
join below waits). With the bwrap sandbox, ``--die-with-parent`` plus the PID
namespace do the same inside; the guard is kept on both paths, so there is one rule.

With ``--join FD,...`` (the ``cgroup.procs`` files of the check's cgroups, opened by
the daemon) the guard moves itself into the check's cgroups before it starts the
command, so everything the command starts is counted, as when the daemon joined the
child before the exec. A join in cgroup v1 waits for an RCU grace period (~10-25 ms
here): done by the daemon it blocked its event loop inside ``Popen``; done here, in a
thread, it overlaps the guard's own start.
"""

from __future__ import annotations

import _thread
import os
import select
import sys
import time

TYPE_CHECKING = False  # not typing's: importing typing costs ~8 ms of every check's start
if TYPE_CHECKING:
    import signal
else:  # the same functions and numbers, without the enums (~2.5 ms)
    import _signal as signal

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
KILL_PATIENCE = 5.0


def wrap(
    argv: list[str],
    parent: int | None = None,
    user: tuple[int, int] | None = None,
    join: tuple[int, ...] = (),
) -> list[str]:
    """*argv* run under the guard of process *parent* (default: this process); with
    *user* (uid, gid) the command runs as that host user, the guard as the caller; *join*:
    fds (inherited by the guard) of ``cgroup.procs`` files it joins before the command."""
    parent = os.getpid() if parent is None else parent
    as_user = ["--user", f"{user[0]}:{user[1]}"] if user is not None else []
    joins = ["--join", ",".join(map(str, join))] if join else []
    script = os.path.realpath(__file__)
    return [sys.executable, "-I", "-S", script, str(parent), *as_user, *joins, "--", *argv]


def _become(user: str, argv: list[str]) -> int | None:
    """Drop to *user* ("uid:gid", no supplementary groups) in the command's process; an
    fd of the program opened before, so a program the user cannot reach by its path
    (a venv under /root) still starts. Exits 126 when the switch fails."""
    uid, gid = (int(x) for x in user.split(":"))
    fd = None
    if os.path.isabs(argv[0]):
        try:
            fd = os.open(argv[0], os.O_RDONLY | os.O_CLOEXEC)
            if os.pread(fd, 2, 0) == b"#!":  # a script's interpreter reads it from /dev/fd/N
                os.set_inheritable(fd, True)
        except OSError:
            pass
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
    try:
        import ctypes

        return bool(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0)
    except Exception:
        return False


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _join(fds: list[int], done: _thread.LockType, failed: list[str]) -> None:
    """Move this process into the cgroups whose ``cgroup.procs`` are *fds* (a thread);
    the fds are closed either way: the command must never hold one."""
    try:
        for fd in fds:
            os.write(fd, b"0")
    except OSError as exc:
        failed.append(exc.strerror or str(exc))
    finally:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        done.release()


def _children() -> list[int]:
    me = os.getpid()
    try:
        text = _read(f"/proc/{me}/task/{me}/children")
    except OSError:
        return _children_by_scan(me)
    return [int(p) for p in text.split()]


def _children_by_scan(me: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = _read(f"/proc/{entry}/stat")
                if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return found


def _group_members(pgid: int) -> list[int]:
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me:
            try:
                fields = _read(f"/proc/{entry}/stat").rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    found.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
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
            try:
                pgid = os.getpgid(pid)
                if pgid != own_group:
                    os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
        _reap()
        if time.monotonic() > deadline:
            return


def _exit_like(status: int) -> None:
    """End this process the way the command ended (same exit code or signal)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
            os.kill(os.getpid(), sig)
            time.sleep(1)
        except Exception:
            pass
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _options(args: list[str]) -> tuple[int, str | None, list[int], list[str]]:
    """PARENT_PID [--user UID:GID] [--join FD,...] -- ARGV... (exits 2 when malformed)."""
    opts: dict[str, str] = {}
    rest = args[1:]
    while len(rest) > 1 and rest[0] in ("--user", "--join") and rest[0] not in opts:
        opts[rest[0]] = rest[1]
        rest = rest[2:]
    if not args or len(rest) < 2 or rest[0] != "--":
        sys.stderr.write("usage: guard.py PARENT_PID [--user UID:GID] [--join FD,...] -- ARGV...\n")
        os._exit(2)
    joins = [int(fd) for fd in opts["--join"].split(",")] if "--join" in opts else []
    return int(args[0]), opts.get("--user"), joins, rest[1:]


def main(args: list[str]) -> None:
    parent, user, joins, argv = _options(args)
    joined = _thread.allocate_lock()
    failed: list[str] = []
    if joins:  # first: the kernel's wait for the join overlaps what follows
        joined.acquire()
        _thread.start_new_thread(_join, (joins, joined, failed))
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
    with joined:  # the command is counted from its first instruction
        if failed:
            sys.stderr.write(f"ssebench guard: cannot join the check's cgroup: {failed[0]}\n")
            os._exit(126)

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
    try:
        watch.append(os.pidfd_open(child))
    except OSError:
        pass
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
