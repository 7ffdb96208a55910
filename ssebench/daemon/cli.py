"""``ssebench daemon``: validate everything, then serve the task on a Unix socket.

Everything that can be wrong with the invocation (``SSE_DIFFICULTY``, the task file,
the tree, the socket) is checked before the socket is bound, so a bad start never
leaves a half-working daemon that a client could reach.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

from ssebench import settings

HEARTBEAT_VAR = "SSE_DAEMON_HEARTBEAT"
LOG_BUDGET_VAR = "SSE_DAEMON_LOG_BUDGET"
DEFAULT_HEARTBEAT = 10.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "daemon",
        help="serve a task's checks on a Unix socket (the SDK daemon)",
        description="Serve a task's checks on a Unix socket, at the level SSE_DIFFICULTY sets.",
    )
    p.add_argument("--task", required=True, metavar="FILE", help="the task file (task.toml)")
    p.add_argument("--tree", metavar="DIR", help="the agent's source tree (default: the task's source)")
    p.add_argument(
        "--socket",
        metavar="PATH",
        help="socket path (default: $SSE_DAEMON_SOCKET, else $XDG_RUNTIME_DIR/ssebench/"
        "daemon.sock, else /tmp/ssebench-<uid>/daemon.sock)",
    )
    p.add_argument(
        "--socket-mode",
        metavar="MODE",
        default="0600",
        type=_octal,
        help="permissions of the socket file (octal, default 0600)",
    )
    add_sandbox_args(p)
    p.add_argument(
        "--log-budget",
        metavar="SIZE",
        help="keep old runs' logs within this size in all, e.g. 512M (default 256M; "
        f"env {LOG_BUDGET_VAR}); the newest runs are kept first",
    )
    p.set_defaults(func=run_daemon)


def add_sandbox_args(p: argparse.ArgumentParser) -> None:
    """The sandbox flags, shared by ``daemon`` and ``grade`` (docs/security.md)."""
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run checks without the bwrap sandbox (also: SSE_NO_SANDBOX=1); "
        "the checks can then read the task's hidden parts and the host",
    )
    p.add_argument(
        "--output-limit",
        metavar="SIZE",
        help="most output one check may write, e.g. 512M (default 1G; env SSE_OUTPUT_LIMIT)",
    )
    p.add_argument(
        "--memory-limit",
        metavar="SIZE",
        help="most memory one check may use, e.g. 2G (default 4G; env SSE_MEMORY_LIMIT)",
    )
    p.add_argument(
        "--pids-limit", metavar="N", help="most processes one check may run at once (default 1024; env SSE_PIDS_LIMIT)"
    )


def sandbox_from_args(args: argparse.Namespace):
    """The sandbox and limits the flags ask for; raises ValueError or SandboxUnavailable."""
    from ssebench.daemon.limits import Limits
    from ssebench.daemon.sandbox_setup import detect

    limits = Limits.from_env(memory=args.memory_limit, pids=args.pids_limit, output=args.output_limit)
    return detect(args.no_sandbox), limits


def _octal(text: str) -> int:
    try:
        mode = int(text, 8)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an octal mode: {text!r}") from None
    if not 0 <= mode <= 0o777:
        raise argparse.ArgumentTypeError(f"not a permission mode: {text!r}")
    return mode


def _fail(message: str, code: int = 2) -> int:
    print(f"ssebench daemon: {message}", file=sys.stderr)
    return code


def heartbeat_from_env() -> float:
    """``SSE_DAEMON_HEARTBEAT``: seconds between heartbeats (a plain number, as the docs say)."""
    return settings.value(HEARTBEAT_VAR, _seconds, DEFAULT_HEARTBEAT)


def _seconds(name: str, raw: str) -> float:
    return settings.duration(name, raw, units=False)


def log_budget_from(flag: str | None) -> int:
    """``--log-budget``, else ``SSE_DAEMON_LOG_BUDGET``, else 256 MiB; raises ValueError."""
    from ssebench.daemon.runtypes import DEFAULT_LOG_BUDGET

    if flag is not None:
        return settings.size("--log-budget", flag)
    return settings.value(LOG_BUDGET_VAR, settings.size, DEFAULT_LOG_BUDGET)


def run_daemon(args: argparse.Namespace) -> int:
    from ssebench.daemon import paths, procs
    from ssebench.difficulty import DifficultyError, level_from_env
    from ssebench.task import TaskError, load_task

    try:
        level = level_from_env()
    except DifficultyError as exc:
        print(exc, file=sys.stderr)  # the exact message the spec fixes, nothing around it
        return exc.exit_code
    try:
        task = load_task(args.task)
    except TaskError as exc:
        print(exc, file=sys.stderr)
        return exc.exit_code
    # A symlinked tree is resolved once, here: later runs copy what it pointed to now.
    tree = Path(args.tree).resolve() if args.tree else task.source.resolve()
    if not tree.is_dir():
        return _fail(f"--tree {args.tree}: is not a folder")
    try:
        heartbeat = heartbeat_from_env()
        log_budget = log_budget_from(args.log_budget)
    except ValueError as exc:
        return _fail(str(exc))
    from ssebench.daemon.sandbox import SandboxUnavailable

    try:
        sandbox, limits = sandbox_from_args(args)
    except (ValueError, SandboxUnavailable) as exc:
        return _fail(str(exc))

    socket_path = paths.resolve_socket_path(args.socket)
    try:
        _hide(sandbox, task.dir, socket_path)
    except ValueError as exc:
        return _fail(str(exc))
    default_dir = not args.socket and not settings.raw(paths.ENV_VAR)
    try:
        sock = paths.bind_socket(socket_path, args.socket_mode, default_dir=default_dir)
    except (paths.SocketError, OSError) as exc:
        return _fail(str(exc), 1)
    inode = paths.socket_inode(socket_path)

    procs.enable_subreaper()
    workspace = _fresh_workspace(sandbox.check_user)
    try:
        try:
            sandbox.hide("the daemon's workspace", workspace)
        except ValueError as exc:
            return _fail(str(exc))
        code = _serve(task, tree, level, heartbeat, workspace, sock, socket_path, sandbox, limits, log_budget)
    finally:
        paths.remove_socket(socket_path, inode)
        sock.close()
        procs.sweep_sync("")
        shutil.rmtree(workspace, ignore_errors=True)
    _exit_now(code)


def _fresh_workspace(user: tuple[int, int] | None) -> Path:
    """A new workspace where the checks' uid (*user*) reaches it, after sweeping what daemons
    killed with SIGKILL left there and in the temp folder."""
    from ssebench.daemon import stale
    from ssebench.daemon.reach import temp_base

    base = temp_base(user)  # the temp folder, or a system one that uid can reach
    for folder in dict.fromkeys((tempfile.gettempdir(), str(base))):
        for prefix in (stale.PREFIX, "ssebench-etc-", "ssebench-bwrap-"):
            stale.sweep_dead_workspaces(folder, prefix)
    return stale.create_workspace(base=base)


def _exit_now(code: int) -> NoReturn:
    """Exit once everything is cleaned up, without the interpreter's teardown.

    Why: ``docker stop`` and supervisors expect a daemon to go well within their grace
    (10 s) of SIGTERM, and it aims at under a second; tearing down every module took
    0.4 s of that on a busy machine. The atexit hooks (the sandbox's /etc copy, its
    cgroups) still run, and the output is flushed.
    """
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _hide(sandbox, task_dir: Path, socket_path: Path) -> None:
    """Tell the sandbox what no check may see (docs/security.md); raises ValueError."""
    from ssebench.daemon.hostpaths import hide_host_paths
    from ssebench.daemon.sandbox import holds_system_folder

    hide_host_paths(sandbox, task_dir)
    if holds_system_folder(socket_path.parent):  # a socket right under /: hide it alone
        sandbox.hide("the daemon's socket", socket_path)
        return
    sandbox.hide("the daemon's socket folder", socket_path.parent, env=False)
    sandbox.hide("the daemon's socket", socket_path, mount=False)


def _serve(task, tree, level, heartbeat, workspace, sock, socket_path, sandbox, limits, log_budget) -> int:
    import uvicorn

    from ssebench.daemon.app import create_app
    from ssebench.daemon.runner import RunError, Runner
    from ssebench.daemon.server import DaemonServer

    try:
        runner = Runner(
            task,
            tree,
            workspace,
            heartbeat=heartbeat,
            sandbox=sandbox,
            limits=limits,
            log_budget=log_budget,
            warm=True,
        )
    except RunError as exc:  # the task's support files could not be copied
        return _fail(str(exc))
    config = uvicorn.Config(
        create_app(runner, level),
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=3,
        log_config=None,
    )
    server = DaemonServer(config, on_exit=runner.kill_running)
    print(
        f"ssebench daemon: task '{task.id}' at difficulty {level.number} ({level.name}), "
        f"listening on {socket_path}; sandbox: {sandbox.describe()}",
        file=sys.stderr,
        flush=True,
    )
    server.run(sockets=[sock])
    return 0
