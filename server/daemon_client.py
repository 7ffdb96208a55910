"""Talking to the SDK daemon over its Unix socket (contract: docs/daemon-api.md).

Everything the daemon says is checked here; anything unexpected (unreachable,
closed mid-run, malformed) becomes :class:`DaemonError`, which the server turns into
the spec's internal-failure text. Streams are read as they arrive and closing one
early (the agent cancelled) closes the connection, which makes the daemon kill the
running check.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from ssebench.difficulty import CHECK_ORDER, Check

from .report import CheckResult, State

# A run may be silent between heartbeats (10 s by default); a daemon silent for
# this long is taken as hung.
READ_TIMEOUT = 900.0
CONNECT_TIMEOUT = 5.0


class DaemonError(RuntimeError):
    """Testing itself failed: the agent's patch is not responsible."""


@dataclass(frozen=True)
class Event:
    """One line of the run stream."""

    kind: str
    data: dict[str, Any]

    @property
    def check(self) -> Check | None:
        name = self.data.get("check")
        try:
            return Check(name) if isinstance(name, str) else None
        except ValueError:
            return None


@dataclass(frozen=True)
class RunResult:
    run_id: str
    checks: list[CheckResult]


def parse_check(obj: Any) -> CheckResult:
    """One ``CHECK`` object of the daemon's result."""
    if not isinstance(obj, dict):
        raise DaemonError(f"check result is not an object: {obj!r}")
    try:
        check = Check(obj["check"])
        state = State(obj["state"])
    except (KeyError, ValueError, TypeError) as exc:
        raise DaemonError(f"bad check result {obj!r}") from exc
    passed, total = obj.get("pocs_passed"), obj.get("pocs_total")
    covered = obj.get("covered_by_intent", False)
    if check is not Check.POCS or state is State.NOT_RUN:
        passed, total = 0, 0  # counts mean nothing here (the daemon sends null or omits them)
    elif not (isinstance(passed, int) and isinstance(total, int) and 0 <= passed <= total):
        raise DaemonError(f"bad PoC counts in {obj!r}")
    if not isinstance(covered, bool):
        raise DaemonError(f"bad covered_by_intent in {obj!r}")
    return CheckResult(check, state, pocs_passed=passed, pocs_total=total, covered_by_intent=covered)


def parse_result(event: Event, requested: Sequence[Check]) -> RunResult:
    """The final ``result`` event, checked against what was asked for."""
    run_id = event.data.get("run_id")
    raw = event.data.get("checks")
    if not isinstance(run_id, str) or not run_id or not isinstance(raw, list):
        raise DaemonError(f"malformed result event {event.data!r}")
    checks = [parse_check(item) for item in raw]
    names = [c.check for c in checks]
    if len(set(names)) != len(names) or not set(names) <= set(requested):
        raise DaemonError(f"result has checks {names}, asked for {list(requested)}")
    if names != sorted(names, key=CHECK_ORDER.index):
        raise DaemonError(f"result checks out of order: {names}")
    if Check.BUILD in requested and Check.BUILD not in names:
        raise DaemonError("result lacks the build")
    if Check.POCS in requested and Check.POCS not in names:
        raise DaemonError("result lacks the PoCs")
    return RunResult(run_id, checks)


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

    async def run(self, checks: Sequence[Check]) -> AsyncIterator[Event]:
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
                    if event.kind == "error":
                        raise DaemonError(f"daemon run error: {event.data.get('message')!r}")
                    yield event
                    if event.kind == "result":
                        return
        except httpx.HTTPError as exc:
            raise DaemonError(f"POST /runs: {exc!r}") from exc
        raise DaemonError("the daemon closed the run stream before the result")

    def fetch_log(
        self, run_id: str, check: Check, feed: Callable[[bytes], None], stop: threading.Event
    ) -> None:
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
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise DaemonError(f"malformed event line {line[:200]!r}") from exc
    if not isinstance(obj, dict) or not isinstance(obj.get("event"), str):
        raise DaemonError(f"malformed event {line[:200]!r}")
    return Event(obj["event"], obj)
