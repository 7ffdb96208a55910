"""``ssebench serve``, ``ssebench up`` and ``ssebench demo``.

``SSE_DIFFICULTY`` is validated before FastMCP is even imported, so a bad value
exits 2 with its message in a few milliseconds and before any port is bound.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ssebench import settings
from ssebench.difficulty import ENV_VAR, DifficultyError, Level, level_from_env, parse_level

if TYPE_CHECKING:
    from .calllog import CallsFile

DEFAULT_HOST = settings.DEFAULT_MCP_HOST
DEFAULT_PORT = settings.DEFAULT_MCP_PORT
DEFAULT_PATH = settings.DEFAULT_MCP_PATH
DEMO_TASK = Path("tasks") / "demo-overflow" / "task.toml"  # under examples/
# Level 2 is what an agent gets by default (the vulnerable tree passes: the point of
# the spec's first example); level 0 shows the PoCs catching the bug.
DEMO_LEVELS = "2,0"


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve the test_patch MCP tool over Streamable HTTP",
        description="Serve the test_patch MCP tool (Streamable HTTP), backed by a running SDK daemon.",
    )
    _server_options(serve)
    serve.add_argument(
        "--daemon-socket",
        metavar="PATH",
        help="the daemon's socket (default: $SSE_DAEMON_SOCKET, else the daemon's default)",
    )
    serve.add_argument(
        "--calls-file",
        type=Path,
        metavar="FILE",
        help="also write each test_patch call as one JSON line (a run record's CallRecord) to FILE",
    )
    serve.set_defaults(func=_serve)

    up = sub.add_parser(
        "up",
        help="start a daemon and the MCP server together, until Ctrl-C",
        description="Start the SDK daemon (private socket) and the test_patch server on one task, "
        "at the difficulty level --difficulty or SSE_DIFFICULTY says (default 2).",
    )
    up.add_argument("--task", required=True, metavar="FILE", help="the task.toml")
    up.add_argument("--tree", metavar="DIR", help="the source tree under test (default: the task's source)")
    up.add_argument(
        "--difficulty",
        metavar="N",
        help="SSE_DIFFICULTY for the daemon and the server, 0-4 (default: $SSE_DIFFICULTY, else 2)",
    )
    _server_options(up)
    up.set_defaults(func=_up)

    demo = sub.add_parser(
        "demo",
        help="call test_patch on the example task, unfixed and fixed",
        description=(
            "Start daemon + server on the example task, call test_patch through a real MCP "
            "client on the unfixed tree and on a copy with the reference fix applied, print both, stop."
        ),
    )
    demo.add_argument(
        "--task", metavar="FILE", help="the task.toml (default: the bundled examples/tasks/demo-overflow)"
    )
    demo.add_argument(
        "--levels",
        default=DEMO_LEVELS,
        metavar="N,N",
        help=f"difficulty levels to show, comma-separated (default: {DEMO_LEVELS})",
    )
    demo.set_defaults(func=_demo)


def _server_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default: {DEFAULT_HOST})")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default: {DEFAULT_PORT})")
    p.add_argument("--path", default=DEFAULT_PATH, help=f"the MCP endpoint's path (default: {DEFAULT_PATH})")
    p.add_argument(
        "--log-dir",
        metavar="DIR",
        help="where full long logs go (default: $MCP_LOG_DIR, else /tmp/mcp/logs)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        metavar="HOST",
        help="another Host header value to accept (the guard accepts localhost names only by default)",
    )
    p.add_argument(
        "--heartbeat",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds between progress heartbeats during a call (default: 15)",
    )


def _positive_seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be a number of seconds from 0 to 3600, got '{raw}'")
    return value


def _level_or_exit(env: dict[str, str] | None = None, prefix: str = "") -> Level | None:
    try:
        level = level_from_env(env)
    except DifficultyError as exc:
        print(f"{prefix}{exc}", file=sys.stderr)
        return None
    from .limits import ServerLimits

    try:
        ServerLimits.from_env()  # session expiry and log retention (server/limits.py)
    except ValueError as exc:
        print(f"ssebench: {exc}", file=sys.stderr)
        return None
    return level


def _display_host(host: str) -> str:
    return "localhost" if host in ("127.0.0.1", "::1", "localhost") else host


def _url(args: argparse.Namespace) -> str:
    host = _display_host(args.host)
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{args.port}{args.path}"


def _holder(port: int) -> str:
    """`` (by PID N: name)`` for the process listening on *port*, when we may see it."""
    import psutil

    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
                try:
                    return f" (by PID {conn.pid}: {psutil.Process(conn.pid).name()})"
                except psutil.Error:
                    return f" (by PID {conn.pid})"
    except (psutil.Error, OSError):
        pass
    return ""


def bind(host: str, port: int, advice: str = "pass --port") -> socket.socket:
    """Bind and listen on *host*:*port* the way uvicorn would, before anything is printed.

    Raises :class:`BindError` with the one line to show (the port's holder when visible),
    ending with *advice*: how the caller's user picks another port.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise BindError(f"port {port} is in use{_holder(port)}; stop that process or {advice}") from None
        if exc.errno == errno.EACCES:
            raise BindError(f"port {port}: permission denied (ports below 1024 need privileges); {advice}") from None
        raise BindError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(False)
    return sock


class BindError(OSError):
    """The port cannot be bound; the message is the one line for the user."""


def _run_server(
    args: argparse.Namespace, level: Level, daemon_socket: str, sock: socket.socket, calls: CallsFile | None = None
) -> int:
    """Serve on the bound *sock* until SIGTERM/SIGINT; both end it cleanly with status 0."""
    import asyncio

    from .app import DEFAULT_HEARTBEAT, create_server
    from .calllog import CallLog
    from .logdir import LogDir

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("ssebench").setLevel(logging.INFO)
    log_dir = LogDir.prepare(args.log_dir)
    mcp = create_server(
        level,
        daemon_socket,
        log_dir,
        heartbeat=args.heartbeat if args.heartbeat is not None else DEFAULT_HEARTBEAT,
    )
    mcp.add_middleware(CallLog(level, calls=calls))
    # uvicorn restores the handlers it found and re-raises the signal after its
    # graceful shutdown: ours turns that into a normal return instead of a kill.
    stopped: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _f: stopped.append(s))
    asyncio.run(
        mcp.run_http_async(
            transport="http",
            host=args.host,
            port=args.port,
            path=args.path,
            show_banner=False,
            json_response=False,  # SSE responses: progress notifications need them
            host_origin_protection=True,
            allowed_hosts=args.allowed_host,
            log_level="warning",
            sockets=[sock],  # bound before the banner: a busy port fails with one line
        )
    )
    return 0


def _bind_or_exit(args: argparse.Namespace, command: str) -> socket.socket | None:
    try:
        return bind(args.host, args.port)
    except BindError as exc:
        print(f"ssebench {command}: {exc}", file=sys.stderr)
        return None


def _serve(args: argparse.Namespace) -> int:
    level = _level_or_exit()
    if level is None:
        return 2
    from ssebench.daemon.paths import SocketError, resolve_client_socket

    try:  # the daemon's own rule for its default folder: ours, 0700, no symlink
        daemon_socket = resolve_client_socket(args.daemon_socket)
    except SocketError as exc:
        print(f"ssebench serve: {exc}", file=sys.stderr)
        return 1
    calls = None
    if args.calls_file is not None:
        from .calllog import CallsFile

        try:
            calls = CallsFile(args.calls_file)
        except OSError as exc:
            print(f"ssebench serve: --calls-file {args.calls_file}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    sock = _bind_or_exit(args, "serve")
    if sock is None:
        return 2
    print(
        f"ssebench serve: test_patch at {_url(args)} (difficulty {level.number}, {level.name}); "
        f"daemon socket {daemon_socket}",
        flush=True,
    )
    if not daemon_socket.exists():
        print(
            f"ssebench serve: warning: no daemon socket at {daemon_socket} yet; test_patch calls "
            "report an internal failure until `ssebench daemon` listens there",
            file=sys.stderr,
            flush=True,
        )
    return _run_server(args, level, str(daemon_socket), sock, calls)


def _up(args: argparse.Namespace) -> int:
    # --difficulty is SSE_DIFFICULTY for both children, read by the one rule (as run's)
    env = None if args.difficulty is None else {**os.environ, ENV_VAR: args.difficulty}
    level = _level_or_exit(env, prefix="ssebench up: " if env is not None else "")
    if level is None:
        return 2
    from ssebench.supervise import HeldOutput

    from .stack import Stack, StackError

    sock = _bind_or_exit(args, "up")  # before the daemon: a busy port costs nothing
    if sock is None:
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="ssebench-up-"))  # 0700, ours
    stack = Stack(workdir / "daemon.sock", args.port, env=env)  # the daemon only: the server runs here
    daemon = stack.spawn_daemon(args.task, args.tree, stderr=subprocess.PIPE)
    assert daemon.proc.stderr is not None
    output = HeldOutput(daemon.proc.stderr)
    try:
        try:
            stack.wait_daemon(daemon)
        except StackError as exc:
            # one line: the daemon's own reason when it gave one, else ours
            said = output.lines() if daemon.proc.poll() is not None else []
            print("\n".join(said) if said else f"ssebench up: {exc}", file=sys.stderr)
            return daemon.proc.poll() or 1
        except KeyboardInterrupt:  # Ctrl-C before the server was up
            return 130
        output.release()
        url = _url(args)
        print(
            f"ssebench: serving test_patch at {url} "
            f"(difficulty {level.number}, {level.name}); Ctrl-C stops.\n"
            "Register it with Claude Code (with a one-hour tool timeout) with:\n"
            f"  ssebench agents install claude --url {url}\n"
            "(other agents: ssebench agents install --help)",
            flush=True,
        )
        return _run_server(args, level, str(stack.socket), sock)
    finally:
        sock.close()
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def _default_demo_task() -> Path | None:
    """The bundled example: a source checkout has it, an installed wheel does not."""
    from ssebench.resources import data_dir

    try:
        return data_dir("examples") / DEMO_TASK
    except FileNotFoundError:
        return None


def _demo(args: argparse.Namespace) -> int:
    task = Path(args.task) if args.task else _default_demo_task()
    if task is None:
        print(
            "ssebench demo: the example task ships with the source checkout, not the package; pass --task FILE",
            file=sys.stderr,
        )
        return 2
    try:
        levels = [parse_level(raw) for raw in args.levels.split(",")]
    except DifficultyError as exc:
        print(f"ssebench demo: --levels: {exc}", file=sys.stderr)
        return 2
    if not task.is_file():
        print(f"ssebench demo: task file not found: {task}", file=sys.stderr)
        return 2
    from ssebench.task import TaskError, load_task

    try:
        loaded = load_task(task)
    except TaskError as exc:
        print(exc, file=sys.stderr)
        return 2
    # Beside the task folder, not in it: a file in it is a support file every check can read.
    fix = loaded.dir.with_name(loaded.dir.name + ".fix.patch")
    if not fix.is_file():
        print(f"ssebench demo: {fix} not found (the demo applies it to show the fixed tree)", file=sys.stderr)
        return 2

    from .demo import run_demo

    return run_demo(task, Path(loaded.source), fix, levels)


__all__ = ["register"]
