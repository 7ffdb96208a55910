"""Each test_patch call's exact result text is kept beside the calls file (server/calllog.py)
and copied into the run folder with the record (ssebench/container/calls.py).

The server part runs for real: FastMCP with the call log middleware and a real MCP client;
the tool is a stand-in that returns the text a test gives it (the real tool's texts are
covered end to end by tests/test_view.py's real run, whose agent prints what it got).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from fastmcp import Client, FastMCP
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssebench.container.calls import read_calls
from ssebench.difficulty import LEVELS
from ssebench.runrecord import CallRecord
from ssebench.server import calllog
from ssebench.server.calllog import CallLog, CallsFile


def serve_texts(texts: list[str], calls: CallsFile) -> list[str]:
    """Call a tool returning each of TEXTS once through the call log; what the client got."""
    mcp = FastMCP("t")
    replies = iter(texts)

    def test_patch() -> str:
        calllog.record(())
        return next(replies)

    mcp.tool(test_patch)
    mcp.add_middleware(CallLog(LEVELS[2], calls=calls))

    async def run() -> list[str]:
        got = []
        async with Client(mcp) as client:
            for _ in texts:
                result = await client.call_tool("test_patch", {}, raise_on_error=False)
                got.append("\n".join(b.text for b in result.content if hasattr(b, "text")))
        return got

    return asyncio.run(run())


def records(path: Path) -> list[CallRecord]:
    return [CallRecord.model_validate_json(line) for line in path.read_text().splitlines()]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=3))
def test_each_call_keeps_exactly_the_text_the_agent_was_shown(tmp_path_factory, texts: list[str]) -> None:
    folder = tmp_path_factory.mktemp("calls")
    shown = serve_texts(texts, CallsFile(folder / "calls.jsonl"))
    kept = records(folder / "calls.jsonl")
    assert [c.text for c in kept] == [f"calls/{n}.txt" for n in range(1, len(texts) + 1)]
    assert [(folder / c.text).read_bytes() for c in kept if c.text] == [t.encode() for t in shown]


def test_a_text_is_cut_at_the_limit_and_the_budget_stops_keeping_them(tmp_path: Path) -> None:
    calls = CallsFile(tmp_path / "calls.jsonl")
    long = "é" * (calllog.TEXT_LIMIT // 2) + "tail"  # 2 bytes a character: the cut falls between two
    calls.budget = calllog.TEXT_LIMIT + 10
    serve_texts([long, "short", "x" * 20], calls)
    kept = records(tmp_path / "calls.jsonl")
    assert [c.text for c in kept] == ["calls/1.txt", "calls/2.txt", None]  # the third is over the budget
    first = (tmp_path / "calls" / "1.txt").read_bytes()
    assert len(first) == calllog.TEXT_LIMIT and first.decode() == "é" * (calllog.TEXT_LIMIT // 2)
    assert (tmp_path / "calls" / "2.txt").read_text() == "short"
    assert sorted(os.listdir(tmp_path / "calls")) == ["1.txt", "2.txt"]


def test_the_texts_are_copied_into_the_results_folder_with_the_records(tmp_path: Path) -> None:
    private, results = tmp_path / "private", tmp_path / "results"
    private.mkdir()
    results.mkdir()
    serve_texts(["first reply", "second reply"], CallsFile(private / "calls.jsonl"))
    with (private / "calls.jsonl").open("a") as stream:  # records naming what is not their text
        for number, text in ((3, "../calls.jsonl"), (4, "calls/1.txt"), (5, "calls/5.txt")):
            call = {"number": number, "level": 2, "ended": "passed", "outcome": "passed", "seconds": 1, "text": text}
            stream.write(json.dumps(call) + "\n")
    (private / "calls" / "5.txt").symlink_to("/etc/passwd")
    calls, count = read_calls(private / "calls.jsonl", texts_to=results)
    assert count == 5 and [c.text for c in calls] == ["calls/1.txt", "calls/2.txt", None, None, None]
    assert sorted(os.listdir(results / "calls")) == ["1.txt", "2.txt"]
    assert (results / "calls" / "2.txt").read_text() == "second reply"
    assert [c.text for c in read_calls(private / "calls.jsonl")[0]] == [None] * 5  # no folder given: no texts
