"""What every command uses to print: rich on a terminal, plain text everywhere else.

Tests, pipes and log files must get the same bytes whatever the terminal, so styles are
only added when the stream is a TTY, and ``NO_COLOR`` (https://no-color.org) turns colour
off even there. Output never wraps: a long path stays on one line, as in plain ``print``.
Rich itself is imported only when a line is printed, so importing this module is free.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from ssebench import settings

# Styles by meaning, so commands say what a word is, not which colour it gets.
STYLES = {
    "ok": "green",
    "fail": "bold red",
    "warn": "yellow",
    "dim": "dim",
    "head": "bold",
    "path": "cyan",
}


def is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def color_enabled(stream: IO[str]) -> bool:
    """Styles only on a terminal, and never when ``NO_COLOR`` is set (to anything non-empty)."""
    return is_tty(stream) and not settings.raw("NO_COLOR")


def console(stream: IO[str] | None = None) -> Any:
    """A rich Console for *stream* (default stdout) that writes plain text off a terminal."""
    from rich.console import Console

    stream = sys.stdout if stream is None else stream
    tty = is_tty(stream)
    return Console(
        file=stream,
        force_terminal=tty,
        no_color=not color_enabled(stream),
        color_system="auto" if color_enabled(stream) else None,
        highlight=False,
        emoji=False,
        soft_wrap=True,
        markup=False,
    )


def styled(*parts: str | tuple[str, str]) -> Any:
    """A rich Text from plain strings and ``(text, meaning)`` pairs (meanings: STYLES)."""
    from rich.text import Text

    text = Text()
    for part in parts:
        if isinstance(part, tuple):
            text.append(part[0], style=STYLES.get(part[1], part[1]))
        else:
            text.append(part)
    return text


def echo(*parts: str | tuple[str, str], stream: IO[str] | None = None) -> None:
    """Print one line made of plain strings and ``(text, meaning)`` pairs."""
    stream = sys.stdout if stream is None else stream
    if not color_enabled(stream):
        stream.write("".join(p[0] if isinstance(p, tuple) else p for p in parts) + "\n")
        return
    console(stream).print(styled(*parts))


def seconds(value: float) -> str:
    """A duration as ``1.2 s``; never ``-0.0 s`` (a clock read twice can go 1 µs backwards)."""
    return f"{max(0.0, value):.1f} s"
