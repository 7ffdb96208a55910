"""``test_patch`` as a task: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663).

Built on FastMCP 4.2's own extension API rather than the ``fastmcp-tasks`` package
(whose newest release pins FastMCP 4.1.4; see docs/mcp.md, "Tasks"). A client on
2026-07-28 that lists the extension in a ``tools/call``'s ``_meta`` client capabilities
gets a task at once (``resultType: "task"``); the call runs in the background, outliving
the connection, through the same middleware chain and tool as a synchronous call, so the
result ``tasks/get`` inlines is the synchronous answer. ``tasks/cancel`` cancels the run
(the daemon stream closes, the daemon kills the check, the queue moves on) and
``tasks/update`` is acknowledged (the tool never asks for input). Progress reaches the
client as the task's ``statusMessage``. Every other client gets today's synchronous call.

:class:`TaskCalls` is FastMCP middleware, added before the call log so the log's line
for a task comes when its run ends. :class:`TasksExtension` advertises the extension and
serves the three methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextvars import ContextVar
from typing import Any

from fastmcp.server.dependencies import get_access_token, get_http_request
from fastmcp.server.extensions import MethodBinding, ServerExtension, read_client_extension_settings
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types import SERVER_INFO_META_KEY, CallToolResult, RequestParams
from mcp_types import methods as wire_methods
from mcp_types.jsonrpc import HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field

from .taskstore import TaskRecord, TaskStore

log = logging.getLogger("ssebench.server.tasks")

EXTENSION_ID = "io.modelcontextprotocol/tasks"
TASK_VERSION = MODERN_PROTOCOL_VERSIONS[-1]
NOT_FOUND = "Failed to retrieve task: Task not found"
CANCELLED_MESSAGE = "cancelled by the client"

#: set inside a task's run: where the tool's progress lines go (its status message)
progress_sink: ContextVar[Callable[[str], None] | None] = ContextVar("ssebench_task_progress", default=None)


class _Wire(BaseModel):
    """A result whose wire fields are already camelCase (dumped as they are)."""

    model_config = ConfigDict(extra="allow")


class TaskIdParams(RequestParams):
    """``tasks/get`` and ``tasks/cancel``: ``{taskId}``."""

    model_config = ConfigDict(populate_by_name=True)
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskIdParams):
    """``tasks/update``: ``{taskId, inputResponses}``."""

    input_responses: dict[str, Any] = Field(alias="inputResponses")


def _owner() -> str | None:
    """The bearer token's client (``None`` without authentication)."""
    token = get_access_token()
    return token.client_id if token is not None else None


def _opted_in(context: MiddlewareContext[Any]) -> bool:
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    if ctx is None or request is None or request.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    return ctx.client_extension_settings(EXTENSION_ID) is not None


def call_result(result: ToolResult, stamp: dict[str, Any]) -> dict[str, Any]:
    """The ``CallToolResult`` a synchronous call answers, as its 2026-07-28 wire dict, with
    the same ``serverInfo`` stamp in ``_meta`` (*stamp*): byte for byte that answer."""
    shaped = result.to_mcp_result()
    if isinstance(shaped, tuple):
        shaped = CallToolResult(content=shaped[0], structured_content=shaped[1])
    elif not isinstance(shaped, CallToolResult):
        shaped = CallToolResult(content=shaped)
    dumped = shaped.model_dump(by_alias=True, mode="json", exclude_none=True)
    wire = wire_methods.serialize_server_result("tools/call", TASK_VERSION, dumped)
    return {**wire, "_meta": {**(wire.get("_meta") or {}), SERVER_INFO_META_KEY: stamp}}


class TaskCalls(Middleware):
    """Runs an opted-in ``tools/call`` of *tool* as a task; passes every other call through."""

    def __init__(self, store: TaskStore, tool: str) -> None:
        self.store = store
        self.tool = tool

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        if getattr(context.message, "name", None) != self.tool or not _opted_in(context):
            return await call_next(context)
        record = self.store.create(_owner())
        # The run is its own asyncio task: the request ends now, the run does not.
        record.job = asyncio.create_task(self._run(record, context, call_next), name=f"task {record.task_id[:8]}")
        log.info("test_patch: a task was created (the call runs in the background)")
        return _Wire.model_validate({"resultType": "task", **self.store.wire(record)})

    async def _run(self, record: TaskRecord, context: MiddlewareContext[Any], call_next: Any) -> None:
        progress_sink.set(lambda line: self.store.say(record, line))
        try:
            result = await call_next(context)
            ctx = context.fastmcp_context
            stamp = ctx.fastmcp._mcp_server.server_info_stamp if ctx is not None else {}
            wire = call_result(result, stamp) if isinstance(result, ToolResult) else None
            if wire is None:
                raise TypeError(f"the tool answered {type(result).__name__}, not a tool result")
        except asyncio.CancelledError:
            self.store.finish(record, "cancelled", message=CANCELLED_MESSAGE)
            raise
        except Exception:
            log.exception("test_patch task failed outside the tool")
            error = {"code": INTERNAL_ERROR, "message": "Internal error"}
            self.store.finish(record, "failed", error=error, message="Internal error")
            return
        self.store.finish(record, "completed", result=wire)


class TasksExtension(ServerExtension):
    """Advertises the extension and serves ``tasks/get``, ``tasks/update``, ``tasks/cancel``."""

    identifier = EXTENSION_ID

    def __init__(self, store: TaskStore, sweep_every: float = 60.0) -> None:
        self.store = store
        self.sweep_every = sweep_every

    def clone(self) -> TasksExtension:  # the store is shared state, never copied
        return TasksExtension(self.store, self.sweep_every)

    def methods(self) -> Sequence[MethodBinding]:
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return [
            MethodBinding("tasks/get", TaskIdParams, self._get, versions),
            MethodBinding("tasks/update", UpdateParams, self._update, versions),
            MethodBinding("tasks/cancel", TaskIdParams, self._cancel, versions),
        ]

    def _task(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> TaskRecord:
        if read_client_extension_settings(ctx, EXTENSION_ID) is None:
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="Missing required client capability",
                data={"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
            )
        with contextlib.suppress(RuntimeError):  # no HTTP request: nothing to compare
            header = get_http_request().headers.get(MCP_NAME_HEADER)
            if header is not None and decode_header_value(header) != task_id:
                raise MCPError(code=HEADER_MISMATCH, message="Mcp-Name header does not match params.taskId")
        record = self.store.get(task_id, _owner())
        if record is None:
            raise MCPError(code=INVALID_PARAMS, message=NOT_FOUND)
        return record

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        return {"resultType": "complete", **self.store.wire(self._task(ctx, params.task_id))}

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateParams) -> dict[str, Any]:
        self._task(ctx, params.task_id)  # nothing is ever asked: every response is ignored
        return {"resultType": "complete"}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        record = self._task(ctx, params.task_id)
        if record.job is not None and not record.terminal:
            record.job.cancel()
            log.info("test_patch: a task was cancelled by its client")
        return {"resultType": "complete"}

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(self._sweep())
        try:
            yield
        finally:
            sweeper.cancel()
            jobs = [r.job for r in self.store.running() if r.job is not None]
            for job in jobs:
                job.cancel()
            await asyncio.gather(sweeper, *jobs, return_exceptions=True)

    async def _sweep(self) -> None:
        while True:  # expired tasks go even when nobody asks for them
            await asyncio.sleep(self.sweep_every)
            self.store.sweep()
