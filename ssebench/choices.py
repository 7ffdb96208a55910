"""The one "maybe you meant" of every command: a mistyped name gets the closest valid one.

Why one helper: argparse's choices and sub-commands (through ``ssebench.cli.CommandParser``),
``agents install``'s several AGENTs and the in-process ``install_entry`` all say the same
words. They are Python 3.14's own (``ArgumentParser(suggest_on_error=True)``), so moving to
it one day changes no text. Callers outside argparse (a job file's unknown agent) append
:func:`maybe_meant` to their own message.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# difflib's default: "claud" -> "claude", "cdex" -> "codex", "xyz" -> nothing
CUTOFF = 0.6


def closest(text: str, choices: Iterable[str]) -> str | None:
    """The valid name most like *text*, or None when none is close enough to be a typo.
    A different case of one name (``Claude``) counts as that name."""
    names = [str(c) for c in choices]
    for name in names:
        if name.casefold() == text.casefold():
            return name
    found = difflib.get_close_matches(text, names, n=1, cutoff=CUTOFF)
    return found[0] if found else None


def maybe_meant(text: str, choices: Iterable[str]) -> str:
    """``", maybe you meant 'claude'?"`` for a near miss, else ``""``."""
    best = closest(text, choices)
    return "" if best is None else f", maybe you meant {best!r}?"


def invalid_choice(text: str, choices: Iterable[str]) -> str:
    """argparse's words for a value that is not one of *choices*, with the closest one."""
    names = tuple(choices)
    return f"invalid choice: {text!r}{maybe_meant(text, names)} (choose from {', '.join(map(repr, names))})"
