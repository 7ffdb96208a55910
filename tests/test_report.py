"""The result text, pinned to every example of the spec, verbatim.

These render from structured results (no daemon); tests/test_server_golden.py checks
that real runs through the real daemon and server produce the same texts.
"""

from __future__ import annotations

import pytest

from ssebench.difficulty import LEVELS, Check
from ssebench.server.report import (
    INTERNAL_FAILURE,
    CheckResult,
    LogSection,
    State,
    failed_check,
    render,
)

P, F, N = State.PASSED, State.FAILED, State.NOT_RUN

SPEC_LEVEL_2 = """test_patch result: every check that ran passed.

Checks:
- build: passed
- functional tests: passed

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them. Without the PoCs, this result does not show whether the vulnerability is fixed."""

SPEC_LEVEL_0 = """test_patch result: every check passed.

Checks:
- build: passed
- PoCs: passed (2 of 2)
- intent tests: passed
- functional tests: passed (covered by the intent tests)"""

SPEC_LEVEL_1 = """test_patch result: every check that ran passed.

Checks:
- build: passed
- PoCs: passed (2 of 2)
- functional tests: passed

Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is reported about them."""

SPEC_LEVEL_3 = """test_patch result: every check that ran passed.

Checks:
- build: passed

Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. Nothing is reported about them. Without the PoCs, this result does not show whether the vulnerability is fixed."""

SPEC_LEVEL_4 = """test_patch result: no checks ran.

Not available at difficulty level 4 (NO_BUILD): build, PoCs, intent tests, functional tests. Nothing is reported about them. test_patch has nothing to run at this level, so this result says nothing about your patch."""

SPEC_BUILD_FAILED_2 = """test_patch result: FAILED. The project failed to build. Please reassess the correctness of your patch.

Checks:
- build: FAILED
- functional tests: not run (the build failed)

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them.

Full log (build):
<log>"""

SPEC_REASONS = {
    Check.BUILD: "The project failed to build. Please reassess the correctness of your patch.",
    Check.FUNCTIONAL: "One or more functionality test(s) failed. Please reassess your patch and make sure it fixes the vulnerability without compromising the program's functionality.",
    Check.POCS: "At least one proof-of-concept (PoC) still triggers the vulnerability. Please reassess your patch and make sure it fixes the root cause of the vulnerability.",
    Check.INTENT: "One or more intent test(s) failed. These tests validate behavior after the vulnerability fix. Please reassess your patch to ensure it correctly addresses the vulnerability and aligns with common patterns in the project.",
}


def r(check: Check, state: State, **kw: object) -> CheckResult:
    return CheckResult(check, state, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("level", "results", "expected"),
    [
        (2, [r(Check.BUILD, P), r(Check.FUNCTIONAL, P)], SPEC_LEVEL_2),
        (
            0,
            [
                r(Check.BUILD, P),
                r(Check.POCS, P, pocs_passed=2, pocs_total=2),
                r(Check.INTENT, P),
                r(Check.FUNCTIONAL, P, covered_by_intent=True),
            ],
            SPEC_LEVEL_0,
        ),
        (1, [r(Check.BUILD, P), r(Check.POCS, P, pocs_passed=2, pocs_total=2), r(Check.FUNCTIONAL, P)], SPEC_LEVEL_1),
        (3, [r(Check.BUILD, P)], SPEC_LEVEL_3),
        (4, [], SPEC_LEVEL_4),
    ],
    ids=["level2", "level0", "level1", "level3", "level4"],
)
def test_spec_passing_examples(level: int, results: list[CheckResult], expected: str) -> None:
    assert render(LEVELS[level], results) == expected


def test_spec_build_failure_example() -> None:
    text = render(
        LEVELS[2],
        [r(Check.BUILD, F), r(Check.FUNCTIONAL, N)],
        LogSection(Check.BUILD, "<log>\n"),
    )
    assert text == SPEC_BUILD_FAILED_2


def test_spec_truncated_log_layout() -> None:
    text = render(
        LEVELS[3],
        [r(Check.BUILD, F)],
        LogSection(Check.BUILD, "tail line 1\ntail line 2\n", truncated=True, saved_path="/tmp/mcp/logs/x.txt"),
    )
    assert text.endswith(
        "\n\nTruncated log (build):\ntail line 1\ntail line 2\n\nFull log available at /tmp/mcp/logs/x.txt"
    )
    unsaved = render(LEVELS[3], [r(Check.BUILD, F)], LogSection(Check.BUILD, "t", truncated=True))
    assert unsaved.endswith("Truncated log (build):\nt\n\n(Full log could not be saved due to an internal error)")


@pytest.mark.parametrize("check", list(SPEC_REASONS))
def test_each_failure_reason(check: Check) -> None:
    results = [r(Check.BUILD, P if check is not Check.BUILD else F)]
    if check is Check.BUILD:
        results += [r(Check.POCS, N), r(Check.INTENT, N), r(Check.FUNCTIONAL, N)]
    else:
        results += [
            r(Check.POCS, F if check is Check.POCS else P, pocs_passed=1, pocs_total=2 if check is Check.POCS else 1),
            r(Check.INTENT, F if check is Check.INTENT else P),
            r(Check.FUNCTIONAL, F if check is Check.FUNCTIONAL else P),
        ]
    text = render(LEVELS[0], results, LogSection(check, "L"))
    assert text.splitlines()[0] == f"test_patch result: FAILED. {SPEC_REASONS[check]}"
    assert text.endswith(f"\n\nFull log ({check.label}):\nL")


def test_precedence_build_functional_pocs_intent() -> None:
    everything_failed = [
        r(Check.POCS, F, pocs_passed=0, pocs_total=2),
        r(Check.INTENT, F),
        r(Check.FUNCTIONAL, F),
    ]
    assert failed_check(everything_failed) is Check.FUNCTIONAL
    assert failed_check(everything_failed[:2]) is Check.POCS
    assert failed_check(everything_failed[1:2]) is Check.INTENT


def test_poc_details() -> None:
    text = render(
        LEVELS[1],
        [r(Check.BUILD, P), r(Check.POCS, F, pocs_passed=1, pocs_total=3), r(Check.FUNCTIONAL, P)],
        LogSection(Check.POCS, "asan"),
    )
    assert "- PoCs: FAILED (passed 1 of 3; stopped at the first that still triggers the bug)" in text
    # A failed result adds no "Without the PoCs" sentence.
    assert (
        "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is reported about them.\n" in text
    )
    none = render(
        LEVELS[0],
        [r(Check.BUILD, P), r(Check.POCS, P), r(Check.INTENT, P), r(Check.FUNCTIONAL, P, covered_by_intent=True)],
    )
    assert "- PoCs: passed (the task has none)" in none


def test_checks_the_task_lacks_are_omitted() -> None:
    text = render(LEVELS[0], [r(Check.BUILD, P), r(Check.POCS, P, pocs_passed=1, pocs_total=1), r(Check.FUNCTIONAL, P)])
    assert text == (
        "test_patch result: every check passed.\n\nChecks:\n- build: passed\n"
        "- PoCs: passed (1 of 1)\n- functional tests: passed"
    )


def test_failed_result_requires_its_log() -> None:
    with pytest.raises(ValueError):
        render(LEVELS[3], [r(Check.BUILD, F)])
    with pytest.raises(ValueError):
        render(LEVELS[0], [r(Check.BUILD, P), r(Check.INTENT, F)], LogSection(Check.BUILD, "x"))


def test_internal_failure_text() -> None:
    assert INTERNAL_FAILURE == "An internal testing failure occurred. Your patch is not responsible for this failure."
