"""What the server accepts from the daemon: anything off-contract is an internal failure."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from ssebench.checks import Check, State
from ssebench.contract import Result
from ssebench.server.daemon_client import DaemonError, _parse_event, parse_result

BUILD_FUNCTIONAL = [Check.BUILD, Check.FUNCTIONAL]
ALL = [Check.BUILD, Check.POCS, Check.INTENT, Check.FUNCTIONAL]


def result(*checks: object, **fields: object) -> str:
    """The ``result`` line of a run with *checks*."""
    return json.dumps({"event": "result", "run_id": "r-1", "checks": list(checks), **fields})


def parse(line: str, requested: Sequence[Check]) -> Result:
    """What the client does with a result line: read it typed, then check it against the request."""
    event = _parse_event(line)
    assert isinstance(event, Result)
    return parse_result(event, requested)


def test_a_well_formed_result() -> None:
    parsed = parse(
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
    parsed = parse(
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
        parse(result(*checks), BUILD_FUNCTIONAL)


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
        parse(result({"check": "build", "state": "passed"}, pocs), [Check.BUILD, Check.POCS])


def test_missing_pocs_when_asked_is_refused() -> None:
    with pytest.raises(DaemonError):
        parse(result({"check": "build", "state": "passed"}), [Check.BUILD, Check.POCS])


@pytest.mark.parametrize("line", ["not json", "[1, 2]", '{"no": "event"}', '{"event": 3}'])
def test_malformed_event_lines(line: str) -> None:
    with pytest.raises(DaemonError):
        _parse_event(line)


def test_result_without_run_id() -> None:
    with pytest.raises(DaemonError):
        _parse_event(json.dumps({"event": "result", "checks": []}))


@pytest.mark.parametrize(
    "event",
    [
        {"event": "lint_started", "check": "build"},  # no such event
        {"event": "check_started", "check": "build", "extra": 1},  # a key the contract lacks
        {"event": "check_started", "check": "lint"},
        {"event": "check_started"},
        {"event": "queued", "position": "1"},
        {"event": "heartbeat", "check": "build", "elapsed": "0.2"},
        {"event": "heartbeat", "queued": True},
        {"event": "started", "run_id": 7, "difficulty": 2},
        {"event": "check_finished", "check": "build", "state": "passed", "timed_out": "no"},
        {"event": "check_finished", "check": "build", "state": "passed", "covered_by_intent": 1},
        {"event": "check_finished", "check": "build", "state": "passed", "log_bytes": 1.5},
        {"event": "error"},
        {"event": "result", "run_id": "", "checks": []},
        {"event": "result", "run_id": "r-1", "checks": {}},
        {"event": "result", "run_id": "r-1", "checks": [], "difficulty": "2"},
    ],
)
def test_off_contract_events_are_refused(event: dict) -> None:
    with pytest.raises(DaemonError, match="^off-contract event from the daemon: "):
        _parse_event(json.dumps(event))


def test_the_documented_events_are_read_typed() -> None:
    """docs/daemon-api.md's level-0 stream, line by line."""
    from ssebench import contract

    lines = [
        '{"event": "queued", "position": 1}',
        '{"event": "heartbeat", "queued": 1}',
        '{"event": "started", "run_id": "r-1-8e3b8035", "difficulty": 0}',
        '{"event": "check_started", "check": "pocs"}',
        '{"event": "heartbeat", "check": "pocs", "elapsed": 0.2}',
        '{"event": "check_finished", "check": "pocs", "state": "failed", "timed_out": false, "elapsed": 0.303, '
        '"pocs_passed": 0, "pocs_total": 2, "covered_by_intent": false, "has_log": true, "log_bytes": 2880}',
        '{"event": "error", "message": "the daemon is shutting down"}',
    ]
    events = [_parse_event(line) for line in lines]
    assert [type(e) for e in events] == [
        contract.Queued,
        contract.QueueHeartbeat,
        contract.Started,
        contract.CheckStarted,
        contract.CheckHeartbeat,
        contract.CheckFinished,
        contract.Error,
    ]
    finished = events[5]
    assert isinstance(finished, contract.CheckFinished)
    assert finished.result == contract.CheckResult(Check.POCS, State.FAILED, False, 0.303, 0, 2, False, True, 2880)
    # What the daemon writes for these is the line it was read from, to the byte.
    assert [contract.to_line(e).decode() for e in events] == [line + "\n" for line in lines]
