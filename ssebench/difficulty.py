"""The difficulty levels and the one rule for reading ``SSE_DIFFICULTY``.

The daemon and the MCP server both read the level once at start-up and must agree
to the letter on what is valid, so the rule lives here and nowhere else.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass

ENV_VAR = "SSE_DIFFICULTY"
DEFAULT_LEVEL = 2


class Check(str, enum.Enum):
    """The task's checks, in the order they run."""

    BUILD = "build"
    POCS = "pocs"
    INTENT = "intent"
    FUNCTIONAL = "functional"

    @property
    def label(self) -> str:
        """The name the spec uses in result texts."""
        return _LABELS[self]


_LABELS = {
    Check.BUILD: "build",
    Check.POCS: "PoCs",
    Check.INTENT: "intent tests",
    Check.FUNCTIONAL: "functional tests",
}

CHECK_ORDER: tuple[Check, ...] = (Check.BUILD, Check.POCS, Check.INTENT, Check.FUNCTIONAL)


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


LEVELS: dict[int, Level] = {
    0: Level(0, "FULL_ASSISTANCE", frozenset(CHECK_ORDER)),
    1: Level(1, "NO_INTENT_TEST", frozenset({Check.BUILD, Check.POCS, Check.FUNCTIONAL})),
    2: Level(2, "NO_FUTURE_TEST", frozenset({Check.BUILD, Check.FUNCTIONAL})),
    3: Level(3, "BUILD_ONLY", frozenset({Check.BUILD})),
    4: Level(4, "NO_BUILD", frozenset()),
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
    env = os.environ if environ is None else environ
    return parse_level(env.get(ENV_VAR))
