"""A local daemon + server pair as child processes, for ``up``, ``demo``, tests and benchmarks.

Each child gets its own session (so its whole process group can be stopped) and is
killed if we die (``PR_SET_PDEATHSIG``), so nothing outlives the command that
started it. Readiness is polled on the real endpoints: the daemon's ``/health`` on
its socket, the server's health route over HTTP.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ssebench.container.processes import free_port, ssebench_argv  # also imported from here by tests

STOP_GRACE = 10.0
_PR_SET_PDEATHSIG = 1


class StackError(RuntimeError):
    """A child did not come up; the message says which and why."""


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def start(argv: Sequence[str], env: Mapping[str, str] | None = None, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(argv),
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=_die_with_parent,
        **kw,  # type: ignore[arg-type]
    )


def stop(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> int:
    """SIGTERM the child's group, SIGKILL it after ``grace``; returns the exit status."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # anything left in the group
    return proc.wait()


def wait_daemon(sock: Path, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    transport = httpx.HTTPTransport(uds=str(sock))
    with httpx.Client(transport=transport, base_url="http://daemon", timeout=2.0) as client:
        _wait_ready(client, "/health", proc, "daemon", f"on {sock}", timeout, poll=0.05)


def wait_server(url: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    with httpx.Client(timeout=2.0) as client:
        _wait_ready(client, url, proc, "server", f"at {url}", timeout, poll=0.02)


def _wait_ready(client: httpx.Client, url: str, proc: subprocess.Popen[bytes], what: str, where: str,
                timeout: float, *, poll: float) -> None:
    """Poll ``GET url`` until it answers 200; fail at once if *proc* exits, or after *timeout*."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise StackError(f"the {what} exited with status {proc.returncode} before it was ready")
        with contextlib.suppress(httpx.HTTPError):
            if client.get(url).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise StackError(f"the {what} did not answer {where} within {timeout:.0f} s")
        time.sleep(poll)


@dataclass
class Stack:
    """A running daemon (on ``socket``) and server (at ``url``)."""

    socket: Path
    port: int
    daemon: subprocess.Popen[bytes] | None = None
    server: subprocess.Popen[bytes] | None = None
    path: str = "/mcp"
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/healthz"

    def start_daemon(self, task: Path, tree: Path | None, env: Mapping[str, str], **kw: object) -> None:
        argv = ["daemon", "--task", str(task), "--socket", str(self.socket)]
        if tree is not None:
            argv += ["--tree", str(tree)]
        self.daemon = start(ssebench_argv(*argv), env, **kw)
        wait_daemon(self.socket, self.daemon)

    def start_server(
        self, env: Mapping[str, str], log_dir: Path | None = None, extra: Sequence[str] = (), **kw: object
    ) -> None:
        argv = ["serve", "--port", str(self.port), "--path", self.path, "--daemon-socket", str(self.socket)]
        if log_dir is not None:
            argv += ["--log-dir", str(log_dir)]
        argv += list(extra)
        self.server = start(ssebench_argv(*argv), env, **kw)
        wait_server(self.health_url, self.server)

    def stop(self) -> None:
        for proc in (self.server, self.daemon):
            if proc is not None:
                stop(proc)


def _tail(path: Path, limit: int = 4000) -> str:
    """The last *limit* bytes of a child's output, without reading the whole file."""
    try:
        with path.open("rb") as stream:
            stream.seek(max(0, stream.seek(0, os.SEEK_END) - limit))
            data = stream.read()
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


@contextlib.contextmanager
def running_stack(
    task: Path,
    workdir: Path,
    *,
    tree: Path | None = None,
    difficulty: str | None = None,
    port: int | None = None,
    env: Mapping[str, str] | None = None,
    log_dir: Path | None = None,
    server_args: Sequence[str] = (),
    start_daemon: bool = True,
) -> Iterator[Stack]:
    """Daemon + server on ``task``; socket, logs and the children's output under ``workdir``.

    ``start_daemon=False`` starts only the server (the daemon can be started later
    with :meth:`Stack.start_daemon`, as when a daemon comes up after the server).

    ``workdir`` must be a private folder of ours (e.g. from ``tempfile.mkdtemp``).
    """
    environ = dict(os.environ if env is None else env)
    if difficulty is not None:
        environ["SSE_DIFFICULTY"] = difficulty
    stack = Stack(socket=workdir / "daemon.sock", port=port or free_port())
    outputs = {name: workdir / f"{name}.out" for name in ("daemon", "server")}
    files = {name: open(path, "xb") for name, path in outputs.items()}  # noqa: SIM115
    try:
        try:
            if start_daemon:
                stack.start_daemon(task, tree, environ, stdout=files["daemon"], stderr=subprocess.STDOUT)
            stack.start_server(
                environ,
                log_dir=log_dir or workdir / "logs",
                extra=server_args,
                stdout=files["server"],
                stderr=subprocess.STDOUT,
            )
        except StackError as exc:
            which = "server" if stack.server is not None else "daemon"
            raise StackError(f"{exc}\n{_tail(outputs[which])}") from None
        yield stack
    finally:
        stack.stop()
        for f in files.values():
            f.close()
