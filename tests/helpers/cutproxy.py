"""A TCP proxy between an MCP client and the server that drops one stream mid-call.

A client library resumes a stream only when its connection really breaks, so the test puts
this in the middle: it forwards bytes both ways on 127.0.0.1 and, once armed, closes the
first connection whose server-to-client bytes carry *marker* (a progress notification),
right after forwarding them, both sides at once, as a network drop would. Every request line it forwarded is kept, with
its ``Last-Event-ID`` header, so a test sees how the client came back.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass, field

_REQUEST = re.compile(rb"^(GET|POST|DELETE) [^\r\n]* HTTP/1\.1\r\n(.*?)\r\n\r\n", re.DOTALL | re.MULTILINE)
_LAST_EVENT_ID = re.compile(rb"^last-event-id: *([^\r\n]*)", re.IGNORECASE | re.MULTILINE)


@dataclass
class CutProxy:
    """``async with CutProxy(port, b"notifications/progress") as proxy:`` then use ``proxy.port``."""

    upstream_port: int
    marker: bytes
    port: int = 0
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (method, Last-Event-ID)
    cut: asyncio.Event = field(default_factory=asyncio.Event)
    _server: asyncio.Server | None = None
    _pumps: set[asyncio.Task[None]] = field(default_factory=set)

    async def __aenter__(self) -> CutProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for pump in self._pumps:
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        writers = (client_w, server_w)
        up = asyncio.create_task(self._pump(client_r, server_w, writers, upstream=True))
        down = asyncio.create_task(self._pump(server_r, client_w, writers, upstream=False))
        self._pumps.update((up, down))
        await asyncio.gather(up, down, return_exceptions=True)
        self._pumps.difference_update((up, down))

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        writers: tuple[asyncio.StreamWriter, ...],
        *,
        upstream: bool,
    ) -> None:
        try:
            while chunk := await reader.read(65536):
                if upstream:
                    for match in _REQUEST.finditer(chunk):
                        header = _LAST_EVENT_ID.search(match[2])
                        self.requests.append((match[1].decode(), header[1].decode() if header else None))
                writer.write(chunk)
                await writer.drain()
                if not upstream and self.marker in chunk and not self.cut.is_set():
                    self.cut.set()
                    break  # the client got the marker's event; then its connection drops
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for each in writers:  # either side gone: the whole connection goes
                with contextlib.suppress(Exception):
                    each.close()
