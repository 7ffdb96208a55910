"""Counts in words: ``1 run``, ``2 runs`` (never ``1 runs``), for everything ``ssebench jobs`` prints."""

from __future__ import annotations

#: nouns whose plural is not the noun + "s"
_IRREGULAR = {"retry": "retries", "was": "were", "is": "are", "needs": "need"}


def plural(n: int, noun: str, many: str | None = None) -> str:
    """NOUN as it goes with N (MANY: its plural, when not NOUN + "s" or in the table)."""
    if n == 1:
        return noun
    return many or _IRREGULAR.get(noun) or f"{noun}s"


def count(n: int, noun: str, many: str | None = None) -> str:
    """``N NOUN`` with NOUN's number agreeing: ``1 run``, ``0 runs``, ``3 problems``."""
    return f"{n} {plural(n, noun, many)}"
