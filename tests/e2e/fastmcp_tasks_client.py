"""An MCP client that drives ``test_patch`` as a task with FastMCP's own tasks client.

Runs in a venv of its own (configs/mcp-clients/fastmcp-tasks/: ``fastmcp-tasks`` 4.1.4
pins ``fastmcp`` 4.1.4, which cannot sit beside the FastMCP 4.2 ssebench runs on), started
by tests/e2e/test_mcp_clients.py as a subprocess, one step per process so that a step's
connection is really gone before the next one opens. Importing ``fastmcp_tasks`` turns on
the tasks extension in every FastMCP ``Client`` (it advertises
``io.modelcontextprotocol/tasks`` on a 2026-07-28 connection, which ``mode="auto"``
negotiates through ``server/discover``). Each step prints one JSON object on stdout:

- ``sync URL``: a plain call by a client without the extension: its wire result.
- ``task URL``: a call answered by a task, polled to its end through the library's
  ``ToolTask``: the ``CreateTaskResult``, every status message seen, the inlined result.
- ``create URL``: a call answered by a task, then the process ends (the client is gone).
- ``fetch URL TASK``: a new connection fetches the task *TASK* (a ``create`` output).
- ``cancel URL TASK``: a new connection cancels it and waits for its end.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import fastmcp_tasks
from fastmcp import Client
from fastmcp_tasks import ToolTask, call_tool_task
from fastmcp_tasks.client_models import ClientCreateTaskResult

TOOL = "test_patch"
POLL = 0.05  # the test's checks take seconds; the advertised 5 s would only slow it down
DUMP: dict[str, Any] = {"by_alias": True, "mode": "json", "exclude_none": True}


class PlainClient(Client):  # type: ignore[misc]
    """A FastMCP client that does not fold in the tasks extension (as its proxy client does)."""

    _auto_internal_extensions = False


def connected(client: Client) -> dict[str, Any]:
    return {"protocol": client.protocol_version, "library": f"fastmcp-tasks {fastmcp_tasks.__version__}"}


async def sync(url: str) -> dict[str, Any]:
    async with PlainClient(url) as client:
        result = await client.call_tool_mcp(TOOL, {})
        return {**connected(client), "result": result.model_dump(**DUMP)}


async def follow(task: ToolTask) -> dict[str, Any]:
    """Poll the task to its end, keeping each new status message; then its result."""
    messages: list[str] = []
    while True:
        status = await task.status()
        if status.status_message and (not messages or messages[-1] != status.status_message):
            messages.append(status.status_message)
        if status.status in ("completed", "failed", "cancelled"):
            return {"status": status.status, "messages": messages, "result": status.result, "ttlMs": status.ttl_ms}
        await asyncio.sleep(POLL)


async def task(url: str) -> dict[str, Any]:
    async with Client(url) as client:
        handle = await call_tool_task(client, TOOL)
        created = handle.create_result.model_dump(**DUMP)
        followed = await follow(handle)
        parsed = await handle.result()  # the library's own parse of the finished task
        text = parsed.content[0].text if parsed.content else None
        return {**connected(client), "created": created, **followed, "parsed_text": text}


async def create(url: str) -> dict[str, Any]:
    async with Client(url) as client:
        handle = await call_tool_task(client, TOOL)
        return {**connected(client), "created": handle.create_result.model_dump(**DUMP)}


async def fetch(url: str, created: str) -> dict[str, Any]:
    async with Client(url) as client:
        handle = ToolTask(client, TOOL, ClientCreateTaskResult.model_validate_json(created))
        return {**connected(client), **(await follow(handle))}


async def cancel(url: str, created: str) -> dict[str, Any]:
    async with Client(url) as client:
        handle = ToolTask(client, TOOL, ClientCreateTaskResult.model_validate_json(created))
        await handle.cancel()
        ended = await handle.wait(timeout=60)
        return {**connected(client), "status": ended.status, "result": ended.result}


def main(argv: list[str]) -> int:
    steps = {"sync": sync, "task": task, "create": create, "fetch": fetch, "cancel": cancel}
    step, *args = argv
    print(json.dumps(asyncio.run(steps[step](*args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
