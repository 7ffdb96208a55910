"""test_patch as a task (SEP-2663) over real HTTP, driven by the MCP SDK's client with a
tasks client extension: the same answer as a synchronous call, progress as the status
message, fetched after a reconnect, cancelled, expired, private to its bearer token."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator

import httpx
import mcp
import pytest
from mcp.shared.exceptions import MCPError
from test_report import SPEC_LEVEL_2
from test_server import gone, slow_build
from test_server_support import (
    BREAK_BUILD,
    LONG_BUILD,
    SLOW_BUILD,
    SLOW_FUNCTIONAL,
    TASKS,
    Served,
    TasksClient,
    cancel_task,
    get_task,
    modern_client,
    serve_task,
    set_markers,
    wait_task,
)

from ssebench.server.report import INTERNAL_FAILURE

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def level2() -> Iterator[Served]:
    with serve_task("2", server_args=("--heartbeat", "0.3"), env={"SSE_MCP_TASK_TTL": "3s"}) as served:
        yield served


@pytest.fixture
def clean(level2: Served) -> Iterator[Served]:
    set_markers(level2.tree)
    yield level2
    set_markers(level2.tree)


async def sync_and_task(url: str) -> tuple[dict[str, object], dict[str, object], TasksClient]:
    """One synchronous call and one task call of the same tree: both wire results."""
    async with modern_client(url) as plain:
        sync = await plain.call_tool("test_patch", {})
    tasks = TasksClient()
    async with modern_client(url, tasks) as client:
        tasked = await client.call_tool("test_patch", {})
    assert len(tasks.created) == 1, "the call was not answered with a task"
    dump = {"by_alias": True, "mode": "json", "exclude_none": True}
    return sync.model_dump(**dump), tasked.model_dump(**dump), tasks  # type: ignore[arg-type]


@pytest.mark.parametrize("level", ["0", "1", "2", "3", "4"])
def test_a_task_answers_byte_for_byte_what_a_call_answers(level: str) -> None:
    with serve_task(level) as served:
        set_markers(served.tree, **{BREAK_BUILD: False})
        sync, tasked, tasks = asyncio.run(sync_and_task(served.stack.url))
        assert tasked == sync
        created = tasks.created[0]
        assert created.status == "working" and created.ttl_ms == 3_600_000 and len(created.task_id) >= 43


def test_long_log_and_internal_failure_answer_the_same_as_a_task(clean: Served) -> None:
    set_markers(clean.tree, **{LONG_BUILD: True})
    sync, tasked, _ = asyncio.run(sync_and_task(clean.stack.url))
    # each call saves its own full log, so the one name that differs is that file's
    saved = re.compile(re.escape(str(clean.log_dir)) + r"/[0-9a-f-]{36}\.txt")
    texts = [saved.subn("<saved log>", r["content"][0]["text"]) for r in (sync, tasked)]  # type: ignore[index]
    assert texts[0] == texts[1] and texts[0][1] == 1
    assert {**tasked, "content": None} == {**sync, "content": None}
    with serve_task("2", start_daemon=False) as down:
        sync, tasked, _ = asyncio.run(sync_and_task(down.stack.url))
        assert tasked == sync
        assert sync["content"][0]["text"] == INTERNAL_FAILURE  # type: ignore[index]


def test_progress_reaches_the_client_as_the_status_message(clean: Served) -> None:
    # the functional tests last a few polls (a `true` check takes ~25 ms, less than a poll)
    set_markers(clean.tree, **{SLOW_BUILD: "1.5", SLOW_FUNCTIONAL: "0.3"})
    tasks = TasksClient(poll=0.05)

    async def scenario() -> str:
        async with modern_client(clean.stack.url, tasks) as client:
            result = await client.call_tool("test_patch", {})
        return result.content[0].text  # type: ignore[union-attr]

    assert asyncio.run(scenario()) == SPEC_LEVEL_2
    assert tasks.messages[0] in ("starting", "build: started", "build: running, 0s")
    assert any(m.startswith("build: running, 1s") for m in tasks.messages), tasks.messages
    # a poll sees the status as it is then: a line that lasted less than a poll may be missed
    assert any(m.startswith("functional tests: ") for m in tasks.messages), tasks.messages


def test_a_task_outlives_its_connection_and_expires_after_its_ttl(clean: Served) -> None:
    set_markers(clean.tree, **{SLOW_BUILD: "2"})

    async def scenario() -> None:
        async with modern_client(clean.stack.url, TasksClient()) as first:
            created = await first.session.call_tool("test_patch", {}, allow_claimed=True)
        task_id = created.task_id  # type: ignore[union-attr]
        # the first connection is closed; another one fetches the task
        async with modern_client(clean.stack.url, TasksClient()) as second:
            task = await wait_task(second.session, task_id, 0.1)
            assert task.status == "completed" and task.result is not None
            assert task.result["content"][0]["text"] == SPEC_LEVEL_2
            assert task.ttl_ms is not None and 3_000 < task.ttl_ms < 10_000
            ended = time.monotonic()
            while time.monotonic() - ended < 10:
                try:
                    await get_task(second.session, task_id)
                except MCPError as exc:
                    assert (exc.error.code, exc.error.message) == (-32602, "Failed to retrieve task: Task not found")
                    assert time.monotonic() - ended > 2.5  # kept for its TTL (3 s here)
                    return
                await asyncio.sleep(0.2)
            raise AssertionError("the task was still there 10 s after it ended")

    asyncio.run(scenario())


def test_cancelling_a_task_stops_the_check_and_frees_the_queue(clean: Served) -> None:
    set_markers(clean.tree, **{SLOW_BUILD: "120"})

    async def scenario() -> None:
        async with modern_client(clean.stack.url, TasksClient()) as client:
            created = await client.session.call_tool("test_patch", {}, allow_claimed=True)
            build = await asyncio.to_thread(slow_build, clean)
            await cancel_task(client.session, created.task_id)  # type: ignore[union-attr]
            assert await asyncio.to_thread(gone, build)
            task = await wait_task(client.session, created.task_id, 0.05)  # type: ignore[union-attr]
            assert task.status == "cancelled" and task.result is None
            await cancel_task(client.session, created.task_id)  # type: ignore[union-attr]  # idempotent
            set_markers(clean.tree)
            started = time.monotonic()
            result = await client.call_tool("test_patch", {})
            assert result.content[0].text == SPEC_LEVEL_2  # type: ignore[union-attr]
            assert time.monotonic() - started < 30

    asyncio.run(scenario())


def test_task_methods_need_the_extension_and_the_revision(clean: Served) -> None:
    async def scenario() -> None:
        async with modern_client(clean.stack.url) as plain:  # no tasks in its capabilities
            with pytest.raises(MCPError) as err:
                await get_task(plain.session, "x")
            assert err.value.error.code == -32021
            assert err.value.error.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
        async with modern_client(clean.stack.url, TasksClient()) as client:
            with pytest.raises(MCPError) as err:
                await get_task(client.session, "no-such-task")
            assert err.value.error.code == -32602

    asyncio.run(scenario())
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "x"}}
    with httpx.Client(timeout=10) as http:  # 2025-11-25: the method does not exist there
        session = _initialize(http, clean.stack.url)
        reply = http.post(clean.stack.url, json=body, headers={**_HEADERS, "mcp-session-id": session})
        assert '"code":-32601' in reply.text.replace(" ", "")


def test_with_bearer_tokens_a_client_sees_only_its_own_tasks() -> None:
    with serve_task("2", env={"SSE_MCP_BEARER_TOKENS": "token-a,token-b"}) as served:
        assert httpx.post(served.stack.url, json={}, headers=_HEADERS, timeout=10).status_code == 401

        async def scenario() -> None:
            a = {"Authorization": "Bearer token-a"}
            b = {"Authorization": "Bearer token-b"}
            async with modern_client(served.stack.url, TasksClient(), headers=a) as client_a:
                created = await client_a.session.call_tool("test_patch", {}, allow_claimed=True)
                task_id = created.task_id  # type: ignore[union-attr]
                async with modern_client(served.stack.url, TasksClient(), headers=b) as client_b:
                    with pytest.raises(MCPError) as err:
                        await get_task(client_b.session, task_id)
                    assert err.value.error.message == "Failed to retrieve task: Task not found"
                    with pytest.raises(MCPError):
                        await cancel_task(client_b.session, task_id)
                task = await wait_task(client_a.session, task_id, 0.1)
                assert task.result is not None and task.result["content"][0]["text"] == SPEC_LEVEL_2

        asyncio.run(scenario())


_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _initialize(http: httpx.Client, url: str) -> str:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    reply = http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=_HEADERS)
    session = reply.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    http.post(url, json=note, headers=headers)
    _HEADERS_2025.update(headers)
    return session


_HEADERS_2025: dict[str, str] = {}


def test_server_discover_answers_on_2026_07_28(clean: Served) -> None:
    """FastMCP 4.2 serves ``server/discover``: the SDK client's default mode probes it first."""

    async def scenario() -> dict[str, object]:
        async with mcp.Client(clean.stack.url) as client:  # mode "auto": server/discover, then adopt
            found = await client.session.discover()  # the probe's answer, kept by the session
            assert client.protocol_version == "2026-07-28"
            return found.model_dump(by_alias=True, mode="json", exclude_none=True)

    found = asyncio.run(scenario())
    assert found["supportedVersions"] == ["2026-07-28"] and found["resultType"] == "complete"
    assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "ssebench"  # type: ignore[index]
    capabilities = found["capabilities"]
    assert capabilities["tools"] == {"listChanged": False}  # type: ignore[index]
    assert TASKS in capabilities["extensions"]  # type: ignore[index]
