"""The daemon's HTTP API (docs/daemon-api.md), served on a Unix socket.

The level is fixed when the app is built and every endpoint enforces it: a withheld
check is refused with 403 whatever the request says, and the public task view says
nothing the level does not allow (no PoC paths or contents, no intent diff, no task
file, no hidden paths — also not in error texts).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
import traceback
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ssebench import __version__
from ssebench.checks import CHECK_ORDER, KINDS, Check, task_checks
from ssebench.contract import CheckFinished, Error, Queued, QueueHeartbeat, Result, Started, to_line
from ssebench.daemon.runner import Runner
from ssebench.daemon.runtypes import DISK_FULL, CallRun, RunError
from ssebench.difficulty import Level

MAX_BODY = 64 * 1024
NDJSON = "application/x-ndjson"


class RunQueue:
    """First come, first served: one run at a time, the others wait in arrival order."""

    def __init__(self) -> None:
        self._line: deque[asyncio.Future[None]] = deque()

    def join(self) -> asyncio.Future[None]:
        ticket: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._line.append(ticket)
        if len(self._line) == 1:
            ticket.set_result(None)
        return ticket

    def ahead(self, ticket: asyncio.Future[None]) -> int:
        """How many runs are ahead of *ticket* (0: it is the running one)."""
        return self._line.index(ticket) if ticket in self._line else 0

    def leave(self, ticket: asyncio.Future[None]) -> None:
        if ticket not in self._line:
            return
        was_head = self._line[0] is ticket
        self._line.remove(ticket)
        if was_head and self._line and not self._line[0].done():
            self._line[0].set_result(None)

    @property
    def busy(self) -> bool:
        return bool(self._line)

    @property
    def queued(self) -> int:
        return max(0, len(self._line) - 1)


class _ClosingStream(StreamingResponse):
    """A streaming response that always runs *on_close*, even if never iterated."""

    def __init__(self, content: AsyncIterator[bytes], on_close: Callable[[], None]) -> None:
        super().__init__(content, media_type=NDJSON, headers={"Cache-Control": "no-store"})
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes | None:
    """The request body, or None when it is over *limit* bytes.

    Reads at most *limit* (+ one chunk) bytes and stops: ``request.body()`` would
    first gather a body of any size in memory (200 MB of POST took the RSS from 37
    to 447 MB before the 413). A ``Content-Length`` over the limit is refused unread.
    """
    declared = request.headers.get("content-length", "")
    if declared.strip().isdigit() and int(declared) > limit:
        return None
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                return None
            parts.append(chunk)
    except ClientDisconnect:
        return None  # nobody reads the answer
    return b"".join(parts)


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


class _Api:
    """The endpoints for one runner's task at one level, fixed when the app is built."""

    def __init__(self, runner: Runner, level: Level) -> None:
        self.runner = runner
        self.level = level
        self.queue = RunQueue()
        self.has = set(task_checks(runner.task))

    def withheld(self, check: Check) -> JSONResponse:
        level = self.level
        return _error(
            403,
            f"check '{check.value}' is not available at difficulty level {level.number} ({level.name})",
            level=level.number,
            name=level.name,
        )

    async def health(self, request: Request) -> JSONResponse:
        runner = self.runner
        return JSONResponse(
            {
                "status": "ok",
                "version": __version__,
                "difficulty": self.level.number,
                "busy": self.queue.busy,
                "queued": self.queue.queued,
                "sandbox": runner.sandbox.describe(),
                "build_trace": runner.tracing,
                "builds": {
                    "incremental": runner.build_counts["incremental"],
                    "clean": runner.build_counts["clean"],
                    "unchanged": runner.build_counts["unchanged"],
                    "last": runner.last_build,
                },
                "last_run": {phase: round(seconds, 3) for phase, seconds in runner.last_phases.items()},
            }
        )

    async def task_view(self, request: Request) -> JSONResponse:
        task, level = self.runner.task, self.level
        view: dict[str, Any] = {
            "id": task.id,
            "description": task.description,
            "difficulty": {"level": level.number, "name": level.name},
            "checks": [c.value for c in level.allowed if c in self.has],
            "withheld": [c.value for c in level.withheld],
        }
        if any(level.allows(kind.check) for kind in KINDS if kind.counted):
            view["poc_count"] = task.poc_count
        return JSONResponse(view)

    def requested(self, body: bytes) -> list[Check] | JSONResponse:
        """The checks a ``POST /runs`` body asks for, or the error response to send."""
        if not body.strip():
            return list(self.level.allowed)
        try:
            data = json.loads(body)
        except ValueError:
            return _error(400, "the request body is not valid JSON")
        if not isinstance(data, dict) or set(data) - {"checks"}:
            return _error(400, 'the request body must be an object with only the key "checks"')
        names = data.get("checks", None)
        if names is None:
            return list(self.level.allowed)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return _error(400, '"checks" must be an array of check names')
        checks = []
        for name in names:
            try:
                check = Check(name)
            except ValueError:
                known = ", ".join(c.value for c in CHECK_ORDER)
                return _error(400, f"unknown check {name!r} (known: {known})")
            if not self.level.allows(check):
                return self.withheld(check)
            checks.append(check)
        return checks

    async def start_run(self, request: Request) -> Response:
        body = await read_body(request)
        if body is None:
            return _error(413, "request body too large")
        checks = self.requested(body)
        if isinstance(checks, Response):
            return checks
        ticket = self.queue.join()
        prepared: list[CallRun] = []
        executed: list[CallRun] = []

        def close() -> None:
            self.queue.leave(ticket)
            if prepared and not executed:
                self.runner.discard(prepared[0])

        return _ClosingStream(self._events(ticket, checks, prepared, executed), close)

    async def _events(
        self, ticket: asyncio.Future[None], checks: list[Check], prepared: list[CallRun], executed: list[CallRun]
    ) -> AsyncIterator[bytes]:
        """The NDJSON lines of one run (the runner's typed events, written here and nowhere
        else); a failure of the run itself ends it with ``error``."""
        runner = self.runner
        try:
            # The tree is read now, at the moment of the request, even if the run
            # waits: the first line tells the client that this has happened.
            prepared.append(await runner.prepare())
            if (ahead := self.queue.ahead(ticket)) > 0:
                yield to_line(Queued(ahead))
            while not ticket.done():
                try:
                    await asyncio.wait_for(asyncio.shield(ticket), runner.heartbeat)
                except TimeoutError:
                    yield to_line(QueueHeartbeat(self.queue.ahead(ticket)))
            run = prepared[0]
            executed.append(run)
            yield to_line(Started(run.id, self.level.number))
            async with contextlib.aclosing(runner.execute(run, checks)) as stream:
                async for event in stream:
                    if isinstance(event, CheckFinished | Result) and runner.low_on_space():
                        # The check may have failed for want of space: not the patch's fault.
                        raise RunError(DISK_FULL)
                    if isinstance(event, Result):
                        event = dataclasses.replace(event, difficulty=self.level.number)
                    yield to_line(event)
            return
        except RunError as exc:
            failure = str(exc)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            failure = "internal error in the daemon"
        if runner.low_on_space():
            # Free the disk before answering, so that the agent's next call works. Only
            # while this request holds the queue may the run being built be touched.
            print(f"ssebench daemon: {failure}; the disk is full, freeing it", file=sys.stderr)
            await runner.reclaim(executed[0] if executed else None, exclusive=ticket.done())
        yield to_line(Error(failure))

    async def run_log(self, request: Request) -> Response:
        name = request.path_params["check"]
        try:
            check = Check(name)
        except ValueError:
            return _error(404, f"unknown check {name!r}")
        if not self.level.allows(check):
            return self.withheld(check)
        run = self.runner.get(request.path_params["run_id"])
        if run is None:
            return _error(404, "no such run (logs are kept for the most recent runs only)")
        result = run.results.get(check)
        if result is None or result.log is None:
            return _error(404, f"the run has no log for check '{check.value}'")
        log = result.log
        try:
            size = log.size()
        except OSError:
            return _error(404, "the log is gone")

        async def chunks() -> AsyncIterator[bytes]:
            pieces = log.chunks()
            while (piece := await anyio.to_thread.run_sync(next, pieces, None)) is not None:
                yield piece

        return StreamingResponse(
            chunks(), media_type="text/plain; charset=utf-8", headers={"Content-Length": str(size)}
        )


def create_app(runner: Runner, level: Level) -> Starlette:
    """The API for *runner*'s task at *level*."""
    api = _Api(runner, level)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return _error(exc.status_code, str(exc.detail))

    return Starlette(
        routes=[
            Route("/health", api.health, methods=["GET"]),
            Route("/task", api.task_view, methods=["GET"]),
            Route("/runs", api.start_run, methods=["POST"]),
            Route("/runs/{run_id}/logs/{check}", api.run_log, methods=["GET"]),
        ],
        exception_handlers={HTTPException: http_error},
    )
