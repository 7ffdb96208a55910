"""The text ``test_patch`` returns, to the letter of the spec.

This is everything the agent learns from a call, so it is built in one pure
function from the daemon's structured result: no I/O here, which lets the tests
pin every example of the spec verbatim.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from ssebench.difficulty import CHECK_ORDER, Check, Level

INTERNAL_FAILURE = (
    "An internal testing failure occurred. Your patch is not responsible for this failure."
)

# The headline reason of the first failed check, in this order of precedence.
FAILURE_PRECEDENCE: tuple[Check, ...] = (Check.BUILD, Check.FUNCTIONAL, Check.POCS, Check.INTENT)

FAILURE_REASONS: dict[Check, str] = {
    Check.BUILD: "The project failed to build. Please reassess the correctness of your patch.",
    Check.FUNCTIONAL: (
        "One or more functionality test(s) failed. Please reassess your patch and make sure "
        "it fixes the vulnerability without compromising the program's functionality."
    ),
    Check.POCS: (
        "At least one proof-of-concept (PoC) still triggers the vulnerability. Please reassess "
        "your patch and make sure it fixes the root cause of the vulnerability."
    ),
    Check.INTENT: (
        "One or more intent test(s) failed. These tests validate behavior after the "
        "vulnerability fix. Please reassess your patch to ensure it correctly addresses the "
        "vulnerability and aligns with common patterns in the project."
    ),
}

SAVE_FAILED_LINE = "(Full log could not be saved due to an internal error)"


class State(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_RUN = "not_run"


@dataclass(frozen=True)
class CheckResult:
    """How one check ended, as the daemon reports it."""

    check: Check
    state: State
    pocs_passed: int = 0
    pocs_total: int = 0
    covered_by_intent: bool = False


@dataclass(frozen=True)
class LogSection:
    """The log of the failed check: whole, or a tail plus where the whole went.

    ``saved_path`` is None for a truncated log whose full copy could not be saved.
    """

    check: Check
    text: str
    truncated: bool = False
    saved_path: str | None = None


def failed_check(results: Sequence[CheckResult]) -> Check | None:
    """The check the headline names: the first failed one by precedence."""
    failed = {r.check for r in results if r.state is State.FAILED}
    return next((c for c in FAILURE_PRECEDENCE if c in failed), None)


def _check_line(result: CheckResult) -> str:
    label = result.check.label
    if result.state is State.NOT_RUN:
        return f"- {label}: not run (the build failed)"
    if result.state is State.FAILED:
        if result.check is Check.POCS:
            return (
                f"- {label}: FAILED (passed {result.pocs_passed} of {result.pocs_total}; "
                "stopped at the first that still triggers the bug)"
            )
        return f"- {label}: FAILED"
    if result.check is Check.POCS:
        if result.pocs_total == 0:
            return f"- {label}: passed (the task has none)"
        return f"- {label}: passed ({result.pocs_passed} of {result.pocs_total})"
    if result.check is Check.FUNCTIONAL and result.covered_by_intent:
        return f"- {label}: passed (covered by the intent tests)"
    return f"- {label}: passed"


def _log_part(log: LogSection) -> str:
    # Trailing newlines of the log would stack up against the blank-line separators.
    text = log.text.rstrip("\n")
    if not log.truncated:
        return f"Full log ({log.check.label}):\n{text}"
    last = (
        f"Full log available at {log.saved_path}" if log.saved_path is not None else SAVE_FAILED_LINE
    )
    return f"Truncated log ({log.check.label}):\n{text}\n\n{last}"


def render(level: Level, results: Sequence[CheckResult], log: LogSection | None = None) -> str:
    """The whole result text for ``results`` (run order, only checks the level enables).

    ``log`` is the log of :func:`failed_check`; it is required exactly when a check failed.
    """
    ordered = sorted(results, key=lambda r: CHECK_ORDER.index(r.check))
    failed = failed_check(ordered)
    if failed is not None and (log is None or log.check is not failed):
        raise ValueError(f"a failed result needs the log of {failed.value}")

    withheld = level.withheld
    if not level.enabled:
        headline = "test_patch result: no checks ran."
    elif failed is not None:
        headline = f"test_patch result: FAILED. {FAILURE_REASONS[failed]}"
    elif withheld:
        headline = "test_patch result: every check that ran passed."
    else:
        headline = "test_patch result: every check passed."

    parts = [headline]
    if level.enabled:
        parts.append("\n".join(["Checks:", *(_check_line(r) for r in ordered)]))
    if withheld:
        note = (
            f"Not available at difficulty level {level.number} ({level.name}): "
            f"{', '.join(c.label for c in withheld)}. Nothing is reported about them."
        )
        if not level.enabled:
            note += (
                " test_patch has nothing to run at this level, "
                "so this result says nothing about your patch."
            )
        elif failed is None and not any(r.check is Check.POCS for r in ordered):
            note += " Without the PoCs, this result does not show whether the vulnerability is fixed."
        parts.append(note)
    if failed is not None and log is not None:
        parts.append(_log_part(log))
    return "\n\n".join(parts)
