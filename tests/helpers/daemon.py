"""Start a real ``ssebench daemon`` subprocess on a temporary socket, for tests.

    from tests.helpers.daemon import running_daemon
    with running_daemon(task.file, difficulty="0") as d:
        d.get("/health").json()          # httpx.Response
        events = d.run()                 # POST /runs, every NDJSON event as a dict
        d.log(events[-1]["run_id"], "build")   # the log text

or the pytest fixture ``daemon_factory`` (tests/conftest.py), which stops every daemon
it started when the test ends. Leaving the ``with`` block sends SIGTERM (then SIGKILL
after 10 s) and asserts that the daemon and every process it had started are gone
and that the socket file was removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from ssebench.daemon import guard
from ssebench.supervise import StartupError, exited, wait_for_daemon

SSEBENCH = str(Path(sys.executable).with_name("ssebench"))
GUARD = os.path.realpath(guard.__file__)


@dataclass
class DaemonProcess:
    """A running daemon: its process, socket, and an httpx client bound to the socket."""

    proc: subprocess.Popen[bytes]
    socket: Path
    stderr_file: Path
    _clients: list[httpx.Client] = field(default_factory=list)

    def client(self, timeout: float = 60.0) -> httpx.Client:
        c = httpx.Client(transport=httpx.HTTPTransport(uds=str(self.socket)), base_url="http://daemon", timeout=timeout)
        self._clients.append(c)
        return c

    def async_client(self, timeout: float = 60.0) -> httpx.AsyncClient:
        """A new async client (close it yourself: ``async with d.async_client() as c``)."""
        return httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=str(self.socket)), base_url="http://daemon", timeout=timeout
        )

    def get(self, path: str) -> httpx.Response:
        return self.client().get(path)

    def run(self, checks: Sequence[str] | None = None, *, body: Any = None) -> list[dict[str, Any]]:
        """POST /runs and return every event; raises if the status is not 200."""
        payload = body if body is not None else ({} if checks is None else {"checks": list(checks)})
        with self.client().stream("POST", "/runs", json=payload) as r:
            r.raise_for_status()
            return [json.loads(line) for line in r.iter_lines() if line]

    def result(self, checks: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        """POST /runs; the final result's checks by name (plus ``"run_id"`` under ``"_run"``)."""
        events = self.run(checks)
        last = events[-1]
        assert last["event"] == "result", events
        out: dict[str, Any] = {c["check"]: c for c in last["checks"]}
        out["_run"] = last["run_id"]
        return out

    def log(self, run_id: str, check: str) -> str:
        r = self.get(f"/runs/{run_id}/logs/{check}")
        r.raise_for_status()
        return r.text

    def stderr(self) -> str:
        return self.stderr_file.read_text(errors="replace")

    def descendants(self) -> list[psutil.Process]:
        with contextlib.suppress(psutil.Error):
            return psutil.Process(self.proc.pid).children(recursive=True)
        return []

    def leftovers(self) -> list[psutil.Process]:
        """The daemon's descendants but the guards it keeps waiting for the next checks
        (warmguard.py, two at most): direct children, running nothing (their children count)."""
        kids = self.descendants()
        waiting = [p for p in kids if _waiting_guard(p, self.proc.pid)]
        assert len(waiting) <= 2, waiting
        return [p for p in kids if p not in waiting]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Signal the daemon, wait (SIGKILL after *timeout*), assert nothing is left."""
        for c in self._clients:
            c.close()
        self._clients.clear()
        if self.proc.poll() is None:
            kids = self.descendants()
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"daemon ignored signal {sig}; stderr:\n{self.stderr()}") from None
            assert_gone(kids)
        return self.proc.returncode


def assert_gone(procs: Sequence[psutil.Process], timeout: float = 3.0) -> None:
    """Assert that none of *procs* is alive (zombies count as alive: nobody reaped them)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in procs if _alive(p)]
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert not alive, f"processes left behind: {[(p.pid, _cmd(p)) for p in alive]}"


def _waiting_guard(p: psutil.Process, daemon: int) -> bool:
    with contextlib.suppress(psutil.Error):
        cmd = p.cmdline()
        return p.ppid() == daemon and "--wait" in cmd and cmd[3:4] == [GUARD] and cmd[-2] == "--wait"
    return False


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running()
    except psutil.Error:
        return False


def _cmd(p: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return " ".join(p.cmdline()) + f" [{p.status()}]"
    return "?"


_SHORT_TEMPDIRS: list[Path] = []  # made during the current test; removed after it


def short_tempdir() -> Path:
    """A fresh 0700 folder with a short path (Unix socket paths are limited to 107 bytes),
    removed after the test (:func:`remove_short_tempdirs`, an autouse fixture)."""
    path = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    _SHORT_TEMPDIRS.append(path)
    return path


def remove_short_tempdirs() -> None:
    """Remove every folder :func:`short_tempdir` made since the last call."""
    while _SHORT_TEMPDIRS:
        shutil.rmtree(_SHORT_TEMPDIRS.pop(), ignore_errors=True)


def start_daemon(
    task_file: Path | str,
    *,
    difficulty: str | None = "2",
    tree: Path | None = None,
    socket: Path | None = None,
    heartbeat: float | None = 0.2,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    wait: bool = True,
    ready_timeout: float = 15.0,
    pass_socket: bool = True,
) -> DaemonProcess:
    """Start ``ssebench daemon --task FILE`` and (with *wait*) wait until /health answers.

    ``difficulty=None`` leaves SSE_DIFFICULTY unset; ``heartbeat`` sets
    SSE_DAEMON_HEARTBEAT (``None``: unset); ``env`` adds or overrides variables.
    ``pass_socket=False`` leaves out ``--socket`` (the daemon then picks the socket
    from the environment; ``socket`` must name where it will be, for waiting).
    """
    folder = short_tempdir()
    sock = socket or folder / "d.sock"
    full_env = dict(os.environ)
    for name in ("SSE_DIFFICULTY", "SSE_DAEMON_SOCKET", "SSE_DAEMON_HEARTBEAT"):
        full_env.pop(name, None)
    if difficulty is not None:
        full_env["SSE_DIFFICULTY"] = difficulty
    if heartbeat is not None:
        full_env["SSE_DAEMON_HEARTBEAT"] = str(heartbeat)
    full_env.update(env or {})
    argv = [SSEBENCH, "daemon", "--task", str(task_file), *args]
    if pass_socket:
        argv += ["--socket", str(sock)]
    if tree is not None:
        argv += ["--tree", str(tree)]
    stderr_file = folder / "stderr.txt"
    with open(stderr_file, "wb") as err:
        proc = subprocess.Popen(argv, env=full_env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    daemon = DaemonProcess(proc, sock, stderr_file)
    if wait:
        _wait_ready(daemon, ready_timeout)
    return daemon


def _wait_ready(daemon: DaemonProcess, timeout: float) -> None:
    """The daemon's /health (ssebench.supervise's one wait); a daemon that is not ready is killed."""
    try:
        wait_for_daemon(daemon.socket, what="daemon", timeout=timeout, gone=exited(daemon.proc), poll=0.02)
    except StartupError as exc:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait()
        raise StartupError(f"{exc}:\n{daemon.stderr()}") from None


@contextlib.contextmanager
def running_daemon(task_file: Path | str, **kwargs: Any) -> Iterator[DaemonProcess]:
    """:func:`start_daemon` as a context manager: stopped (and checked) on exit."""
    daemon = start_daemon(task_file, **kwargs)
    try:
        yield daemon
    finally:
        try:
            daemon.stop()
            assert not daemon.socket.exists(), f"socket left behind: {daemon.socket}"
        finally:
            shutil.rmtree(daemon.stderr_file.parent, ignore_errors=True)


def run_ssebench(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the ``ssebench`` CLI to completion (text output captured)."""
    full_env = dict(os.environ)
    full_env.pop("SSE_DIFFICULTY", None)
    full_env.update(env or {})
    return subprocess.run(
        [SSEBENCH, *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )


def marked_processes(marker: str, *, exclude: Sequence[int] = ()) -> list[psutil.Process]:
    """Live processes whose environment has ``SSE_TEST_MARK=<marker>``.

    Start a daemon with ``env={"SSE_TEST_MARK": marker}``: every check it runs, and
    everything those start, inherit the variable, so this finds whatever is left.
    """
    found = []
    skip = {os.getpid(), *exclude}
    for p in psutil.process_iter():
        if p.pid in skip:
            continue
        with contextlib.suppress(psutil.Error):
            if p.environ().get("SSE_TEST_MARK") == marker and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
    return found


def wait_until(predicate: Any, timeout: float = 5.0) -> bool:
    """Poll *predicate* until it holds or *timeout* seconds pass (no fixed sleeps in tests);
    its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())
