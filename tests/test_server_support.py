"""Shared pieces of the server tests: a task whose outcome the tree controls, and a client.

The task's commands look for marker files in the tree under test, so one daemon and
server per level serve every scenario: the test changes the tree between calls,
exactly as an agent does. No tests here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import mcp
from fastmcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import Field

from ssebench.server.stack import Stack, running_stack

# Markers: each one, present in the tree, breaks one check (or changes the log).
BREAK_BUILD = "BREAK_BUILD"
BREAK_FUNCTIONAL = "BREAK_FUNCTIONAL"
BREAK_INTENT = "BREAK_INTENT"
VULN_P2 = "vuln-p2"  # the second PoC still triggers the bug
LONG_BUILD = "LONG_BUILD"  # the build prints 30,000 numbered lines, then fails
SLOW_BUILD = "SLOW_BUILD"  # the build runs `sleep <content>` (tests find that process)
SLOW_FUNCTIONAL = "SLOW_FUNCTIONAL"  # the functional tests run `sleep <content>` first
MARKERS = (BREAK_BUILD, BREAK_FUNCTIONAL, BREAK_INTENT, VULN_P2, LONG_BUILD, SLOW_BUILD, SLOW_FUNCTIONAL)

BUILD = r"""
echo "building"
if [ -e SLOW_BUILD ]; then sleep "$(cat SLOW_BUILD)"; fi
if [ -e LONG_BUILD ]; then seq 1 30000 | sed 's/^/line /'; echo "the end" >&2; exit 1; fi
if [ -e BREAK_BUILD ]; then echo "build broke" >&2; exit 1; fi
exit 0
"""
POC = r"""
name=$(basename "$SSE_POC")
echo "running $name"
if [ -e "vuln-$name" ]; then echo "ERROR: AddressSanitizer: stack-buffer-overflow ($name)" >&2; exit 1; fi
"""
FUNCTIONAL = r"""
echo "functional tests"
if [ -e SLOW_FUNCTIONAL ]; then sleep "$(cat SLOW_FUNCTIONAL)"; fi
if [ -e BREAK_FUNCTIONAL ]; then echo "functional test 3 failed" >&2; exit 1; fi
"""
INTENT_DIFF = """\
diff --git a/intent_test.sh b/intent_test.sh
new file mode 100644
--- /dev/null
+++ b/intent_test.sh
@@ -0,0 +1,3 @@
+echo "intent tests"
+if [ -e BREAK_INTENT ]; then echo "intent test failed" >&2; exit 1; fi
+exit 0
"""


def _toml_str(text: str) -> str:
    return "'''" + text + "'''"


def write_task(root: Path, *, pocs: bool = True, intent: bool = True, functional: bool = True) -> Path:
    """A task under ``root``; returns its task.toml. The tree is ``root/src``."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    lines = ['id = "server-test"', 'source = "src"', 'description = "A test task."', ""]
    lines += ["[build]", f"run = {_toml_str(BUILD)}", "timeout = 120", ""]
    if pocs:
        (root / "pocs").mkdir()
        for name in ("p1", "p2"):
            (root / "pocs" / name).write_text(f"poc {name}\n")
        lines += ["[pocs]", f"run = {_toml_str(POC)}", 'files = ["pocs/p1", "pocs/p2"]', ""]
    if functional:
        lines += ["[functional]", f"run = {_toml_str(FUNCTIONAL)}", ""]
    if intent:
        (root / "intent.diff").write_text(INTENT_DIFF)
        lines += ["[intent]", 'diff = "intent.diff"', 'run = "sh intent_test.sh"', ""]
    task = root / "task.toml"
    task.write_text("\n".join(lines))
    return task


def set_markers(tree: Path, **markers: str | bool) -> None:
    """Put exactly these markers in the tree (a string value becomes the file's content)."""
    for name in MARKERS:
        with contextlib.suppress(FileNotFoundError):
            (tree / name).unlink()
    for name, value in markers.items():
        if value is not False:
            (tree / name).write_text(value if isinstance(value, str) else "x\n")


@dataclass
class Served:
    """A running stack on a task the test owns."""

    stack: Stack
    task: Path
    tree: Path
    workdir: Path
    log_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_dir = self.workdir / "logs"


@contextlib.contextmanager
def serve_task(
    level: str | None,
    *,
    server_args: tuple[str, ...] = (),
    start_daemon: bool = True,
    log_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    **task_kw: bool,
) -> Iterator[Served]:
    with tempfile.TemporaryDirectory(prefix="ssebench-test-") as tmp:
        root = Path(tmp)
        os.chmod(root, 0o700)
        task = write_task(root / "task", **task_kw)
        work = root / "work"
        work.mkdir(mode=0o700)
        with running_stack(
            task,
            work,
            difficulty=level,
            server_args=server_args,
            start_daemon=start_daemon,
            log_dir=log_dir,
            env=None if env is None else {**os.environ, **env},
        ) as stack:
            served = Served(stack, task, root / "task" / "src", work)
            if log_dir is not None:
                served.log_dir = log_dir
            yield served


@dataclass
class Call:
    text: str
    is_error: bool
    progress: list[tuple[float, float | None, str | None]]
    received: list[float] = field(default_factory=list)  # time.monotonic() of each progress


async def call(url: str, *, timeout: float = 120) -> Call:
    progress: list[tuple[float, float | None, str | None]] = []
    received: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))
        received.append(time.monotonic())

    async with Client(url, timeout=timeout) as client:
        result = await client.call_tool("test_patch", {}, progress_handler=on_progress, raise_on_error=False)
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert result.structured_content is None
    return Call(result.content[0].text, result.is_error, progress, received)


def call_sync(url: str) -> Call:
    return asyncio.run(call(url))


def post_mcp(url: str, headers: dict[str, str]) -> httpx.Response:
    """A raw initialize request, to test the Host/Origin guard."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return httpx.post(url, json=body, headers={**base, **headers}, timeout=10)


# -- a client of the tasks extension (SEP-2663), on the MCP SDK's client-extension API ------

TASKS = "io.modelcontextprotocol/tasks"


class TaskHandle(Result):
    """``CreateTaskResult`` and ``tasks/get``'s answer: the task's wire fields."""

    result_type: Literal["task", "complete"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
    created_at: str = Field(alias="createdAt")
    last_updated_at: str = Field(alias="lastUpdatedAt")
    ttl_ms: int | None = Field(alias="ttlMs")
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")
    status_message: str | None = Field(default=None, alias="statusMessage")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class CreatedTask(TaskHandle):
    result_type: Literal["task"] = Field(alias="resultType")


class TaskIdParams(RequestParams):
    task_id: str = Field(alias="taskId")


class GetTask(Request[TaskIdParams, Literal["tasks/get"]]):
    name_param = "taskId"


class CancelTask(Request[TaskIdParams, Literal["tasks/cancel"]]):
    name_param = "taskId"


async def get_task(session: mcp.ClientSession, task_id: str) -> TaskHandle:
    request = GetTask(method="tasks/get", params=TaskIdParams(taskId=task_id))
    return await session.send_request(request, TaskHandle)


async def cancel_task(session: mcp.ClientSession, task_id: str) -> None:
    await session.send_request(CancelTask(method="tasks/cancel", params=TaskIdParams(taskId=task_id)), Result)


class TasksClient(ClientExtension):
    """Opts every request in to tasks; a task answer is polled to its end, and every status
    message seen on the way is kept in ``messages``."""

    identifier = TASKS

    def __init__(self, poll: float = 0.1) -> None:
        self.poll = poll
        self.created: list[CreatedTask] = []
        self.messages: list[str] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    async def _resolve(self, created: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        self.created.append(created)
        task = await wait_task(ctx.session, created.task_id, self.poll, self.messages)
        if task.status != "completed" or task.result is None:
            raise AssertionError(f"task ended {task.status}: {task.error}")
        return CallToolResult.model_validate(task.result)


async def wait_task(
    session: mcp.ClientSession, task_id: str, poll: float, messages: list[str] | None = None, timeout: float = 120
) -> TaskHandle:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = await get_task(session, task_id)
        if messages is not None and task.status_message and (not messages or messages[-1] != task.status_message):
            messages.append(task.status_message)
        if task.status in ("completed", "failed", "cancelled"):
            return task
        await asyncio.sleep(poll)
    raise AssertionError(f"task {task_id} still working after {timeout:g} s")


def modern_client(url: str, *extensions: ClientExtension, headers: Mapping[str, str] | None = None) -> mcp.Client:
    """An MCP SDK client on 2026-07-28 (no handshake), with these extensions."""
    transport = url if headers is None else _with_headers(url, headers)
    return mcp.Client(transport, mode="2026-07-28", extensions=list(extensions))


def _with_headers(url: str, headers: Mapping[str, str]) -> Any:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=dict(headers), timeout=120))
