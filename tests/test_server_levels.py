"""Real runs: ``ssebench serve`` + ``ssebench daemon`` as processes, a real MCP client.

The spec's examples come out verbatim from real runs (fast); every level x
(good patch, build broken, a PoC still triggering, functional tests broken, intent
tests failing) is checked against texts spelled out here (slow). One daemon and
server per level serve every scenario: the tests change the tree between calls.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from test_report import (
    SPEC_BUILD_FAILED_2,
    SPEC_LEVEL_0,
    SPEC_LEVEL_1,
    SPEC_LEVEL_2,
    SPEC_LEVEL_3,
    SPEC_LEVEL_4,
    SPEC_REASONS,
)
from test_server_support import (
    BREAK_BUILD,
    BREAK_FUNCTIONAL,
    BREAK_INTENT,
    VULN_P2,
    Served,
    call_sync,
    serve_task,
    set_markers,
)

from ssebench.difficulty import Check

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def stacks() -> Iterator[dict[str, Served]]:
    """One running stack per level, started on first use, stopped with the module."""
    with contextlib.ExitStack() as exits:

        class Lazy(dict):
            def __missing__(self, level: str) -> Served:
                self[level] = exits.enter_context(serve_task(level))
                return self[level]

        yield Lazy()


def run(stacks: dict[str, Served], level: str, **markers: str | bool) -> str:
    served = stacks[level]
    set_markers(served.tree, **markers)
    result = call_sync(served.stack.url)
    assert not result.is_error
    return result.text


# ------------------------------------------------------------ the spec's examples


@pytest.mark.parametrize(
    ("level", "expected"),
    [("2", SPEC_LEVEL_2), ("0", SPEC_LEVEL_0), ("1", SPEC_LEVEL_1), ("3", SPEC_LEVEL_3)],
)
def test_spec_example_from_a_real_run(stacks: dict[str, Served], level: str, expected: str) -> None:
    assert run(stacks, level) == expected


def test_spec_level_4_example_runs_nothing() -> None:
    # Nothing is asked of the daemon at level 4: it need not even be running.
    with serve_task("4", start_daemon=False) as served:
        assert call_sync(served.stack.url).text == SPEC_LEVEL_4


def test_spec_build_failure_example(stacks: dict[str, Served]) -> None:
    # A passing call first, so the failing build is an incremental one, retried clean.
    run(stacks, "2")
    text = run(stacks, "2", **{BREAK_BUILD: True})
    assert text == SPEC_BUILD_FAILED_2.replace("<log>", "building\n\nbuild broke")


@pytest.mark.slow
def test_unset_difficulty_is_level_2() -> None:
    with serve_task(None) as served:
        assert call_sync(served.stack.url).text == SPEC_LEVEL_2


# ------------------------------------------------------------ every level x scenario

NOTES = {
    "1": "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is reported about them.",
    "2": "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them.",
    "3": "Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. Nothing is reported about them.",
}
WITHOUT_POCS = " Without the PoCs, this result does not show whether the vulnerability is fixed."
LOGS = {
    Check.BUILD: "Full log (build):\nbuilding\n\nbuild broke",
    Check.POCS: "Full log (PoCs):\nrunning p2\n\nERROR: AddressSanitizer: stack-buffer-overflow (p2)",
    Check.INTENT: "Full log (intent tests):\nintent tests\n\nintent test failed",
    Check.FUNCTIONAL: "Full log (functional tests):\nfunctional tests\n\nfunctional test 3 failed",
}
B, PO, I, FU = "- build: ", "- PoCs: ", "- intent tests: ", "- functional tests: "  # noqa: E741 - the four row prefixes, named by their first letter
NR = "not run (the build failed)"
POC_FAIL = "FAILED (passed 1 of 2; stopped at the first that still triggers the bug)"
SCENARIOS = {
    "good": {},
    "build": {BREAK_BUILD: True},
    "poc": {VULN_P2: True},
    "functional": {BREAK_FUNCTIONAL: True},
    "intent": {BREAK_INTENT: True},
}
# (level, scenario) -> (failed check or None, the Checks: lines)
EXPECTED: dict[tuple[str, str], tuple[Check | None, list[str]]] = {
    ("0", "good"): (
        None,
        [B + "passed", PO + "passed (2 of 2)", I + "passed", FU + "passed (covered by the intent tests)"],
    ),
    ("0", "build"): (Check.BUILD, [B + "FAILED", PO + NR, I + NR, FU + NR]),
    ("0", "poc"): (
        Check.POCS,
        [B + "passed", PO + POC_FAIL, I + "passed", FU + "passed (covered by the intent tests)"],
    ),
    # The intent tests pass, so the broken functional tests are never run.
    ("0", "functional"): (
        None,
        [B + "passed", PO + "passed (2 of 2)", I + "passed", FU + "passed (covered by the intent tests)"],
    ),
    ("0", "intent"): (Check.INTENT, [B + "passed", PO + "passed (2 of 2)", I + "FAILED", FU + "passed"]),
    ("1", "good"): (None, [B + "passed", PO + "passed (2 of 2)", FU + "passed"]),
    ("1", "build"): (Check.BUILD, [B + "FAILED", PO + NR, FU + NR]),
    ("1", "poc"): (Check.POCS, [B + "passed", PO + POC_FAIL, FU + "passed"]),
    ("1", "functional"): (Check.FUNCTIONAL, [B + "passed", PO + "passed (2 of 2)", FU + "FAILED"]),
    ("1", "intent"): (None, [B + "passed", PO + "passed (2 of 2)", FU + "passed"]),
    ("2", "good"): (None, [B + "passed", FU + "passed"]),
    ("2", "build"): (Check.BUILD, [B + "FAILED", FU + NR]),
    ("2", "poc"): (None, [B + "passed", FU + "passed"]),
    ("2", "functional"): (Check.FUNCTIONAL, [B + "passed", FU + "FAILED"]),
    ("2", "intent"): (None, [B + "passed", FU + "passed"]),
    ("3", "good"): (None, [B + "passed"]),
    ("3", "build"): (Check.BUILD, [B + "FAILED"]),
    ("3", "poc"): (None, [B + "passed"]),
    ("3", "functional"): (None, [B + "passed"]),
    ("3", "intent"): (None, [B + "passed"]),
}


def expected_text(level: str, failed: Check | None, lines: list[str]) -> str:
    if failed is not None:
        headline = f"test_patch result: FAILED. {SPEC_REASONS[failed]}"
    elif level == "0":
        headline = "test_patch result: every check passed."
    else:
        headline = "test_patch result: every check that ran passed."
    parts = [headline, "\n".join(["Checks:", *lines])]
    if level in NOTES:
        has_pocs = any(line.startswith(PO) for line in lines)
        parts.append(NOTES[level] + (WITHOUT_POCS if failed is None and not has_pocs else ""))
    if failed is not None:
        parts.append(LOGS[failed])
    return "\n\n".join(parts)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("level", ["0", "1", "2", "3", "4"])
def test_level_by_scenario(stacks: dict[str, Served], level: str, scenario: str) -> None:
    if scenario == "build":
        run(stacks, level)  # so the failing build is incremental, then retried clean (LOGS)
    text = run(stacks, level, **SCENARIOS[scenario])
    if level == "4":
        assert text == SPEC_LEVEL_4
    else:
        assert text == expected_text(level, *EXPECTED[(level, scenario)])


@pytest.mark.slow
def test_task_without_pocs_or_intent() -> None:
    with serve_task("0", pocs=False, intent=False) as served:
        assert call_sync(served.stack.url).text == (
            "test_patch result: every check passed.\n\nChecks:\n- build: passed\n"
            "- PoCs: passed (the task has none)\n- functional tests: passed"
        )
        set_markers(served.tree, **{BREAK_FUNCTIONAL: True})
        assert call_sync(served.stack.url).text == (
            f"test_patch result: FAILED. {SPEC_REASONS[Check.FUNCTIONAL]}\n\nChecks:\n- build: passed\n"
            "- PoCs: passed (the task has none)\n- functional tests: FAILED\n\n" + LOGS[Check.FUNCTIONAL]
        )
