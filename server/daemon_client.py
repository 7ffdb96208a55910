"""Talking to the SDK daemon over its Unix socket (contract: docs/daemon-api.md).

Everything the daemon says is checked here; anything unexpected (unreachable,
closed mid-run, malformed) becomes :class:`DaemonError`, which the server turns into
the spec's internal-failure text. Streams are read as they arrive and closing one
early (the agent cancelled) closes the connection, which makes the daemon kill the
running check.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from ssebench import contract
from ssebench.checks import Check
from ssebench.contract import ContractError, Event, Result

# A run may be silent between heartbeats (10 s by default); a daemon silent for
# this long is taken as hung.
READ_TIMEOUT = 900.0
CONNECT_TIMEOUT = 5.0


class DaemonError(RuntimeError):
    """Testing itself failed: the agent's patch is not responsible."""


def parse_result(event: Result, requested: Sequence[Check]) -> Result:
    """The final ``result`` event, checked against what was asked for: only checks that
    were asked for, and each ``always`` kind (ssebench/checks.py) that was."""
    names = [c.check for c in event.checks]
    if not set(names) <= set(requested):
        raise DaemonError(f"result has checks {names}, asked for {list(requested)}")
    for check in requested:
        if check.kind.always and check not in names:
            raise DaemonError(f"result lacks the {check.label}")
    return event


class DaemonClient:
    """An HTTP client for the daemon's socket; one connection per request.

    No keep-alive: a daemon restarted between calls must not leave the server
    holding a dead pooled connection.
    """

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self._http = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=socket_path, retries=0),
            base_url="http://daemon",
            timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT),
            limits=httpx.Limits(max_keepalive_connections=0),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def health(self, timeout: float = 1.0) -> dict[str, Any]:
        try:
            resp = await self._http.get("/health", timeout=timeout)
            resp.raise_for_status()
            body = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise DaemonError(f"daemon health: {exc!r}") from exc
        if not isinstance(body, dict):
            raise DaemonError(f"daemon health: {body!r}")
        return body

    async def run(self, checks: Sequence[Check]) -> AsyncGenerator[Event, None]:
        """Stream the events of one run of ``checks``; the last is ``result``."""
        body = {"checks": [c.value for c in checks]}
        try:
            async with self._http.stream("POST", "/runs", json=body) as resp:
                if resp.status_code != 200:
                    text = (await resp.aread())[:2000].decode("utf-8", "replace")
                    raise DaemonError(f"POST /runs: HTTP {resp.status_code}: {text}")
                async for line in resp.aiter_lines():
                    if not line.strip():
                        continue
                    event = _parse_event(line)
                    if isinstance(event, contract.Error):
                        raise DaemonError(f"daemon run error: {event.message!r}")
                    yield event
                    if isinstance(event, Result):
                        return
        except httpx.HTTPError as exc:
            raise DaemonError(f"POST /runs: {exc!r}") from exc
        raise DaemonError("the daemon closed the run stream before the result")

    def fetch_log(self, run_id: str, check: Check, feed: Callable[[bytes], None], stop: threading.Event) -> None:
        """Blocking: stream the log of ``check`` in run ``run_id`` into ``feed``.

        Runs in a worker thread with the stdlib HTTP client and large reads: a log can
        be gigabytes, and async httpx moves it several times slower. ``stop`` (set when
        the call is cancelled) ends the download early with :class:`LogFetchStopped`.
        """
        url = f"/runs/{quote(run_id, safe='')}/logs/{check.value}"
        conn = _UnixHTTPConnection(self.socket_path, READ_TIMEOUT)
        try:
            conn.request("GET", url)
            resp = conn.getresponse()
            if resp.status != 200:
                raise DaemonError(f"GET {url}: HTTP {resp.status}")
            while True:
                if stop.is_set():
                    raise LogFetchStopped(url)
                chunk = resp.read1(_READ_SIZE)
                if not chunk:
                    break
                feed(chunk)
            if resp.length:  # Content-Length said more was coming
                raise DaemonError(f"GET {url}: the daemon closed the log early")
        except (OSError, http.client.HTTPException) as exc:
            raise DaemonError(f"GET {url}: {exc!r}") from exc
        finally:
            conn.close()


class LogFetchStopped(Exception):
    """The call was cancelled while its log was downloading."""


_READ_SIZE = 1 << 20


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, socket_path: str, timeout: float) -> None:
        super().__init__("daemon", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(self.socket_path)
            sock.settimeout(self.timeout)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def _parse_event(line: str) -> Event:
    """One line of the run stream, typed; an off-contract line is a :class:`DaemonError`."""
    try:
        return contract.parse_line(line)
    except ContractError as exc:
        raise DaemonError(f"off-contract event from the daemon: {str(exc)[:500]}") from None
