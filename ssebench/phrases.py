"""Every phrase a result is told in: the spec's ``test_patch`` texts, ``ssebench grade``'s
lines and the MCP server's call-log summary, all from typed results.

The spec's texts are golden-tested to the letter (tests/test_report.py), so each phrase
is written once, here; the check kinds' own words (label, failure reason) are their rows
in ssebench/checks.py. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from ssebench.checks import CHECK_ORDER, KINDS, Check, State, failed_check
from ssebench.contract import CheckResult
from ssebench.difficulty import Level

INTERNAL_FAILURE = "An internal testing failure occurred. Your patch is not responsible for this failure."
SAVE_FAILED_LINE = "(Full log could not be saved due to an internal error)"
HEADLINE_PREFIX = "test_patch result: "
# The call log's word for a call that ended in INTERNAL_FAILURE.
INTERNAL_SUMMARY = "internal failure"

_STATE_WORDS = {State.PASSED: "passed", State.FAILED: "FAILED", State.NOT_RUN: "not run"}
# A check is not run when a gating kind (the build) did not pass.
_NOT_RUN_WHY = f"the {' or '.join(k.label for k in KINDS if k.gates)} failed"
# Without these kinds a passing result does not show the vulnerability is fixed (the PoCs).
_FIX_SHOWN_BY = " or ".join(k.label for k in KINDS if k.shows_fix)


def state_word(state: State) -> str:
    """``passed``, ``FAILED`` or ``not run``: the verdict on one check line."""
    return _STATE_WORDS[state]


def progress_word(state: State) -> str:
    """``passed``, ``failed`` or ``not run``: a check's end in the MCP progress notifications."""
    return state.value.replace("_", " ")


def details(result: CheckResult) -> list[str]:
    """What a check line says in brackets after its state, beyond timing."""
    if result.state is State.NOT_RUN:
        return [_NOT_RUN_WHY]
    found = []
    if result.counts_shown:
        passed, total = result.pocs_passed, result.pocs_total
        if result.state is State.FAILED:
            found.append(f"passed {passed} of {total}; stopped at the first that still triggers the bug")
        elif total == 0:
            found.append("the task has none")
        else:
            found.append(f"{passed} of {total}")
    covered_by = result.check.kind.covered_by
    if result.covered_by_intent and covered_by is not None:
        found.append(f"covered by the {covered_by.label}")
    return found


def check_line(result: CheckResult, extra: Sequence[str] = ()) -> str:
    """``- PoCs: passed (2 of 2)``; *extra* details (grade's timings) go last."""
    found = [*details(result), *extra]
    line = f"- {result.check.label}: {state_word(result.state)}"
    return line + (f" ({'; '.join(found)})" if found else "")


def in_run_order(results: Sequence[CheckResult]) -> list[CheckResult]:
    return sorted(results, key=lambda r: CHECK_ORDER.index(r.check))


def verdict(level: Level, failed: Check | None) -> str:
    """The headline's verdict, also the call log's first word(s)."""
    if not level.enabled:
        return "no checks ran"
    if failed is not None:
        return "FAILED"
    return "every check that ran passed" if level.withheld else "every check passed"


def headline(level: Level, failed: Check | None) -> str:
    if failed is not None and level.enabled:
        return f"{HEADLINE_PREFIX}FAILED. {failed.kind.failure_reason}"
    return f"{HEADLINE_PREFIX}{verdict(level, failed)}."


def withheld_note(level: Level, failed: Check | None, results: Sequence[CheckResult]) -> str:
    """What the level keeps back, and what that means for the result."""
    note = (
        f"Not available at difficulty level {level.number} ({level.name}): "
        f"{', '.join(c.label for c in level.withheld)}. Nothing is reported about them."
    )
    if not level.enabled:
        note += " test_patch has nothing to run at this level, so this result says nothing about your patch."
    elif failed is None and not any(r.check.kind.shows_fix for r in results):
        note += f" Without the {_FIX_SHOWN_BY}, this result does not show whether the vulnerability is fixed."
    return note


def full_log(check: Check, text: str) -> str:
    return f"Full log ({check.label}):\n{text}"


def truncated_log(check: Check, text: str, saved_path: str | None) -> str:
    last = f"Full log available at {saved_path}" if saved_path is not None else SAVE_FAILED_LINE
    return f"Truncated log ({check.label}):\n{text}\n\n{last}"


GRADE_PASSED = "every check passed"


def grade_verdict(results: Sequence[CheckResult]) -> str:
    """``ssebench grade``'s verdict on every check the task has."""
    failed = sum(r.state is State.FAILED for r in results)
    if all(r.state is State.PASSED for r in results):
        return GRADE_PASSED
    return f"FAILED ({failed} of {len(results)} checks failed)"


def summary(level: Level, results: Sequence[CheckResult]) -> str:
    """The call log's ``FAILED [build: FAILED, functional tests: not run]``: only what the
    agent was told (the states of the checks it was shown), never a log."""
    failed = failed_check(results)
    shown = in_run_order(results) if level.enabled else []
    states = ", ".join(f"{r.check.label}: {state_word(r.state)}" for r in shown)
    return verdict(level, failed) + (f" [{states}]" if states else "")
