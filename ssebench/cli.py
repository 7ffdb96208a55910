"""The ``ssebench`` command: one argparse tree, one sub-command module per part.

Each part registers its own sub-commands and imports its heavy dependencies only
inside the handler, so ``ssebench daemon`` does not pay for importing FastMCP and
``ssebench serve`` starts as fast as a bare FastMCP server.
"""

from __future__ import annotations

import argparse
import importlib
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
    sys.exit(args.func(args))
