"""Resumable 2025-11-25 streams over real HTTP: the priming event and ``retry`` field, a
client that reconnects with ``Last-Event-ID`` gets what it missed and the answer (by hand,
and by the MCP SDK's own client through a connection that really drops), a dropped
stream's check goes on for the resume grace and stops after it, and on 2026-07-28 (no
resumption there) a dropped client stops the check at once."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import mcp
import pytest
from test_report import SPEC_LEVEL_2
from test_server import gone, slow_build
from test_server_support import SLOW_BUILD, Served, call_sync, serve_task, set_markers

from tests.helpers.cutproxy import CutProxy

pytestmark = pytest.mark.timeout(180)

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
GRACE = 4.0


@pytest.fixture(scope="module")
def level2() -> Iterator[Served]:
    env = {"SSE_MCP_RESUME_GRACE": f"{GRACE:g}s"}
    with serve_task("2", server_args=("--heartbeat", "0.3"), env=env) as served:
        yield served


@pytest.fixture
def clean(level2: Served) -> Iterator[Served]:
    set_markers(level2.tree)
    yield level2
    set_markers(level2.tree)


def session(http: httpx.Client, url: str) -> dict[str, str]:
    """A 2025-11-25 session (initialize + initialized); its headers for later requests."""
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    reply = http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=ACCEPT)
    headers = {**ACCEPT, "mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def events(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """SSE events as dicts of their fields (``id``, ``data``, ``retry``)."""
    event: dict[str, str] = {}
    for line in lines:
        if not line:
            if event:
                yield event
            event = {}
            continue
        name, _, value = line.partition(":")
        event[name] = event.get(name, "") + value.removeprefix(" ")


CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "test_patch", "arguments": {}}}
CALL["params"]["_meta"] = {"progressToken": "p"}  # type: ignore[index]


def test_a_dropped_stream_is_resumed_with_what_it_missed_and_the_answer(clean: Served) -> None:
    set_markers(clean.tree, **{SLOW_BUILD: "2"})
    with httpx.Client(timeout=60) as http:
        headers = session(http, clean.stack.url)
        seen: list[dict[str, str]] = []
        with http.stream("POST", clean.stack.url, json=CALL, headers=headers) as stream:
            for event in events(stream.iter_lines()):
                seen.append(event)
                if len(seen) == 3:
                    break  # the client goes away mid-call
        priming = seen[0]
        assert priming["data"] == "" and priming["id"] and priming["retry"] == "2000"
        assert json.loads(seen[1]["data"])["method"] == "notifications/progress"
        resume = {**headers, "Last-Event-ID": seen[2]["id"]}
        missed: list[dict[str, str]] = []
        with http.stream("GET", clean.stack.url, headers=resume) as stream:
            for event in events(stream.iter_lines()):
                missed.append(event)
                if '"result"' in event.get("data", ""):
                    break
    messages = [json.loads(e["data"]) for e in missed if e.get("data")]
    progress = [m["params"]["message"] for m in messages if m.get("method") == "notifications/progress"]
    assert "build: passed" in progress and "functional tests: passed" in progress
    counters = [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"]
    assert counters == sorted(counters) and counters[0] == json.loads(seen[2]["data"])["params"]["progress"] + 1
    answer = messages[-1]
    assert answer["id"] == 7 and answer["result"]["content"][0]["text"] == SPEC_LEVEL_2


def test_the_sdk_client_resumes_a_dropped_stream_by_itself(clean: Served) -> None:
    """The MCP SDK's client (2025-11-25) loses its call's stream mid-call, reconnects with
    ``Last-Event-ID`` after the server's ``retry``, and gets the rest and the answer."""
    set_markers(clean.tree, **{SLOW_BUILD: "2"})
    server = urlsplit(clean.stack.url)
    progress: list[str | None] = []
    counters: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)
        counters.append(value)

    async def scenario() -> tuple[str, CutProxy]:
        async with CutProxy(server.port or 80, b"notifications/progress") as proxy:
            url = f"http://127.0.0.1:{proxy.port}{server.path}"
            async with mcp.Client(url, mode="legacy") as client:
                assert client.session.protocol_version == "2025-11-25"
                result = await client.call_tool("test_patch", {}, progress_callback=on_progress)
            return result.content[0].text, proxy  # type: ignore[union-attr]

    text, proxy = asyncio.run(scenario())
    assert text == SPEC_LEVEL_2
    assert proxy.cut.is_set()  # the stream really dropped mid-call
    resumed = [event_id for method, event_id in proxy.requests if method == "GET" and event_id]
    assert len(resumed) == 1, proxy.requests
    assert progress[0] in ("build: started", "build: running, 0s")  # before the drop
    assert "build: passed" in progress and "functional tests: passed" in progress  # after it
    # each progress once, in order, none missed across the drop
    assert counters == [counters[0] + i for i in range(len(counters))]


def test_another_session_cannot_resume_a_stream(clean: Served) -> None:
    with httpx.Client(timeout=60) as http:
        mine = session(http, clean.stack.url)
        with http.stream("POST", clean.stack.url, json=CALL, headers=mine) as stream:
            received = list(events(stream.iter_lines()))  # the whole call, answer included
        first = received[0]
        assert "test_patch result" in received[-1]["data"]
        other = session(http, clean.stack.url)
        replay = http.get(clean.stack.url, headers={**other, "Last-Event-ID": first["id"]}, timeout=5)
        assert '"result"' not in replay.text and "test_patch result" not in replay.text


@pytest.mark.slow
def test_a_dropped_stream_runs_on_for_the_grace_then_stops(clean: Served) -> None:
    set_markers(clean.tree, **{SLOW_BUILD: "120"})
    with httpx.Client(timeout=60) as http:
        headers = session(http, clean.stack.url)
        with http.stream("POST", clean.stack.url, json=CALL, headers=headers) as stream:
            next(events(stream.iter_lines()))
            build = slow_build(clean)
        dropped = time.monotonic()
    assert not gone(build, GRACE - 1.5)  # still running: the client may come back
    assert gone(build, 20)
    assert time.monotonic() - dropped >= GRACE - 0.5
    set_markers(clean.tree)
    assert call_sync(clean.stack.url).text == SPEC_LEVEL_2


@pytest.mark.slow
def test_on_2026_07_28_a_dropped_client_stops_the_check_at_once(clean: Served) -> None:
    set_markers(clean.tree, **{SLOW_BUILD: "120"})
    script = (
        "import asyncio, sys\n"
        "import mcp\n"
        "async def main():\n"
        "    async with mcp.Client(sys.argv[1], mode='2026-07-28') as c:\n"
        "        await c.call_tool('test_patch', {})\n"
        "asyncio.run(main())\n"
    )
    client = subprocess.Popen([sys.executable, "-c", script, clean.stack.url], stderr=subprocess.DEVNULL)
    try:
        build = slow_build(clean)
        client.kill()  # gone without a word
        client.wait()
        assert gone(build, GRACE - 1)  # well before a 2025-11-25 grace would end
    finally:
        client.kill()
        client.wait()
    set_markers(clean.tree)
    assert call_sync(clean.stack.url).text == SPEC_LEVEL_2
