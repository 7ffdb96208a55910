"""A local daemon + server pair as child processes, for ``up``, ``demo``, tests and benchmarks.

Each child gets its own session (so its whole process group can be stopped) and is
killed if we die (``PR_SET_PDEATHSIG``), so nothing outlives the command that
started it. Readiness is polled on the real endpoints: the daemon's ``/health`` on
its socket, the server's health route over HTTP. The mechanics are
:mod:`ssebench.supervise`'s; this module is the daemon + server pair.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ssebench.settings import DEFAULT_MCP_HOST, DEFAULT_MCP_PATH
from ssebench.supervise import (
    StartupError,
    exited,
    free_port,
    popen,
    ssebench_argv,
    stop,
    tail_lines,
    wait_for_daemon,
    wait_for_http,
)

StackError = StartupError  # a child did not come up; the message says which and why


def start(argv: Sequence[str], env: Mapping[str, str] | None = None, **kw: object) -> subprocess.Popen[bytes]:
    """A child of ``up``/``demo``/the tests: own session, no stdin, killed if we die."""
    return popen(argv, env, die_with_parent=True, **kw)


def wait_daemon(sock: Path, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    wait_for_daemon(sock, what="the daemon", where=f"on {sock}", timeout=timeout, gone=exited(proc))


def wait_server(url: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    wait_for_http(url, what="the server", where=f"at {url}", timeout=timeout, gone=exited(proc), poll=0.02)


@dataclass
class Stack:
    """A running daemon (on ``socket``) and server (at ``url``)."""

    socket: Path
    port: int
    daemon: subprocess.Popen[bytes] | None = None
    server: subprocess.Popen[bytes] | None = None
    path: str = DEFAULT_MCP_PATH
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{DEFAULT_MCP_HOST}:{self.port}{self.path}"

    @property
    def health_url(self) -> str:
        return f"http://{DEFAULT_MCP_HOST}:{self.port}/healthz"

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
    files = {name: open(path, "xb") for name, path in outputs.items()}
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
            output = "\n".join(tail_lines(outputs[which], None, max_bytes=4000))
            raise StackError(f"{exc}\n{output}") from None
        yield stack
    finally:
        stack.stop()
        for f in files.values():
            f.close()
