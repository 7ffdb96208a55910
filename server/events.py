"""Resumable 2025-11-25 streams: a bounded event store and who is resuming right now.

With an event store the MCP SDK opens every POST stream with a priming event (an id
and empty data, plus ``retry``), numbers each event, and answers a ``GET`` carrying
``Last-Event-ID`` with what that stream sent after it, then the rest live. FastMCP
gives each session its own stream namespace, so a session never replays another's.

The store is memory only and bounded: an event older than ``max_age`` is dropped, and
while the events hold more than ``max_bytes`` (their JSON size) the oldest go first.
A client that comes back after its events were dropped gets nothing replayed (the SDK
answers an empty stream) and must call again.

:class:`Resumptions` counts, per MCP session, the ``GET`` streams resuming right now
(an ASGI wrapper sees them open and close), so a call whose POST stream dropped keeps
running while its client reads it through a resumed stream (``server/app.py``).
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage
from pydantic import TypeAdapter
from starlette.types import ASGIApp, Receive, Scope, Send

_MESSAGE: TypeAdapter[JSONRPCMessage] = TypeAdapter(JSONRPCMessage)
_SESSION_HEADER = b"mcp-session-id"
_LAST_EVENT_HEADER = b"last-event-id"


@dataclass
class _Event:
    stream: StreamId
    data: bytes | None  # the message as JSON; None for a priming event
    at: float


@dataclass
class BoundedEventStore(EventStore):
    """Events by id, oldest first; dropped by age and total size (never blocks: no I/O)."""

    max_age: float
    max_bytes: int
    clock: Callable[[], float] = time.monotonic
    _events: OrderedDict[EventId, _Event] = field(default_factory=OrderedDict)
    _streams: defaultdict[StreamId, deque[EventId]] = field(default_factory=lambda: defaultdict(deque))
    _bytes: int = 0
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _prefix: str = field(default_factory=lambda: secrets.token_hex(8))

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        data = None if message is None else message.model_dump_json(by_alias=True, exclude_none=True).encode()
        event_id = f"{self._prefix}-{next(self._ids)}"
        self._events[event_id] = _Event(stream_id, data, self.clock())
        self._streams[stream_id].append(event_id)
        self._bytes += len(data or b"")
        self._evict()
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        self._evict()
        last = self._events.get(last_event_id)
        if last is None:
            return None
        ids = list(self._streams[last.stream])
        for event_id in ids[ids.index(last_event_id) + 1 :]:
            event = self._events.get(event_id)
            if event is not None and event.data is not None:
                await send_callback(EventMessage(_MESSAGE.validate_json(event.data), event_id))
        return last.stream

    @property
    def size(self) -> int:
        """Bytes of event data held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._events)

    def _evict(self) -> None:
        oldest_kept = self.clock() - self.max_age
        while self._events:
            event_id, event = next(iter(self._events.items()))
            if event.at >= oldest_kept and self._bytes <= self.max_bytes:
                return
            del self._events[event_id]
            self._bytes -= len(event.data or b"")
            stream = self._streams[event.stream]
            stream.popleft()  # a stream's events are dropped in the order they came
            if not stream:
                del self._streams[event.stream]


class Resumptions:
    """The number of ``GET`` streams with ``Last-Event-ID`` open now, per MCP session id."""

    def __init__(self) -> None:
        self._open: defaultdict[str, int] = defaultdict(int)

    def open(self, session_id: str) -> int:
        return self._open.get(session_id, 0)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """*app*, counting the resuming ``GET`` requests it serves while they last."""

        async def counted(scope: Scope, receive: Receive, send: Send) -> None:
            session = _resuming_session(scope)
            if session is None:
                await app(scope, receive, send)
                return
            self._open[session] += 1
            try:
                await app(scope, receive, send)
            finally:
                self._open[session] -= 1
                if not self._open[session]:
                    del self._open[session]

        return counted


def _resuming_session(scope: Scope) -> str | None:
    if scope.get("type") != "http" or scope.get("method") != "GET":
        return None
    headers = dict(scope.get("headers") or ())
    session = headers.get(_SESSION_HEADER)
    if session is None or _LAST_EVENT_HEADER not in headers:
        return None
    return session.decode("latin-1")
