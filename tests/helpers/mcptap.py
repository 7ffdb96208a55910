"""What an MCP client really does on the wire, seen from a TCP proxy in front of the server.

Between a real agent CLI and ``ssebench serve``, on 127.0.0.1 in a thread of its own (the
CLI runs in a subprocess), :class:`McpTap` forwards bytes both ways and notes, from the
client's bytes: the protocol revision (the ``Mcp-Protocol-Version`` header), whether its
``tools/call`` carried a ``progressToken`` (it asks for progress) or the tasks extension in
its ``_meta`` (it asks for a task), and every ``GET`` with ``Last-Event-ID`` (it resumes).
To see whether the client resumes, it drops the ``tools/call`` stream once, right after the
first server event that has an ``id`` (the priming event), both sides at once, as a network
drop would; a stream without ids (no resumption on offer) is never dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

_CALL = re.compile(rb'"method"\s*:\s*"tools/call"')
_VERSION = re.compile(rb"^mcp-protocol-version: *([^\r\n]*)", re.IGNORECASE | re.MULTILINE)
_INITIALIZE = re.compile(rb'"method"\s*:\s*"initialize".*?"protocolVersion"\s*:\s*"([^"]+)"', re.DOTALL)
_RESUME = re.compile(rb"^GET [^\r\n]*\r\n(?:[^\r\n]+\r\n)*?last-event-id: *([^\r\n]*)", re.IGNORECASE | re.MULTILINE)
_EVENT_ID = re.compile(rb"(?:^|\n)id: *[^\r\n]+", re.MULTILINE)
_REQUEST_LINE = re.compile(rb"^(?:GET|POST|DELETE) [^\r\n]*", re.MULTILINE)
TASKS = b"io.modelcontextprotocol/tasks"


@dataclass
class Seen:
    """What the client did."""

    versions: set[str] = field(default_factory=set)  # in Mcp-Protocol-Version headers
    asked: set[str] = field(default_factory=set)  # in an initialize request
    calls: int = 0
    progress_token: bool = False
    tasks: bool = False
    dropped: bool = False
    resumed: list[str] = field(default_factory=list)  # the Last-Event-ID of each GET that resumed
    requests: list[str] = field(default_factory=list)  # each request line, for a failure's message


class McpTap:
    """``with McpTap() as tap:`` … ``tap.url(server_url)`` is the URL to give the client."""

    def __init__(self) -> None:
        self.seen = Seen()
        self._upstream = 0
        self._port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcp-tap", daemon=True)
        self._stop: asyncio.Event | None = None

    def url(self, server_url: str) -> str:
        host, _, rest = server_url.partition("://")[2].partition("/")
        self._upstream = int(host.rsplit(":", 1)[1])
        return f"http://localhost:{self._port}/{rest}"

    def __enter__(self) -> McpTap:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        pumps: set[asyncio.Task[None]] = set()

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            pumps.add(task)
            try:
                await self._connection(reader, writer)
            finally:
                pumps.discard(task)

        server = await asyncio.start_server(accept, "127.0.0.1", 0)
        self._port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        for pump in list(pumps):
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self._upstream)
        writers = (client_w, server_w)
        state = {"call": False}
        await asyncio.gather(
            self._pump(client_r, server_w, writers, state, upstream=True),
            self._pump(server_r, client_w, writers, state, upstream=False),
            return_exceptions=True,
        )

    def _note(self, chunk: bytes, state: dict[str, bool]) -> None:
        self.seen.versions.update(v.decode() for v in _VERSION.findall(chunk))
        self.seen.asked.update(v.decode() for v in _INITIALIZE.findall(chunk))
        self.seen.requests.extend(line.decode() for line in _REQUEST_LINE.findall(chunk))
        self.seen.resumed.extend(v.decode() for v in _RESUME.findall(chunk))
        if _CALL.search(chunk):
            state["call"] = True
            self.seen.calls += 1
            self.seen.progress_token |= b'"progressToken"' in chunk
            self.seen.tasks |= TASKS in chunk

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        writers: tuple[asyncio.StreamWriter, ...],
        state: dict[str, bool],
        *,
        upstream: bool,
    ) -> None:
        try:
            while chunk := await reader.read(65536):
                if upstream:
                    self._note(chunk, state)
                writer.write(chunk)
                await writer.drain()
                if not upstream and state["call"] and not self.seen.dropped and _EVENT_ID.search(chunk):
                    self.seen.dropped = True
                    break  # the call's stream drops after its first event with an id
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for each in writers:
                with contextlib.suppress(Exception):
                    each.close()


@contextlib.contextmanager
def tapped() -> Iterator[McpTap]:
    with McpTap() as tap:
        yield tap
