"""The FastMCP server: one tool, ``test_patch``, and a health route.

A call asks the daemon for exactly the checks the level enables (calls reach the
daemon in arrival order and queue there, each on a copy of the tree as it was when
the call arrived), relays the run as MCP progress notifications (each check's start
and end, and a heartbeat so clients with idle timeouts keep waiting), fetches the
log of the check the headline names, and renders the spec's text. Testing failures
are logged here with their traceback and reach the agent only as the spec's one
internal-failure sentence. A call whose client cancels stops its run at once (closing
the daemon stream makes the daemon kill the check); one whose 2025-11-25 stream drops
goes on for the resume grace, so the client can resume the stream (``server/events.py``)
and still read the answer, and is stopped after it. A client that asks for a task gets
one (``server/tasks.py``): the same call, run in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastmcp import Context, FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.dependencies import get_http_request
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations
from mcp_types.jsonrpc import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.middleware import Middleware as StarletteMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse

from ssebench import __version__, contract, phrases
from ssebench.contract import Event, Result
from ssebench.difficulty import Check, Level

from . import calllog
from .daemon_client import DaemonClient, DaemonError, parse_result
from .events import BoundedEventStore, Resumptions
from .limits import ServerLimits
from .logdir import LogDir
from .longlog import capture
from .report import INTERNAL_FAILURE, LogSection, failed_check, render
from .tasks import TaskCalls, TasksExtension, progress_sink
from .taskstore import TaskStore

log = logging.getLogger("ssebench.server")

SERVER_NAME = "ssebench"
TOOL_NAME = "test_patch"
HEALTH_PATH = "/healthz"
# Claude Code gives up on a tool call silent for 5 minutes, opencode after 60 s.
DEFAULT_HEARTBEAT = 15.0
RETRY_MS = 2000  # the SSE retry field: how soon a client whose stream dropped reconnects


def tool_description(level: Level) -> str:
    enabled = [c.label for c in level.allowed]
    at_level = (
        f"At this server's difficulty level ({level.number}, {level.name}) it runs: "
        f"{', '.join(enabled)}; the other checks are not available."
        if enabled
        else f"At this server's difficulty level ({level.number}, {level.name}) no checks are available."
    )
    return (
        "Check your work on the task: builds the project and runs the task's checks on the "
        "current state of the source tree, including every uncommitted change you have made "
        "(nothing needs to be committed or saved elsewhere). The checks, in order: the build; "
        "the proofs of concept (PoCs), which pass when they no longer trigger the "
        "vulnerability; the intent tests that came with the upstream fix; the project's "
        f"functional tests. {at_level} Returns a text report of which checks ran and how each "
        "ended, with the log of the failed check. Takes no arguments. A call runs a full build "
        "and test cycle and can take many minutes; calls run one at a time, in order."
    )


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class _Progress:
    """Progress notifications for one call: a monotonic counter and a status line."""

    def __init__(self, ctx: Context, heartbeat: float) -> None:
        self.ctx = ctx
        self.heartbeat = heartbeat
        self.count = 0
        self.status = "starting"
        self.since = time.monotonic()

    def set(self, status: str) -> None:
        self.status = status
        self.since = time.monotonic()

    async def send(self, message: str) -> None:
        self.count += 1
        sink = progress_sink.get()
        if sink is not None:  # a task's run: progress is its status message
            sink(message)
            return
        try:
            await self.ctx.report_progress(self.count, None, message)
        except Exception:  # the client may be gone; the run goes on or is cancelled
            log.debug("progress notification failed", exc_info=True)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat)
            await self.send(f"{self.status}, {_clock(time.monotonic() - self.since)}")

    @contextlib.asynccontextmanager
    async def ticking(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self._tick())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class TestPatch:
    """The tool's work, one call at a time."""

    def __init__(
        self,
        level: Level,
        daemon: DaemonClient,
        log_dir: LogDir,
        heartbeat: float,
        watch: _Watch | None = None,
    ) -> None:
        self.level = level
        self.daemon = daemon
        self.log_dir = log_dir
        self.heartbeat = heartbeat
        self.watch = watch if watch is not None else _Watch(Resumptions(), 0.0)
        self._lock = asyncio.Lock()  # FIFO: calls reach the daemon in arrival order

    async def __call__(self, ctx: Context) -> str:
        progress = _Progress(ctx, self.heartbeat)
        # a task's run outlives its request: only a synchronous call watches its client
        request = _http_request() if progress_sink.get() is None else None
        text: str | None = None
        async with progress.ticking(), anyio.create_task_group() as group:
            if request is not None:
                group.start_soon(self.watch.cancel_when_gone, request, group.cancel_scope)
            text = await self._serve(progress)
            group.cancel_scope.cancel()
        if text is None:  # the client went away: the run was stopped, nobody reads this
            log.info("test_patch: the client disconnected; the run was stopped")
            calllog.record_internal_failure()
            return INTERNAL_FAILURE
        return text

    async def _serve(self, progress: _Progress) -> str:
        try:
            return await self._run(progress)
        except Exception:
            log.exception("test_patch failed internally")
            calllog.record_internal_failure()
            return INTERNAL_FAILURE

    async def _run(self, progress: _Progress) -> str:
        requested = list(self.level.allowed)
        if not requested:
            calllog.record(())
            return render(self.level, [])
        result = None
        async with contextlib.aclosing(self.daemon.run(requested)) as events:
            # Calls reach the daemon one by one in arrival order; the daemon answers its
            # first line once it has copied the tree, so each run tests the tree as it
            # was when its call arrived, and then queues there (FIFO) for its turn.
            if self._lock.locked():
                progress.set("waiting for the daemon")
            async with self._lock:
                progress.set("starting")
                first = await anext(events)
            async for event in _chain(first, events):
                if isinstance(event, Result):
                    result = parse_result(event, requested)
                else:
                    await _relay(event, progress)
        if result is None:  # the client raises first; this keeps the guarantee local
            raise DaemonError("run stream ended without a result")
        failed = failed_check(result.checks)
        section: LogSection | None = None
        if failed is not None:
            progress.set(f"{failed.label}: fetching the log")
            section = await self._fetch_log(result.run_id, failed)
        text = render(self.level, result.checks, section)
        calllog.record(result.checks)
        return text

    async def _fetch_log(self, run_id: str, check: Check) -> LogSection:
        """Download and capture the log in a worker thread; stop it if the call is cancelled."""
        stop = threading.Event()

        def work() -> LogSection:
            return capture(lambda feed: self.daemon.fetch_log(run_id, check, feed, stop), self.log_dir, check)

        try:
            return await asyncio.to_thread(work)
        except BaseException:
            stop.set()
            raise


async def _relay(event: Event, progress: _Progress) -> None:
    """The run's progress as MCP progress notifications (the states as the daemon names them)."""
    if isinstance(event, contract.Queued):
        progress.set(f"queued behind {event.position} other run(s)")
        await progress.send(progress.status)
    elif isinstance(event, contract.CheckStarted):
        progress.set(f"{event.check.label}: running")
        await progress.send(f"{event.check.label}: started")
    elif isinstance(event, contract.CheckFinished):
        state = phrases.progress_word(event.result.state)
        progress.set(f"{event.check.label}: {state}")
        await progress.send(f"{event.check.label}: {state}")


async def _chain(first: Event, rest: AsyncIterator[Event]) -> AsyncIterator[Event]:
    yield first
    async for event in rest:
        yield event


def _http_request() -> Request | None:
    try:
        return get_http_request()
    except RuntimeError:
        return None


class _Watch:
    """Stops a synchronous call whose client is gone for good.

    MCP treats a dropped stream as resumable, not as a cancel, and FastMCP keeps the call
    running; but a check nobody will read holds the daemon for the next call. On
    2025-11-25 the client may resume the stream (``Last-Event-ID``): the call goes on for
    *grace* seconds after its stream dropped, and for as long as a resumed stream of its
    session is open. On 2026-07-28 there is no resumption: a drop stops the call at once.
    """

    def __init__(self, resumptions: Resumptions, grace: float, every: float = 0.5) -> None:
        self.resumptions = resumptions
        self.grace = grace
        self.every = every

    async def cancel_when_gone(self, request: Request, scope: anyio.CancelScope) -> None:
        modern = request.headers.get("mcp-protocol-version") in MODERN_PROTOCOL_VERSIONS
        grace = 0.0 if modern else self.grace
        session = request.headers.get("mcp-session-id")
        gone_since: float | None = None
        while True:
            if not await request.is_disconnected() or (session and self.resumptions.open(session)):
                gone_since = None
            else:
                gone_since = time.monotonic() if gone_since is None else gone_since
                if time.monotonic() - gone_since >= grace:
                    break
            await anyio.sleep(self.every)
        scope.cancel()


class _UnknownTool(Middleware):
    """A call of a tool this server does not have is a JSON-RPC error (-32602), as both
    revisions' spec says, not a tool result the model would read."""

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        name = getattr(context.message, "name", None)
        if name != TOOL_NAME:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")
        return await call_next(context)


class _Server(FastMCP):
    """FastMCP whose Streamable HTTP app has our session expiry and resumable streams.

    The MCP SDK counts a session idle only while no request of it is in flight (a
    running tool call is one), so a call never loses its session. ``run_http_async``
    takes neither an idle timeout nor an event store of its own, hence these defaults
    for the app it builds: every POST stream opens with a priming event and a ``retry``
    field, its events are kept (bounded) for a client that resumes, and the resuming
    ``GET`` requests are counted for :class:`_Watch`.
    """

    session_idle: float = ServerLimits.session_idle
    event_store: BoundedEventStore | None = None
    resumptions: Resumptions | None = None

    def http_app(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("session_idle_timeout") is None:
            kwargs["session_idle_timeout"] = self.session_idle
        if self.event_store is not None and kwargs.get("event_store") is None:
            kwargs["event_store"] = self.event_store
            kwargs.setdefault("retry_interval", RETRY_MS)
        if self.resumptions is not None:
            counter = self.resumptions.wrap
            kwargs["middleware"] = [*(kwargs.get("middleware") or []), StarletteMiddleware(counter)]
        return super().http_app(*args, **kwargs)


def create_server(
    level: Level,
    daemon_socket: str,
    log_dir: LogDir,
    *,
    heartbeat: float = DEFAULT_HEARTBEAT,
    limits: ServerLimits | None = None,
) -> FastMCP:
    """The server; *limits* default to the environment's (``server/limits.py``)."""
    limits = limits if limits is not None else ServerLimits.from_env()
    daemon = DaemonClient(daemon_socket)
    resumptions = Resumptions()
    tool = TestPatch(level, daemon, log_dir, heartbeat, _Watch(resumptions, limits.resume_grace))
    tasks = TaskStore(limits.task_ttl)

    @contextlib.asynccontextmanager
    async def lifespan(_server: FastMCP) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await daemon.aclose()
            log_dir.close()

    mcp = _Server(SERVER_NAME, version=__version__, lifespan=lifespan, auth=_auth(limits.bearer_tokens))
    mcp.session_idle = limits.session_idle
    mcp.event_store = BoundedEventStore(limits.event_max_age, limits.event_max_bytes)
    mcp.resumptions = resumptions
    mcp.add_extension(TasksExtension(tasks))
    # first added, outermost: a task's run goes through the rest (the call log, the tool)
    mcp.add_middleware(TaskCalls(tasks, TOOL_NAME))
    mcp.add_middleware(_UnknownTool())

    async def test_patch(ctx: Context) -> str:
        return await tool(ctx)

    mcp.tool(
        test_patch,
        name=TOOL_NAME,
        description=tool_description(level),
        output_schema=None,  # plain text: with a schema, clients show the model {"result": ...}
        annotations=ToolAnnotations(
            title="Test the patch",
            read_only_hint=True,  # sent as readOnlyHint etc. (the model's camelCase aliases)
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )

    @mcp.custom_route(HEALTH_PATH, methods=["GET"])
    async def health(_request: Request) -> JSONResponse:
        try:
            await daemon.health()
            daemon_state = "ok"
        except DaemonError:
            daemon_state = "unreachable"
        return JSONResponse({"status": "ok", "difficulty": level.number, "daemon": daemon_state})

    return mcp


def _auth(tokens: tuple[str, ...]) -> StaticTokenVerifier | None:
    """Bearer tokens, each its own client (named by a digest, never by the token)."""
    if not tokens:
        return None
    return StaticTokenVerifier({t: {"client_id": _client_name(t), "scopes": []} for t in tokens})


def _client_name(token: str) -> str:
    import hashlib

    return "token-" + hashlib.sha256(token.encode()).hexdigest()[:16]


__all__ = ["create_server", "tool_description", "TOOL_NAME", "SERVER_NAME", "HEALTH_PATH"]
