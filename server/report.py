"""The text ``test_patch`` returns, to the letter of the spec.

This is everything the agent learns from a call, so it is built in one pure
function from the daemon's typed result (ssebench/contract.py): no I/O here, which
lets the tests pin every example of the spec verbatim. The phrases themselves are
ssebench/phrases.py's; the check kinds' words (labels, failure reasons, precedence)
are their rows in ssebench/checks.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ssebench import phrases
from ssebench.checks import FAILURE_PRECEDENCE, Check, State, failed_check
from ssebench.contract import CheckResult
from ssebench.difficulty import Level
from ssebench.phrases import INTERNAL_FAILURE, SAVE_FAILED_LINE

__all__ = [
    "FAILURE_PRECEDENCE",
    "FAILURE_REASONS",
    "INTERNAL_FAILURE",
    "SAVE_FAILED_LINE",
    "CheckResult",
    "LogSection",
    "State",
    "failed_check",
    "render",
]

FAILURE_REASONS: dict[Check, str] = {c: c.kind.failure_reason for c in FAILURE_PRECEDENCE}


@dataclass(frozen=True)
class LogSection:
    """The log of the failed check: whole, or a tail plus where the whole went.

    ``saved_path`` is None for a truncated log whose full copy could not be saved.
    """

    check: Check
    text: str
    truncated: bool = False
    saved_path: str | None = None


def _log_part(log: LogSection) -> str:
    # Trailing newlines of the log would stack up against the blank-line separators.
    text = log.text.rstrip("\n")
    if not log.truncated:
        return phrases.full_log(log.check, text)
    return phrases.truncated_log(log.check, text, log.saved_path)


def render(level: Level, results: Sequence[CheckResult], log: LogSection | None = None) -> str:
    """The whole result text for ``results`` (run order, only checks the level enables).

    ``log`` is the log of :func:`failed_check`; it is required exactly when a check failed.
    """
    ordered = phrases.in_run_order(results)
    failed = failed_check(ordered)
    if failed is not None and (log is None or log.check is not failed):
        raise ValueError(f"a failed result needs the log of {failed.value}")

    parts = [phrases.headline(level, failed)]
    if level.enabled:
        parts.append("\n".join(["Checks:", *(phrases.check_line(r) for r in ordered)]))
    if level.withheld:
        parts.append(phrases.withheld_note(level, failed, ordered))
    if failed is not None and log is not None:
        parts.append(_log_part(log))
    return "\n\n".join(parts)
