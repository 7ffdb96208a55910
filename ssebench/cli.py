"""The ``ssebench`` command: one argparse tree, one sub-command module per part.

Each part registers its own sub-commands and imports its heavy dependencies only
inside the handler, so ``ssebench daemon`` does not pay for importing FastMCP and
``ssebench serve`` starts as fast as a bare FastMCP server.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Sequence

from ssebench import __version__

# Modules that define ``register(subparsers)``; each handler is stored as ``func``
# and returns the process exit status.
COMMAND_MODULES = (
    "ssebench.daemon.cli",  # daemon
    "ssebench.grading",  # grade
    "ssebench.server.cli",  # serve, up
    "ssebench.agents.cli",  # agents install|uninstall|list|show|dockerfile
    "ssebench.container.cli",  # entrypoint, run
    "ssebench.dialog.cli",  # dialog show
    "ssebench.taskcmd",  # task check|new|verify
    "ssebench.dataset.cli",  # dataset lock|verify|import
    "ssebench.completion",  # completion bash|zsh|fish
    "ssebench.doctor",  # doctor
    "ssebench.jobs.cli",  # jobs run|resume|report
    "ssebench.view.cli",  # view
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ssebench",
        description="Let a coding agent check its own vulnerability fix while it works.",
    )
    parser.add_argument("--version", action="version", version=f"ssebench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        _quiet_stdout()
        status = 141  # what a shell reports for a writer killed by SIGPIPE
    except KeyboardInterrupt:
        status = 130
    if status == 130:  # interrupted and cleaned up: a late Ctrl-C must not turn the exit into a traceback
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(status)


def _stdout_closed() -> bool:
    """True when our stdout is a pipe whose reader has gone (``ssebench ... | head -1``).

    A BrokenPipeError from anything else (a child's stdin, a socket) is a real error and
    keeps its traceback.
    """
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
