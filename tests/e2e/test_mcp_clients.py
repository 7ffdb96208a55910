"""test_patch as a task, driven end to end by an MCP client library that implements the tasks
extension itself: FastMCP's client with ``fastmcp-tasks`` 4.1.4 (the only published client of
``io.modelcontextprotocol/tasks`` in Python; neither the MCP SDK 2.3 nor FastMCP 4.2 ssebench
runs on has one), in its own locked venv, one step per process (tests/e2e/
fastmcp_tasks_client.py), over real HTTP against the real server and daemon. The client
negotiates 2026-07-28 through ``server/discover`` itself; what it fetches is compared with
what a synchronous call answers."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_report import SPEC_LEVEL_2
from test_server import gone, slow_build
from test_server_support import BREAK_BUILD, SLOW_BUILD, SLOW_FUNCTIONAL, Served, serve_task, set_markers

from tests.e2e.conftest import install_tasks_client

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

CLIENT = Path(__file__).with_name("fastmcp_tasks_client.py")


@pytest.fixture(scope="module")
def python() -> Path:
    return install_tasks_client(lambda line: print(line))


@pytest.fixture(scope="module")
def level2() -> Iterator[Served]:
    with serve_task("2", server_args=("--heartbeat", "0.3")) as served:
        yield served


@pytest.fixture
def clean(level2: Served) -> Iterator[Served]:
    set_markers(level2.tree)
    yield level2
    set_markers(level2.tree)


def step(python: Path, *args: str) -> dict[str, Any]:
    """One step of the client, in a process of its own: its JSON answer."""
    proc = subprocess.run(
        [str(python), str(CLIENT), *args], capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, f"{args[0]}: exit {proc.returncode}\n{proc.stderr[-4000:]}"
    answer: dict[str, Any] = json.loads(proc.stdout)
    assert answer["protocol"] == "2026-07-28" and answer["library"] == "fastmcp-tasks 4.1.4"
    return answer


def canonical(result: dict[str, Any]) -> str:
    return json.dumps(result, sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize("level", ["0", "2", "4"])
def test_a_task_fetched_by_the_library_is_the_synchronous_answer(python: Path, level: str) -> None:
    with serve_task(level) as served:
        set_markers(served.tree, **{BREAK_BUILD: level != "2"})  # a failing build at 0 and 4
        sync = step(python, "sync", served.stack.url)["result"]
        tasked = step(python, "task", served.stack.url)
    created = tasked["created"]
    assert (created["resultType"], created["status"], created["ttlMs"]) == ("task", "working", 3_600_000)
    assert created["pollIntervalMs"] == 5000 and len(created["taskId"]) >= 43
    assert tasked["status"] == "completed"
    assert canonical(tasked["result"]) == canonical(sync)
    assert tasked["parsed_text"] == sync["content"][0]["text"]


def test_progress_reaches_the_library_as_the_status_message(python: Path, clean: Served) -> None:
    # each phase lasts long enough for a poll to see it (a bare functional phase takes
    # milliseconds: under load it can begin and end between two polls)
    set_markers(clean.tree, **{SLOW_BUILD: "2", SLOW_FUNCTIONAL: "1"})
    tasked = step(python, "task", clean.stack.url)
    assert tasked["parsed_text"] == SPEC_LEVEL_2
    messages = tasked["messages"]
    assert any(m.startswith("build: running, 1s") for m in messages), messages
    assert any(m.startswith("functional tests: ") for m in messages), messages


def test_the_client_disconnects_reconnects_and_fetches_the_task(python: Path, clean: Served) -> None:
    set_markers(clean.tree, **{SLOW_BUILD: "3"})
    created = step(python, "create", clean.stack.url)["created"]
    # the client's process has ended: its connection is gone, the checks go on
    build = slow_build(clean)
    assert build.is_running()
    fetched = step(python, "fetch", clean.stack.url, json.dumps(created))
    assert fetched["status"] == "completed"
    assert fetched["result"]["content"][0]["text"] == SPEC_LEVEL_2
    assert 3_000 <= fetched["ttlMs"] - 3_600_000 < 60_000  # counted from createdAt: the run's length added


def test_cancelling_through_the_library_stops_the_check_and_frees_the_queue(python: Path, clean: Served) -> None:
    set_markers(clean.tree, **{SLOW_BUILD: "120"})
    created = step(python, "create", clean.stack.url)["created"]
    build = slow_build(clean)
    cancelled = step(python, "cancel", clean.stack.url, json.dumps(created))
    assert (cancelled["status"], cancelled["result"]) == ("cancelled", None)
    assert gone(build)
    set_markers(clean.tree)
    started = time.monotonic()
    assert step(python, "task", clean.stack.url)["parsed_text"] == SPEC_LEVEL_2
    assert time.monotonic() - started < 60
