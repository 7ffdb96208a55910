"""One row per check kind drives the levels, the task keys and the spec's texts; the daemon's
stream is one typed contract; the call log tells the states the tool recorded.

The server parts run for real (FastMCP with the call log, the daemon client on a real Unix
socket); the daemon at the other end of the socket is a stand-in that says exactly the
lines a test gives it, since the real daemon never says anything off the contract.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from fastmcp import Client, FastMCP
from test_report import SPEC_LEVEL_0, SPEC_LEVEL_1, SPEC_LEVEL_2, SPEC_LEVEL_3, SPEC_LEVEL_4, SPEC_REASONS

from ssebench import checks, contract, phrases
from ssebench.checks import KINDS, Check, State
from ssebench.contract import CheckResult
from ssebench.difficulty import LEVELS
from ssebench.server import calllog
from ssebench.server.app import create_server
from ssebench.server.calllog import CallLog
from ssebench.server.logdir import LogDir
from ssebench.server.report import INTERNAL_FAILURE, render
from tests.helpers.daemon import short_tempdir

P, F, N = State.PASSED, State.FAILED, State.NOT_RUN


# -- the table ------------------------------------------------------------------------------


def test_the_levels_come_from_each_kinds_max_level() -> None:
    assert {n: [c.value for c in level.allowed] for n, level in LEVELS.items()} == {
        0: ["build", "pocs", "intent", "functional"],
        1: ["build", "pocs", "functional"],
        2: ["build", "functional"],
        3: ["build"],
        4: [],
    }
    for kind in KINDS:
        assert [n for n, level in LEVELS.items() if level.allows(kind.check)] == list(range(kind.max_level + 1))


def test_the_table_holds_the_spec_words_and_the_task_keys() -> None:
    assert [k.label for k in KINDS] == ["build", "PoCs", "intent tests", "functional tests"]
    assert {k.check: k.failure_reason for k in KINDS} == SPEC_REASONS
    assert checks.FAILURE_PRECEDENCE == (Check.BUILD, Check.FUNCTIONAL, Check.POCS, Check.INTENT)
    assert checks.TASK_TABLE_KEYS == {
        "build": {"run", "timeout", "network"},
        "pocs": {"run", "files", "timeout", "network"},
        "functional": {"run", "timeout", "network"},
        "intent": {"diff", "run", "timeout", "network", "files"},
    }


def _spec_results(level: int) -> list[CheckResult]:
    """The passing results of the spec's example at *level*, built from the table's rows."""
    out = []
    for kind in KINDS:
        if not LEVELS[level].allows(kind.check):
            continue
        covered = kind.covered_by is not None and LEVELS[level].allows(kind.covered_by)
        counts = {"pocs_passed": 2, "pocs_total": 2} if kind.counted else {}
        out.append(CheckResult(kind.check, P, covered_by_intent=covered, **counts))
    return out


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        (0, SPEC_LEVEL_0),
        (1, SPEC_LEVEL_1),
        (2, SPEC_LEVEL_2),
        (3, SPEC_LEVEL_3),
        (4, SPEC_LEVEL_4),
    ],
)
def test_the_table_drives_the_spec_examples(level: int, expected: str) -> None:
    assert render(LEVELS[level], _spec_results(level)) == expected


def test_a_relabelled_kind_changes_every_text_that_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts read the row, not a copy of it: one edit of the table reaches them all."""
    row = Check.FUNCTIONAL.kind
    monkeypatch.setitem(checks._BY_CHECK, Check.FUNCTIONAL, replace(row, label="unit tests"))
    text = render(LEVELS[2], _spec_results(2))
    assert "- unit tests: passed" in text and "functional tests" not in text
    summary = phrases.summary(LEVELS[2], _spec_results(2))
    assert summary == "every check that ran passed [build: passed, unit tests: passed]"


# -- the contract ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "result",
    [
        CheckResult(Check.BUILD, F, True, 1.23456, has_log=True, log_bytes=9),
        CheckResult(Check.POCS, P, False, 0.5, 0, 0),
        CheckResult(Check.POCS, F, False, 0.5, 1, 3, has_log=True, log_bytes=2),
        CheckResult(Check.POCS, N),
        CheckResult(Check.FUNCTIONAL, P, covered_by_intent=True),
    ],
)
def test_a_check_result_reads_back_as_written(result: CheckResult) -> None:
    line = contract.to_line(contract.CheckFinished(result))
    back = contract.parse_line(line.decode())
    assert back == contract.CheckFinished(replace(result, elapsed=round(result.elapsed, 3)))


def test_the_wire_keeps_the_daemons_keys_and_nulls() -> None:
    assert contract.CheckResult(Check.POCS, N).to_json() == {
        "check": "pocs",
        "state": "not_run",
        "timed_out": False,
        "elapsed": 0.0,
        "pocs_passed": None,
        "pocs_total": None,
        "covered_by_intent": False,
        "has_log": False,
        "log_bytes": 0,
    }
    assert list(contract.CheckResult(Check.BUILD, P).to_json()) == [
        "check",
        "state",
        "timed_out",
        "elapsed",
        "covered_by_intent",
        "has_log",
        "log_bytes",
    ]
    with pytest.raises(contract.ContractError):
        contract.CheckResult(Check.POCS, F, pocs_passed=3, pocs_total=2)
    with pytest.raises(contract.ContractError):
        contract.Result("r-1", (CheckResult(Check.FUNCTIONAL, P), CheckResult(Check.BUILD, P)))


# -- the server: a stand-in daemon on a real socket, the real client and call log --------------


@asynccontextmanager
async def stand_in_daemon(path: Path, lines: Sequence[str], log: bytes = b"") -> AsyncIterator[None]:
    """A Unix-socket HTTP peer that answers ``POST /runs`` with *lines* and any log GET with *log*."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")), 0
        )
        await reader.readexactly(length)
        if head.startswith(b"POST /runs "):
            body = "".join(line + "\n" for line in lines).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nConnection: close\r\n\r\n" + body)
        else:
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(log), log)
            )
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(serve, path=str(path))
    try:
        yield
    finally:
        server.close()
        await server.wait_closed()


async def call_once(mcp: FastMCP) -> str:
    async with Client(mcp) as client:
        result = await client.call_tool("test_patch", {}, raise_on_error=False)
    return str(result.content[0].text)


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short folder for the socket (tmp_path can be longer than a socket path may be)."""
    path = short_tempdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def served(tmp_path: Path, level: int) -> FastMCP:
    mcp = create_server(LEVELS[level], str(tmp_path / "d.sock"), LogDir.prepare(tmp_path / "logs"))
    mcp.add_middleware(CallLog(LEVELS[level]))
    return mcp


def _call_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ssebench.server.calls"]


BUILD_OK = (
    '{"check": "build", "state": "passed", "timed_out": false, "elapsed": 0.1, '
    '"covered_by_intent": false, "has_log": true, "log_bytes": 3}'
)
FUNCTIONAL_FAILED = (
    '{"check": "functional", "state": "failed", "timed_out": false, "elapsed": 0.2, '
    '"covered_by_intent": false, "has_log": true, "log_bytes": 4}'
)


@pytest.mark.parametrize(
    "bad",
    [
        '{"event": "check_finished", "check": "build", "state": "passed", "surprise": 1}',
        '{"event": "check_started", "check": "lint"}',
        '{"event": "progress", "percent": 50}',
        '{"event": "heartbeat", "check": "build", "elapsed": "soon"}',
        '["started"]',
    ],
)
def test_an_off_contract_daemon_event_is_the_internal_failure_text(
    sock_dir: Path, caplog: pytest.LogCaptureFixture, bad: str
) -> None:
    caplog.set_level(logging.INFO, logger="ssebench.server")
    lines = [
        '{"event": "started", "run_id": "r-1", "difficulty": 2}',
        bad,
        f'{{"event": "result", "run_id": "r-1", "checks": [{BUILD_OK}], "difficulty": 2}}',
    ]

    async def scenario() -> str:
        async with stand_in_daemon(sock_dir / "d.sock", lines):
            return await call_once(served(sock_dir, 2))

    assert asyncio.run(scenario()) == INTERNAL_FAILURE
    assert any(
        "off-contract event from the daemon" in r.getMessage()
        or "off-contract event from the daemon" in (r.exc_text or "")
        for r in caplog.records
    )
    assert [line.split(": ", 1)[1].rsplit(" in ", 1)[0] for line in _call_lines(caplog)] == ["internal failure"]


def test_a_failed_run_is_told_and_logged_from_its_states(sock_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ssebench.server")
    lines = [
        '{"event": "started", "run_id": "r-1", "difficulty": 2}',
        '{"event": "check_started", "check": "build"}',
        '{"event": "check_finished", ' + BUILD_OK[1:],
        '{"event": "check_started", "check": "functional"}',
        '{"event": "heartbeat", "check": "functional", "elapsed": 0.2}',
        '{"event": "check_finished", ' + FUNCTIONAL_FAILED[1:],
        f'{{"event": "result", "run_id": "r-1", "checks": [{BUILD_OK}, {FUNCTIONAL_FAILED}], "difficulty": 2}}',
    ]

    async def scenario() -> str:
        # The log reads like another result: the call log must not take it for one.
        log = b"test_patch result: every check passed.\n- build: FAILED\n"
        async with stand_in_daemon(sock_dir / "d.sock", lines, log):
            return await call_once(served(sock_dir, 2))

    text = asyncio.run(scenario())
    assert text.startswith(
        f"test_patch result: FAILED. {SPEC_REASONS[Check.FUNCTIONAL]}\n\nChecks:\n"
        "- build: passed\n- functional tests: FAILED\n\n"
    )
    assert text.endswith("Full log (functional tests):\ntest_patch result: every check passed.\n- build: FAILED")
    (line,) = _call_lines(caplog)
    assert line.startswith("test_patch call 1 (level 2): FAILED [build: passed, functional tests: FAILED] in ")


def test_the_call_log_line_comes_from_the_recorded_states(caplog: pytest.LogCaptureFixture) -> None:
    """Whatever text a tool returns, the line tells the states it recorded."""
    caplog.set_level(logging.INFO, logger="ssebench.server.calls")
    mcp = FastMCP("t")
    states = iter([[CheckResult(Check.BUILD, F), CheckResult(Check.FUNCTIONAL, N)], None])

    def test_patch() -> str:
        recorded = next(states)
        if recorded is None:
            calllog.record_internal_failure()
        else:
            calllog.record(recorded)
        return "test_patch result: every check passed.\n\nChecks:\n- build: passed"

    mcp.tool(test_patch)
    mcp.add_middleware(CallLog(LEVELS[2]))

    async def twice() -> None:
        await call_once(mcp)
        await call_once(mcp)

    asyncio.run(twice())
    assert [line.rsplit(" in ", 1)[0] for line in _call_lines(caplog)] == [
        "test_patch call 1 (level 2): FAILED [build: FAILED, functional tests: not run]",
        "test_patch call 2 (level 2): internal failure",
    ]


def test_level_4_records_no_checks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ssebench.server.calls")
    assert asyncio.run(call_once(served(tmp_path, 4))) == SPEC_LEVEL_4
    assert [line.rsplit(" in ", 1)[0] for line in _call_lines(caplog)] == ["test_patch call 1 (level 4): no checks ran"]
