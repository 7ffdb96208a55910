"""The difficulty levels and the one rule for reading ``SSE_DIFFICULTY``.

The daemon and the MCP server both read the level once at start-up and must agree
to the letter on what is valid, so the rule lives here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ssebench import settings
from ssebench.checks import CHECK_ORDER, KINDS, Check

__all__ = [
    "CHECK_ORDER",
    "Check",
    "DEFAULT_LEVEL",
    "ENV_VAR",
    "GRADING",
    "LEVELS",
    "Level",
    "DifficultyError",
    "level_from_env",
    "parse_level",
]

ENV_VAR = "SSE_DIFFICULTY"
DEFAULT_LEVEL = 2


@dataclass(frozen=True)
class Level:
    number: int
    name: str
    enabled: frozenset[Check]

    @property
    def allowed(self) -> tuple[Check, ...]:
        """Checks this level enables, in run order."""
        return tuple(c for c in CHECK_ORDER if c in self.enabled)

    @property
    def withheld(self) -> tuple[Check, ...]:
        """Checks this level disables, in run order."""
        return tuple(c for c in CHECK_ORDER if c not in self.enabled)

    def allows(self, check: Check) -> bool:
        return check in self.enabled


def _level(number: int, name: str) -> Level:
    """The level's checks come from each kind's ``max_level`` (ssebench/checks.py)."""
    return Level(number, name, frozenset(k.check for k in KINDS if number <= k.max_level))


LEVELS: dict[int, Level] = {
    number: _level(number, name)
    for number, name in enumerate(("FULL_ASSISTANCE", "NO_INTENT_TEST", "NO_FUTURE_TEST", "BUILD_ONLY", "NO_BUILD"))
}

# Final grading ignores SSE_DIFFICULTY and runs every check.
GRADING = LEVELS[0]


class DifficultyError(ValueError):
    """``SSE_DIFFICULTY`` holds something other than an integer from 0 to 4."""

    exit_code = 2

    def __init__(self, raw: str) -> None:
        self.raw = raw
        super().__init__(f"{ENV_VAR} must be an integer from 0 to 4, got '{raw}'")


def parse_level(raw: str | None) -> Level:
    """Parse a raw value; ``None`` (unset) means the default level.

    Only the five ASCII strings "0".."4" are accepted after stripping surrounding
    whitespace: ``int()`` alone would also take "+2", "02" and non-ASCII digits.
    """
    if raw is None:
        return LEVELS[DEFAULT_LEVEL]
    value = raw.strip()
    if len(value) == 1 and value in "01234":
        return LEVELS[int(value)]
    raise DifficultyError(raw)


def level_from_env(environ: Mapping[str, str] | None = None) -> Level:
    """Read the level from the environment (once, at start-up)."""
    return parse_level(settings.raw(ENV_VAR, environ))
