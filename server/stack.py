"""The one starter of a daemon + MCP server pair: ``up``, ``demo``, ``ssebench run`` and the
entrypoint, the tests and the benchmarks all start them through :class:`Stack`.

Each child gets its own session (so its whole process group can be stopped) and is
killed if we die (``PR_SET_PDEATHSIG``), so nothing outlives the command that started
it. Readiness is polled on the real endpoints with one deadline for both: the daemon's
``/health`` on its socket; the server's health route over HTTP, or (the entrypoint's
choice, what an agent will do next) an MCP ``initialize``. A child that exits while we
wait, a deadline passed or an interruption (the entrypoint's signals) is one
:class:`StackError` naming the part, with its log's last lines. The mechanics are
:mod:`ssebench.supervise`'s.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ssebench.settings import DEFAULT_MCP_HOST, DEFAULT_MCP_PATH
from ssebench.supervise import (
    Child,
    StartupError,
    exited,
    free_port,
    open_log,
    popen,
    ssebench_argv,
    stop,
    stop_all,
    tail_lines,
    wait_for_daemon,
    wait_for_http,
)

__all__ = ["Stack", "StackError", "free_port", "running_stack", "ssebench_argv", "start", "stop", "wait_server"]
StackError = StartupError  # a child did not come up; the message says which and why
START_TIMEOUT = 120.0  # seconds for a child of up/demo/the tests to answer; a crash is seen at once,
# and a daemon that copies its tree under a busy 2-core machine took over 30 s (seen in the e2e tests)


def start(argv: Sequence[str], env: Mapping[str, str] | None = None, **kw: Any) -> subprocess.Popen[bytes]:
    """A child: own session, no stdin, killed if we die."""
    return popen(argv, env, die_with_parent=True, **kw)


def wait_server(url: str, proc: subprocess.Popen[bytes], timeout: float = START_TIMEOUT) -> None:
    """A server's health route (*url*) answers 200."""
    wait_for_http(url, what="the server", where=f"at {url}", timeout=timeout, gone=exited(proc), poll=0.02)


def daemon_argv(task: Path | str, socket: Path, tree: Path | str | None = None) -> list[str]:
    argv = ["daemon", "--task", str(task), "--socket", str(socket)]
    return ssebench_argv(*argv, *(["--tree", str(tree)] if tree is not None else []))


@dataclass
class Stack:
    """A daemon (on ``socket``) and a server (at ``url``), started and waited for."""

    socket: Path
    port: int
    host: str = DEFAULT_MCP_HOST
    path: str = DEFAULT_MCP_PATH
    env: Mapping[str, str] | None = None  # the children's environment (None: ours)
    interrupted: Callable[[], bool] = lambda: False  # stop waiting now (a signal came)
    children: list[Child] = field(default_factory=list)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"

    @property
    def health_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/healthz"

    @property
    def daemon(self) -> subprocess.Popen[bytes] | None:
        return self._proc("daemon")

    @property
    def server(self) -> subprocess.Popen[bytes] | None:
        return self._proc("server")

    def start_daemon(
        self,
        task: Path | str,
        tree: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        *,
        log: Path | None = None,
        timeout: float = START_TIMEOUT,
        deadline: float | None = None,
        what: str = "the daemon",
        where: str | None = None,
        **output: Any,
    ) -> float:
        """``ssebench daemon`` on *task* (and *tree*); the seconds until its ``/health`` answered.
        Its output goes to *log*, else where *output* (Popen's stdout/stderr) says."""
        child = self.spawn_daemon(task, tree, env, log=log, **output)
        return self.wait_daemon(child, timeout=timeout, deadline=deadline, what=what, where=where)

    def spawn_daemon(
        self,
        task: Path | str,
        tree: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        *,
        log: Path | None = None,
        **output: Any,
    ) -> Child:
        """``ssebench daemon`` started, not waited for (:meth:`wait_daemon`)."""
        return self._spawn("daemon", daemon_argv(task, self.socket, tree), env, log, output)

    def wait_daemon(
        self,
        child: Child | None,
        *,
        timeout: float = START_TIMEOUT,
        deadline: float | None = None,
        what: str = "the daemon",
        where: str | None = None,
    ) -> float:
        """Seconds until the daemon on our socket answered (*child* None: someone else's daemon,
        a sidecar's). The error names it as *what* (*where*: default "on SOCKET")."""
        return wait_for_daemon(
            self.socket,
            what=what,
            where=f"on {self.socket}" if where is None else where,
            timeout=timeout,
            deadline=deadline,
            gone=exited(child.proc if child else None),
            tail=child.tail if child else list,
            interrupted=self.interrupted,
            poll=0.1,
        )[1]

    def start_server(
        self,
        env: Mapping[str, str] | None = None,
        log_dir: Path | None = None,
        extra: Sequence[str] = (),
        *,
        log: Path | None = None,
        calls_file: Path | None = None,
        ready: Literal["health", "initialize"] = "health",
        timeout: float = START_TIMEOUT,
        deadline: float | None = None,
        **output: Any,
    ) -> float:
        """``ssebench serve`` on our socket; the seconds until it was *ready*: its health route
        answered, or an MCP ``initialize`` did (what an agent does first)."""
        argv = ["serve", "--host", self.host, "--port", str(self.port), "--path", self.path]
        argv += ["--daemon-socket", str(self.socket)]
        argv += ["--log-dir", str(log_dir)] if log_dir is not None else []
        argv += ["--calls-file", str(calls_file)] if calls_file is not None else []
        child = self._spawn("server", ssebench_argv(*argv, *extra), env, log, output)
        if ready == "initialize":
            from ssebench.container.readiness import wait_for_mcp

            return wait_for_mcp(self.url, child, deadline=deadline, timeout=timeout, interrupted=self.interrupted)
        return wait_for_http(
            self.health_url,
            what="the server",
            where=f"at {self.health_url}",
            timeout=timeout,
            deadline=deadline,
            gone=exited(child.proc),
            tail=child.tail,
            interrupted=self.interrupted,
            poll=0.02,
        )

    def stop(self, grace: float | None = None) -> None:
        """Stop every child of the stack at once (one shared grace period)."""
        stop_all(self.children, *([] if grace is None else [grace]))

    def _spawn(
        self, name: str, argv: list[str], env: Mapping[str, str] | None, log: Path | None, output: dict[str, Any]
    ) -> Child:
        environ = env if env is not None else self.env
        if log is not None:
            with open_log(log) as handle:
                proc = start(argv, environ, stdout=handle, stderr=subprocess.STDOUT)
        else:
            proc = start(argv, environ, **output)
        child = Child(name, proc, log)
        self.children.append(child)
        return child

    def _proc(self, name: str) -> subprocess.Popen[bytes] | None:
        return next((c.proc for c in reversed(self.children) if c.name == name), None)


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
    stack = Stack(socket=workdir / "daemon.sock", port=port or free_port(), env=environ)
    outputs = {name: workdir / f"{name}.out" for name in ("daemon", "server")}
    try:
        try:
            if start_daemon:
                stack.start_daemon(task, tree, log=outputs["daemon"])
            stack.start_server(log_dir=log_dir or workdir / "logs", extra=server_args, log=outputs["server"])
        except StackError as exc:
            which = "server" if stack.server is not None else "daemon"
            output = "\n".join(tail_lines(outputs[which], None, max_bytes=4000))
            raise StackError(f"{exc.message}\n{output}") from None  # its whole output, not the tail
        yield stack
    finally:
        stack.stop()
