"""What the server accepts from the daemon: anything off-contract is an internal failure."""

from __future__ import annotations

import pytest

from ssebench.difficulty import Check
from ssebench.server.daemon_client import DaemonError, Event, _parse_event, parse_result
from ssebench.server.report import State

BUILD_FUNCTIONAL = [Check.BUILD, Check.FUNCTIONAL]
ALL = [Check.BUILD, Check.POCS, Check.INTENT, Check.FUNCTIONAL]


def result(*checks: dict) -> Event:
    return Event("result", {"event": "result", "run_id": "r-1", "checks": list(checks)})


def test_a_well_formed_result() -> None:
    parsed = parse_result(
        result(
            {"check": "build", "state": "passed"},
            {"check": "pocs", "state": "failed", "pocs_passed": 1, "pocs_total": 2},
            {"check": "intent", "state": "passed"},
            {"check": "functional", "state": "passed", "covered_by_intent": True},
        ),
        ALL,
    )
    assert parsed.run_id == "r-1"
    assert [(c.check, c.state) for c in parsed.checks] == [
        (Check.BUILD, State.PASSED),
        (Check.POCS, State.FAILED),
        (Check.INTENT, State.PASSED),
        (Check.FUNCTIONAL, State.PASSED),
    ]
    assert parsed.checks[1].pocs_passed == 1 and parsed.checks[1].pocs_total == 2
    assert parsed.checks[3].covered_by_intent


def test_not_run_pocs_may_have_null_counts() -> None:
    parsed = parse_result(
        result(
            {"check": "build", "state": "failed"},
            {"check": "pocs", "state": "not_run", "pocs_passed": None, "pocs_total": None},
        ),
        [Check.BUILD, Check.POCS],
    )
    assert parsed.checks[1].state is State.NOT_RUN


@pytest.mark.parametrize(
    "checks",
    [
        [{"check": "build", "state": "passed"}, {"check": "pocs", "state": "passed", "pocs_total": 1}],  # not asked
        [{"check": "functional", "state": "passed"}, {"check": "build", "state": "passed"}],  # order
        [{"check": "build", "state": "passed"}, {"check": "build", "state": "passed"}],  # twice
        [{"check": "functional", "state": "passed"}],  # no build
        [{"check": "build", "state": "fine"}],  # unknown state
        [{"check": "lint", "state": "passed"}],  # unknown check
        ["build"],  # not an object
    ],
)
def test_off_contract_results_are_refused(checks: list) -> None:
    with pytest.raises(DaemonError):
        parse_result(result(*checks), BUILD_FUNCTIONAL)


@pytest.mark.parametrize(
    "pocs",
    [
        {"check": "pocs", "state": "failed", "pocs_passed": 3, "pocs_total": 2},
        {"check": "pocs", "state": "passed", "pocs_passed": "2", "pocs_total": 2},
        {"check": "pocs", "state": "passed"},
    ],
)
def test_bad_poc_counts_are_refused(pocs: dict) -> None:
    with pytest.raises(DaemonError):
        parse_result(result({"check": "build", "state": "passed"}, pocs), [Check.BUILD, Check.POCS])


def test_missing_pocs_when_asked_is_refused() -> None:
    with pytest.raises(DaemonError):
        parse_result(result({"check": "build", "state": "passed"}), [Check.BUILD, Check.POCS])


@pytest.mark.parametrize("line", ["not json", "[1, 2]", '{"no": "event"}', '{"event": 3}'])
def test_malformed_event_lines(line: str) -> None:
    with pytest.raises(DaemonError):
        _parse_event(line)


def test_result_without_run_id() -> None:
    with pytest.raises(DaemonError):
        parse_result(Event("result", {"checks": []}), [Check.BUILD])
