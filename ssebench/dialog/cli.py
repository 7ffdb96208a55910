"""``ssebench dialog show FILE [--follow] [--full]``: read a dialog log in a terminal.

The file is read line by line (a long session is never held whole in memory); with
``--follow`` the command waits for lines still to come, as ``tail -f`` does, and
stops by itself once the ``complete`` line arrives.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

POLL_SECONDS = 0.2


def register(sub: argparse._SubParsersAction) -> None:
    dialog = sub.add_parser("dialog", help="read an agent session's dialog.jsonl")
    actions = dialog.add_subparsers(dest="dialog_command", metavar="COMMAND", required=True)
    show = actions.add_parser("show", help="render a dialog.jsonl readably")
    show.add_argument("file", type=Path, metavar="FILE")
    show.add_argument(
        "--follow", "-f", action="store_true", help="keep reading as lines are added, until the session completes"
    )
    show.add_argument("--full", action="store_true", help="show long bodies whole (default: 40 lines)")
    show.set_defaults(func=_show)


def _show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ssebench.dialog.render import DEFAULT_MAX_LINES, render_event

    console = Console(highlight=False, soft_wrap=True)
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    path: Path = args.file
    if not args.follow and not path.is_file():
        errors.print(f"ssebench dialog show: {path}: no such file")
        return 2
    bad = 0
    lines = _follow(path) if args.follow else _read(path)
    try:
        for number, line in lines:
            event = _parse(line)
            if event is None:
                bad += 1
                errors.print(f"{path}:{number}: not a dialog event, skipped")
                continue
            console.print(render_event(event, max_lines=None if args.full else DEFAULT_MAX_LINES))
            if args.follow and event.get("type") == "complete":
                break
    except KeyboardInterrupt:
        return 130
    return 1 if bad else 0


def _parse(line: str) -> dict | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return None
    return event


def _read(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", errors="replace") as stream:
        for number, line in enumerate(stream, 1):
            if line.strip():
                yield number, line


def _follow(path: Path, poll: float = POLL_SECONDS) -> Iterator[tuple[int, str]]:
    """Yield complete lines as they are appended; wait for the file to appear."""
    while not path.exists():
        time.sleep(poll)
    with path.open(encoding="utf-8", errors="replace") as stream:
        yield from follow_stream(stream, poll)


def follow_stream(stream: IO[str], poll: float = POLL_SECONDS) -> Iterator[tuple[int, str]]:
    number = 0
    partial = ""
    while True:
        chunk = stream.readline()
        if not chunk:
            time.sleep(poll)
            continue
        partial += chunk
        if not partial.endswith("\n"):
            continue  # the writer is mid-line: wait for the rest
        number += 1
        line, partial = partial, ""
        if line.strip():
            yield number, line
