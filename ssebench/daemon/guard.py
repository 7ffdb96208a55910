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

Runs as a script (``python -I -S guard.py PARENT_PID -- ARGV...``), importing only
small built-in modules (pathlib, contextlib, typing, signal's enums cost ~15 ms a
check). With bwrap, ``--die-with-parent`` and the PID namespace do the same inside; the
guard is kept on both paths: one rule. ``--join FD,...``: the check's ``cgroup.procs``
files, joined in a thread before the command starts (a join waits ~13 ms for the
kernel in cgroup v1; in the daemon's ``Popen`` it blocked the event loop). ``--wait
FD``: the command comes later, on a socket (warmguard.py).
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
    from collections.abc import Mapping
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
        with _Quiet(OSError):
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
    try:
        import ctypes

        return bool(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0)
    except Exception:
        return False


class _Quiet:
    """``contextlib.suppress`` (whose import costs ~4 ms of every check's start)."""

    def __init__(self, *kinds: type[BaseException]) -> None:
        self.kinds = kinds

    def __enter__(self) -> None: ...

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> bool:
        return kind is not None and issubclass(kind, self.kinds)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _join(fds: list[int], done: _thread.LockType, failed: list[str]) -> None:
    """Join the cgroups of *fds* (``cgroup.procs``; a thread); closed: the command never holds one."""
    try:
        for fd in fds:
            os.write(fd, b"0")
    except OSError as exc:
        failed.append(exc.strerror or str(exc))
    finally:
        for fd in fds:
            with _Quiet(OSError):
                os.close(fd)
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
            with _Quiet(OSError, ValueError, IndexError):
                stat = _read(f"/proc/{entry}/stat")
                if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(entry))
    return found


def _group_members(pgid: int) -> list[int]:
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me:
            with _Quiet(OSError, ValueError, IndexError):
                fields = _read(f"/proc/{entry}/stat").rsplit(")", 1)[1].split()
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
            with _Quiet(OSError):
                pgid = os.getpgid(pid)
                if pgid != own_group:
                    os.killpg(pgid, signal.SIGKILL)
            with _Quiet(OSError):
                os.kill(pid, signal.SIGKILL)
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


class _Command:
    """What the guard starts: from its own arguments, or (``--wait``) from the daemon."""

    def __init__(self, argv: list[str], user: str | None) -> None:
        self.argv = argv
        self.user = user
        self.env: dict[str, str] | None = None  # None: the guard's own
        self.fds: dict[int, int] = {}  # the command's fd number -> the guard's fd


def _options(args: list[str]) -> tuple[int, list[int], _Command, int | None]:
    """PARENT_PID [--user UID:GID] [--join FD,...] (-- ARGV... | --wait FD) (exits 2 when malformed)."""
    opts: dict[str, str] = {}
    rest = args[1:]
    while len(rest) > 1 and rest[0] in ("--user", "--join", "--wait") and rest[0] not in opts:
        opts[rest[0]] = rest[1]
        rest = rest[2:]
    waiting = "--wait" in opts and not rest
    if not args or not waiting and (len(rest) < 2 or rest[0] != "--" or "--wait" in opts):
        sys.stderr.write("usage: guard.py PARENT_PID [--user UID:GID] [--join FD,...] (-- ARGV... | --wait FD)\n")
        os._exit(2)
    joins = [int(fd) for fd in opts["--join"].split(",")] if "--join" in opts else []
    wait = int(opts["--wait"]) if waiting else None
    return int(args[0]), joins, _Command(rest[1:], opts.get("--user")), wait


def _receive(sock_fd: int, parent: int, parent_fd: int | None) -> _Command:
    """Wait for the command on *sock_fd*: a length-prefixed ``marshal`` of argv, env, cwd, user,
    fd numbers, with the fds. Exits 137 when the daemon dies first, 0 when it drops us."""
    import _socket
    import array
    import marshal

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, sock_fd)
    watch = [sock_fd] if parent_fd is None else [sock_fd, parent_fd]
    while True:
        try:
            ready, _, _ = select.select(watch, [], [], 1.0)
        except InterruptedError:
            ready = []
        if (parent_fd is not None and parent_fd in ready) or os.getppid() != parent:
            os._exit(137)
        if sock_fd in ready:
            break
    data, ancillary, _, _ = sock.recvmsg(1 << 16, _socket.CMSG_SPACE(64 * 4), _socket.MSG_CMSG_CLOEXEC)
    fds = array.array("i")
    for level, kind, raw in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds.frombytes(raw[: len(raw) - len(raw) % fds.itemsize])
    size = int.from_bytes(data[:8], "big") if len(data) >= 8 else 0
    payload = data[8:]
    if len(payload) < size:  # the rest, whole (less only when the daemon is gone)
        payload += sock.recv(size - len(payload), _socket.MSG_WAITALL)
    if not size or len(payload) < size:
        os._exit(0)  # dropped unused (or the daemon is gone)
    sock.close()
    message = marshal.loads(payload)  # from the daemon, our parent: trusted
    command = _Command(message["argv"], message["user"])
    command.env = _coerced(message["env"])
    command.fds = dict(zip(message["fds"], fds, strict=True))
    os.chdir(message["cwd"])
    for number in (0, 1, 2):  # the guard's own messages go to the check's log too
        if number in command.fds:
            os.dup2(command.fds.pop(number), number)
    return command


def _coerced(env: dict[str, str]) -> dict[str, str]:
    """*env* as a guard started with it passes it on: Python's start sets ``LC_CTYPE``
    when the locale it names is C (PEP 538), and the command inherits that."""
    import _locale

    if env.get("LC_ALL"):
        return env
    os.environ.clear()
    os.environ.update(env)  # setlocale reads the environment
    try:
        legacy = _locale.setlocale(_locale.LC_CTYPE, "") == "C"
    except Exception:  # _locale.Error
        legacy = True  # a locale that does not exist leaves C
    for target in ("C.UTF-8", "C.utf8", "UTF-8") if legacy else ():
        try:
            _locale.setlocale(_locale.LC_CTYPE, target)
        except Exception:  # _locale.Error
            continue
        return {**env, "LC_CTYPE": target}
    return env


def _place(fds: dict[int, int]) -> None:
    """In the command's process: each received fd at the number the command expects."""
    if not fds:
        return
    import fcntl

    top = max(fds) + 1
    moved = {number: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, top) for number, fd in fds.items()}
    for number, fd in moved.items():
        os.dup2(fd, number)


def _execvpe(argv: list[str], env: Mapping[str, str]) -> None:
    """``os.execvpe`` without its ``import warnings``: after the drop to the check's uid
    that import may be out of reach (an interpreter under /root)."""
    if os.sep in argv[0]:
        os.execve(argv[0], argv, env)
    saved: OSError | None = None
    last: OSError = FileNotFoundError(2, "No such file or directory")
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        try:
            os.execve(os.path.join(folder, argv[0]), argv, env)
        except OSError as exc:
            last = exc
            if not isinstance(exc, FileNotFoundError | NotADirectoryError):
                saved = saved or exc
    raise saved or last


def _start(command: _Command) -> int:
    """Fork and exec the command; its pid."""
    try:
        child = os.fork()
    except OSError as exc:
        sys.stderr.write(f"ssebench guard: cannot start the command: {exc}\n")
        os._exit(126)
    if child:
        return child
    # Python ignores these; an ignored signal stays ignored across exec (``yes |
    # head`` would then print "Broken pipe" instead of dying quietly).
    for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    argv = command.argv
    env = os.environ if command.env is None else command.env
    try:
        _place(command.fds)
        program = _become(command.user, argv) if command.user is not None else None
        if program is not None:
            os.execve(program, argv, env)
        _execvpe(argv, env)
    except OSError as exc:
        sys.stderr.write(f"ssebench guard: {argv[0]}: {exc.strerror}\n")
    os._exit(127)


def main(args: list[str]) -> None:
    parent, joins, command, wait = _options(args)
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
    if wait is not None:
        command = _receive(wait, parent, parent_fd)
    with joined:  # the command is counted from its first instruction
        if failed:
            sys.stderr.write(f"ssebench guard: cannot join the check's cgroup: {failed[0]}\n")
            os._exit(126)
    child = _start(command)
    watch = [parent_fd] if parent_fd is not None else []
    with _Quiet(OSError):
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
