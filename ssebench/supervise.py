"""Child processes of ours: start, stop, wait until ready, read a log's tail. One place.

Used by the entrypoint (ssebench/container/), ``ssebench up|demo`` (server/stack.py),
Docker's sidecar wait and the tests' daemon helper. Every child runs in its own session
(so its own process group) with empty stdin: a check, a CLI or a server may start
processes of its own, and signalling the whole group is the only way to be sure nothing
outlives the run. Readiness is polled on the real endpoint, and a child that dies while
we wait is reported at once with its own last words rather than after the timeout.
(The daemon's own check processes are supervised by ssebench/daemon/procs.py, on its
event loop.)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, TypeVar

STOP_GRACE_SECONDS = 10.0
TAIL_BYTES = 64 * 1024
_PR_SET_PDEATHSIG = 1
T = TypeVar("T")


def ssebench_argv(*args: str) -> list[str]:
    """The ``ssebench`` command run by this same interpreter (no PATH lookup)."""
    return [sys.executable, "-c", "from ssebench.cli import main; main()", *args]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (for a child server to bind)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def open_log(path: Path) -> BinaryIO:
    """A log file of ours: created exclusively, never through a symlink."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(path, flags, 0o644), "wb", buffering=0)


def tail_lines(source: Path | IO[bytes], lines: int | None = 20, max_bytes: int = TAIL_BYTES) -> list[str]:
    """The last *lines* lines (None: all) of a file, reading at most its last *max_bytes*.

    A line cut by the *max_bytes* window is left out; a file that cannot be read has none.
    """
    try:
        if isinstance(source, Path):
            with source.open("rb") as stream:
                return tail_lines(stream, lines, max_bytes)
        size = source.seek(0, os.SEEK_END)
        source.seek(max(0, size - max_bytes))
        data = source.read()
    except OSError:
        return []
    found = data.decode("utf-8", errors="replace").rstrip("\n").split("\n") if data.strip(b"\n") else []
    if size > max_bytes and found:
        found = found[1:]
    return found if lines is None else found[-lines:]


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def popen(
    argv: Sequence[str], env: Mapping[str, str] | None = None, *, die_with_parent: bool = False, **kw: Any
) -> subprocess.Popen[bytes]:
    """*argv* in a new session with empty stdin; *die_with_parent*: SIGTERM if we die."""
    return subprocess.Popen(
        list(argv),
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=_die_with_parent if die_with_parent else None,
        **kw,
    )


def signal_group(proc: subprocess.Popen[Any], signum: int) -> None:
    """Send *signum* to the child's whole process group (gone already: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


def stop(proc: subprocess.Popen[Any], grace: float = STOP_GRACE_SECONDS) -> int | None:
    """SIGTERM the group, SIGKILL what is left after *grace* seconds; reap the leader.

    Returns its exit status (None only for an unkillable leader)."""
    if proc.poll() is None:
        signal_group(proc, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    # Members may outlive the leader (a daemonised grandchild): kill the group.
    signal_group(proc, signal.SIGKILL)
    try:
        return proc.wait(timeout=max(grace, 2.0))  # KILL is immediate: reap it even with no grace
    except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
        return None


@dataclass
class Child:
    """A started child: its name (for messages), process and log file."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path | None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def signal(self, signum: int) -> None:
        signal_group(self.proc, signum)

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> int | None:
        return stop(self.proc, grace)

    def tail(self, lines: int = 20) -> list[str]:
        return tail_lines(self.log, lines) if self.log else []


def spawn(
    name: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    log: Path | None,
    cwd: Path | None = None,
    stdout: int | IO[bytes] | None = None,
) -> Child:
    """Start *argv* (see :func:`popen`); its output goes to *log* (stdout and stderr
    together) unless *stdout* is given, in which case only stderr goes to the log."""
    handle: int | IO[bytes] = open_log(log) if log else subprocess.DEVNULL
    try:
        proc = popen(
            argv,
            env,
            cwd=cwd,
            stdout=stdout if stdout is not None else handle,
            stderr=handle if stdout is not None else subprocess.STDOUT,
        )
    finally:
        if not isinstance(handle, int):
            handle.close()
    return Child(name, proc, log)


def stop_all(children: Sequence[Child], grace: float = STOP_GRACE_SECONDS) -> None:
    """Stop several children at once: one shared grace period, not one each."""
    for child in children:
        if child.running():
            child.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for child in children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    for child in children:
        child.stop(0.0)  # SIGKILL whatever is left of each group at once (the grace is spent), reap


def kill_strays(keep: set[int], spare: Sequence[Child] = ()) -> list[str]:
    """SIGKILL every descendant of ours not in *keep* nor in the process tree of a *spare*
    child; returns their command lines."""
    import psutil

    keep = set(keep)
    for child in spare:
        with contextlib.suppress(psutil.Error):
            leader = psutil.Process(child.pid)
            keep.add(leader.pid)
            keep.update(p.pid for p in leader.children(recursive=True))
    strays = [p for p in psutil.Process().children(recursive=True) if p.pid not in keep]
    names = []
    for proc in strays:
        with contextlib.suppress(psutil.Error):
            names.append(" ".join(proc.cmdline()) or proc.name())
            proc.kill()
    psutil.wait_procs(strays, timeout=5)
    return names


def wait_for_exit(child: Child, timeout: float, interrupted: Callable[[], bool]) -> bool:
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


# -- ready yet? -------------------------------------------------------------------------------


class StartupError(RuntimeError):
    """A part did not come up: the message plus the last lines of its log."""

    def __init__(self, message: str, log_tail: Sequence[str] = ()) -> None:
        self.message = message
        self.log_tail = list(log_tail)
        text = message
        if self.log_tail:
            text += "\nLast lines of its log:\n" + "\n".join("  " + line for line in self.log_tail)
        super().__init__(text)


def exited(proc: subprocess.Popen[Any] | None) -> Callable[[], str | None]:
    """For :func:`wait_until`: how *proc* ended before it was ready, or None while it runs."""

    def gone() -> str | None:
        if proc is None or proc.poll() is None:
            return None
        return f"exited with status {proc.returncode} before it was ready"

    return gone


def wait_until(
    probe: Callable[[], T | None],
    *,
    what: str,
    timeout: float,
    where: str = "",
    deadline: float | None = None,
    gone: Callable[[], str | None] = lambda: None,
    tail: Callable[[], list[str]] = list,
    interrupted: Callable[[], bool] = lambda: False,
    poll: float = 0.05,
) -> tuple[T, float]:
    """Poll *probe* until it answers (not None/False); its answer and the seconds it took.

    Raises :class:`StartupError` "WHAT exited ..." at once when *gone* says the part
    died, "WHAT did not answer [WHERE] within N s" after *timeout* (or at *deadline*),
    and when *interrupted()*; *tail* gives the part's last log lines for the message.
    """
    started = time.monotonic()
    end = deadline if deadline is not None else started + timeout
    while True:
        died = gone()
        if died:
            raise StartupError(f"{what} {died}", tail())
        answer = probe()
        if answer is not None and answer is not False:
            return answer, time.monotonic() - started
        if interrupted():
            raise StartupError(f"interrupted while waiting for {what}")
        if time.monotonic() >= end:
            raise StartupError(f"{what} did not answer{' ' + where if where else ''} within {timeout:.0f} s", tail())
        time.sleep(poll)


def wait_for_daemon(sock: Path, *, what: str, timeout: float, **kw: Any) -> tuple[dict[str, Any], float]:
    """The daemon's ``GET /health`` answer on *sock* once it is 200, and the seconds it
    took (:func:`wait_until` for the rest): the one wait for the daemon. A path too long
    for a Unix socket could never answer: StartupError at once, not after *timeout*."""
    import httpx

    from ssebench.socketdirs import socket_too_long

    if (why := socket_too_long(sock)) is not None:
        raise StartupError(f"{what} cannot be reached: {why}")

    with httpx.Client(transport=httpx.HTTPTransport(uds=str(sock)), base_url="http://daemon", timeout=2.0) as client:

        def health() -> dict[str, Any] | None:
            try:
                answer = client.get("/health")
                return answer.json() if answer.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                return None

        return wait_until(health, what=what, timeout=timeout, **kw)


def wait_for_http(url: str, *, what: str, timeout: float, **kw: Any) -> float:
    """Seconds until ``GET url`` answered 200 (a server's health route)."""
    import httpx

    with httpx.Client(timeout=2.0) as client:

        def ok() -> bool:
            with contextlib.suppress(httpx.HTTPError):
                return client.get(url).status_code == 200
            return False

        return wait_until(ok, what=what, timeout=timeout, **kw)[1]


class HeldOutput(threading.Thread):
    """A child's output pipe, held back until :meth:`release` and then copied live to
    our stderr: a child that fails to start is reported by one line (its own, from
    :meth:`lines`, or ours), never its line and then ours."""

    def __init__(self, stream: IO[bytes], limit: int = 20) -> None:
        super().__init__(name="held-output", daemon=True)
        self._stream = stream
        self._held: deque[bytes] = deque(maxlen=limit)
        self._live = False
        self._lock = threading.Lock()
        self.start()

    def run(self) -> None:
        for line in self._stream:
            with self._lock:
                if self._live:
                    _echo(line)
                else:
                    self._held.append(line)

    def release(self) -> None:
        """From now on the output goes to our stderr, starting with what was held."""
        with self._lock:
            self._live = True
            for line in self._held:
                _echo(line)
            self._held.clear()

    def lines(self, timeout: float = 5.0) -> list[str]:
        """What the child wrote before it ended (waits up to *timeout* for its pipe's end)."""
        self.join(timeout)
        with self._lock:
            return [line.decode("utf-8", "replace").rstrip("\n") for line in self._held]


def _echo(line: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(line.decode("utf-8", "replace"))
        sys.stderr.flush()


# -- processes marked by an environment variable (ssebench jobs) --------------------------------


def marked(name: str, value: str) -> list[int]:
    """Pids of our user's processes whose environment holds NAME=VALUE (never our own).

    ``ssebench jobs`` marks each run's processes so a run's leftovers (a daemon whose
    ``ssebench run`` was killed -9) are found again, on cancel and on resume."""
    needle = f"{name}={value}".encode() + b"\0"
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as stream:
                environ = stream.read() + b"\0"
        except OSError:
            continue  # gone, or not ours
        if environ.startswith(needle) or b"\0" + needle in environ:
            found.append(int(entry.name))
    return found


def kill_marked(name: str, value: str) -> int:
    """SIGKILL every process :func:`marked` finds; how many there were."""
    pids = marked(name, value)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return len(pids)
