"""The server's behaviour over real HTTP: tool listing, progress, queue, cancel,
daemon outages, long logs, the Host/Origin guard. Real daemon and server processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from fastmcp import Client
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from test_report import SPEC_LEVEL_2, SPEC_REASONS
from test_server_support import (
    BREAK_BUILD,
    LONG_BUILD,
    SLOW_BUILD,
    Served,
    call,
    call_sync,
    post_mcp,
    serve_task,
    set_markers,
)

from ssebench.difficulty import Check
from ssebench.server.report import INTERNAL_FAILURE
from ssebench.server.stack import stop

pytestmark = pytest.mark.timeout(180)


def slow_build(served: Served, timeout: float = 30.0) -> psutil.Process:
    """The slow build's ``sleep <SLOW_BUILD>``, found from outside.

    The check runs in the sandbox's own pid namespace and can write nothing the test sees,
    so the test looks for it the way an operator would: among the daemon's descendants.
    """
    assert served.stack.daemon is not None
    wanted = ["sleep", (served.tree / SLOW_BUILD).read_text()]
    daemon = psutil.Process(served.stack.daemon.pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in daemon.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if proc.cmdline() == wanted:
                    return proc
        time.sleep(0.02)
    raise AssertionError(f"no {' '.join(wanted)!r} under the daemon after {timeout:g} s")


def gone(proc: psutil.Process, timeout: float = 10.0) -> bool:
    try:
        proc.wait(timeout)
    except psutil.TimeoutExpired:
        return False
    return True


@pytest.fixture(scope="module")
def level2() -> Iterator[Served]:
    """A level-2 stack with a fast heartbeat, shared by the tests that leave it clean."""
    with serve_task("2", server_args=("--heartbeat", "0.3")) as served:
        yield served


@pytest.fixture
def clean(level2: Served) -> Iterator[Served]:
    set_markers(level2.tree)
    yield level2
    set_markers(level2.tree)


async def test_tool_listing_through_the_mcp_sdk(clean: Served) -> None:
    async with streamable_http_client(clean.stack.url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "ssebench"
            tools = (await session.list_tools()).tools
            assert [t.name for t in tools] == ["test_patch"]
            tool = tools[0]
            assert tool.input_schema.get("properties", {}) == {} and not tool.input_schema.get("required")
            assert tool.output_schema is None
            for phrase in ("uncommitted change", "many minutes", "build", "PoCs", "intent tests", "functional tests"):
                assert phrase in (tool.description or "")
            result = await session.call_tool("test_patch", {})
            assert [c.type for c in result.content] == ["text"]
            assert result.content[0].text == SPEC_LEVEL_2
            assert result.structured_content is None


async def test_progress_at_each_check_and_heartbeats(clean: Served) -> None:
    set_markers(clean.tree, **{SLOW_BUILD: "1.5"})
    result = await call(clean.stack.url)
    assert result.text == SPEC_LEVEL_2
    values = [p[0] for p in result.progress]
    assert values == sorted(values) and len(set(values)) == len(values)
    messages = [p[2] for p in result.progress]
    assert messages[0] == "build: started"
    heartbeats = [m for m in messages if m and m.startswith("build: running, ")]
    assert len(heartbeats) >= 3, messages
    assert heartbeats[-1] in ("build: running, 1s", "build: running, 2s")
    tail = messages[messages.index("build: passed") :]
    assert [m for m in tail if not m.startswith("functional tests: running")] == [
        "build: passed",
        "functional tests: started",
        "functional tests: passed",
    ]


async def daemon_queued(served: Served) -> int:
    transport = httpx.AsyncHTTPTransport(uds=str(served.stack.socket))
    async with httpx.AsyncClient(transport=transport, base_url="http://daemon") as client:
        return int((await client.get("/health")).json()["queued"])


async def test_calls_queue_in_arrival_order_each_with_its_own_result(clean: Served) -> None:
    # The first build sleeps until both later calls are queued behind it (a fixed 1.5 s lost
    # that race on a loaded CI machine); then the test ends its sleep and the build passes.
    set_markers(clean.tree, **{SLOW_BUILD: "300"})
    first = asyncio.create_task(call(clean.stack.url))
    sleeping = await asyncio.to_thread(slow_build, clean)
    # While the first build runs, the second call arrives with the build broken...
    set_markers(clean.tree, **{BREAK_BUILD: True})
    second = asyncio.create_task(call(clean.stack.url))
    while await daemon_queued(clean) < 1:
        await asyncio.sleep(0.02)
    # ...and the third with the tree good again: each tests the tree of its own call.
    set_markers(clean.tree)
    third = asyncio.create_task(call(clean.stack.url))
    while await daemon_queued(clean) < 2:
        await asyncio.sleep(0.02)
    sleeping.kill()
    a, b, c = await first, await second, await third
    assert a.text == SPEC_LEVEL_2
    assert b.text == (
        f"test_patch result: FAILED. {SPEC_REASONS[Check.BUILD]}\n\nChecks:\n- build: FAILED\n"
        "- functional tests: not run (the build failed)\n\nNot available at difficulty level 2 "
        "(NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them.\n\n"
        "Full log (build):\nbuilding\n\nbuild broke"
    )
    assert c.text == SPEC_LEVEL_2
    # A queued call tells its client it is waiting.
    assert "queued behind 1 other run(s)" in [m for _, _, m in b.progress]
    assert "queued behind 2 other run(s)" in [m for _, _, m in c.progress]
    # Never two runs at once: the daemon counted both later calls as queued while the first
    # build slept (the loops above), and each later call's build started only after it had
    # been told it waits. (Comparing receipt times across two clients' streams is no proof:
    # one stream can deliver a few ms ahead of the other.)
    for waiting, queued in ((b, "queued behind 1 other run(s)"), (c, "queued behind 2 other run(s)")):
        messages = [m for _, _, m in waiting.progress]
        assert messages.index(queued) < messages.index("build: started")


async def test_cancelled_call_stops_the_check_and_frees_the_daemon(clean: Served) -> None:
    set_markers(clean.tree, **{SLOW_BUILD: "120"})
    async with Client(clean.stack.url, timeout=120) as client:
        running = asyncio.create_task(client.call_tool("test_patch", {}))
        build = await asyncio.to_thread(slow_build, clean)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    assert await asyncio.to_thread(gone, build)
    set_markers(clean.tree)
    started = time.monotonic()
    assert (await call(clean.stack.url)).text == SPEC_LEVEL_2
    assert time.monotonic() - started < 30


def test_daemon_down_then_up() -> None:
    with serve_task("2", start_daemon=False) as served:
        health = httpx.get(served.stack.health_url, timeout=5).json()
        assert health == {"status": "ok", "difficulty": 2, "daemon": "unreachable"}
        assert call_sync(served.stack.url).text == INTERNAL_FAILURE
        assert call_sync(served.stack.url).text == INTERNAL_FAILURE  # still serving
        env = {**os.environ, "SSE_DIFFICULTY": "2"}
        served.stack.start_daemon(served.task, None, env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert call_sync(served.stack.url).text == SPEC_LEVEL_2
        assert httpx.get(served.stack.health_url, timeout=5).json()["daemon"] == "ok"
        # The traceback went to the server's own log, never to the agent.
        log = (served.workdir / "server.out").read_text()
        assert "Traceback" in log and "test_patch failed internally" in log


@pytest.mark.slow
def test_daemon_dying_mid_run_is_an_internal_failure(tmp_path: Path) -> None:
    with serve_task("2") as served:
        set_markers(served.tree, **{SLOW_BUILD: "120"})
        builds: list[psutil.Process] = []

        async def scenario() -> str:
            running = asyncio.create_task(call(served.stack.url))
            builds.append(await asyncio.to_thread(slow_build, served))
            assert served.stack.daemon is not None
            os.killpg(served.stack.daemon.pid, signal.SIGKILL)
            return (await running).text

        assert asyncio.run(scenario()) == INTERNAL_FAILURE
        # The check ran in its own session and pid namespace: it dies with the daemon.
        assert gone(builds[0])
        assert served.stack.daemon is not None
        served.stack.daemon.wait()
        set_markers(served.tree)
        env = {**os.environ, "SSE_DIFFICULTY": "2"}
        served.stack.start_daemon(served.task, None, env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert call_sync(served.stack.url).text == SPEC_LEVEL_2


def _long_log() -> bytes:
    return b"building\n" + b"".join(b"line %d\n" % i for i in range(1, 30001)) + b"\nthe end\n"


def test_long_log_is_saved_and_its_tail_returned() -> None:
    with serve_task("3") as served:
        set_markers(served.tree, **{LONG_BUILD: True})
        text = call_sync(served.stack.url).text
        head, _, rest = text.partition("\n\nTruncated log (build):\n")
        assert head == (
            f"test_patch result: FAILED. {SPEC_REASONS[Check.BUILD]}\n\nChecks:\n- build: FAILED\n\n"
            "Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. "
            "Nothing is reported about them."
        )
        tail, _, last = rest.rpartition("\n\n")
        full = _long_log()
        assert tail == "\n".join(full.decode().splitlines()[-100:])
        assert last.startswith(f"Full log available at {served.log_dir}/") and last.endswith(".txt")
        saved = Path(last.removeprefix("Full log available at "))
        assert saved.read_bytes() == full
        assert stat.S_IMODE(saved.stat().st_mode) == 0o644
        assert stat.S_IMODE(served.log_dir.stat().st_mode) == 0o755
        # A short failed log is returned whole and leaves no file behind.
        set_markers(served.tree, **{BREAK_BUILD: True})
        assert call_sync(served.stack.url).text.endswith("Full log (build):\nbuilding\n\nbuild broke")
        assert sorted(served.log_dir.iterdir()) == [saved]


@pytest.mark.slow
def test_unsafe_log_folder_gives_the_save_failure_line(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "mcp").symlink_to(target)  # e.g. planted by the agent in /tmp
    with serve_task("3", log_dir=tmp_path / "mcp" / "logs") as served:
        set_markers(served.tree, **{LONG_BUILD: True})
        text = call_sync(served.stack.url).text
        assert text.endswith("line 30000\n\nthe end\n\n(Full log could not be saved due to an internal error)")
        assert "Truncated log (build):\n" in text
        assert list(target.iterdir()) == []
        assert "symlink" in (served.workdir / "server.out").read_text()


def test_host_and_origin_guard(clean: Served) -> None:
    url = clean.stack.url
    port = clean.stack.port
    assert post_mcp(url, {"Origin": "http://evil.example"}).status_code == 403
    assert post_mcp(url, {"Host": "evil.example"}).status_code == 421
    assert post_mcp(url, {"Host": f"evil.example:{port}"}).status_code == 421
    assert httpx.get(clean.stack.health_url, headers={"Origin": "http://evil.example"}).status_code == 403
    assert post_mcp(url, {}).status_code == 200
    assert post_mcp(url, {"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"}).status_code == 200


@pytest.mark.slow
def test_sigterm_stops_the_server_cleanly() -> None:
    with serve_task("2") as served:
        assert served.stack.server is not None
        started = time.monotonic()
        assert stop(served.stack.server, grace=10) == 0
        assert time.monotonic() - started < 8
