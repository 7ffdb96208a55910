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
from typing import Any

from ssebench import __version__
from ssebench.choices import invalid_choice

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


METAVAR = "COMMAND"  # the one word every level of the tree shows for its sub-commands


class CommandParser(argparse.ArgumentParser):
    """Every parser of the tree (sub-parsers take their parent's class): a mistyped choice
    or sub-command gets the closest valid one (ssebench/choices.py), and a sub-command
    without a description shows its help line as one (``ssebench agents install --help``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Commands)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and isinstance(value, str) and value not in choices:
            raise argparse.ArgumentError(action, invalid_choice(value, choices))
        super()._check_value(action, value)


class _Commands(argparse._SubParsersAction):
    """Sub-commands whose description defaults to their help line, as a sentence."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        line = kwargs.get("help")
        if line and not kwargs.get("description"):
            kwargs["description"] = line[0].upper() + line[1:] + ("" if line.endswith(".") else ".")
        return super().add_parser(name, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="ssebench",
        description="Let a coding agent check its own vulnerability fix while it works.",
    )
    parser.add_argument("--version", action="version", version=f"ssebench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar=METAVAR, required=True)
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
