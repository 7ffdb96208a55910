"""Is it up yet? Poll the daemon's health route and the MCP server's ``initialize``.

The agent must not start before ``test_patch`` answers, and a server that died
while we waited must be reported at once with its own last words rather than
after the full timeout.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from ssebench import __version__
from ssebench.container.processes import Child

POLL_SECONDS = 0.1
PROTOCOL_VERSION = "2025-06-18"


class StartupError(RuntimeError):
    """A part did not come up: the message plus the last lines of its log."""

    def __init__(self, message: str, log_tail: list[str]) -> None:
        self.log_tail = log_tail
        text = message
        if log_tail:
            text += "\nLast lines of its log:\n" + "\n".join("  " + line for line in log_tail)
        super().__init__(text)
        self.message = message


def _wait(probe: Callable[[], bool], child: Child | None, what: str, deadline: float,
          timeout: int, interrupted: Callable[[], bool]) -> float:
    started = time.monotonic()
    while True:
        if child is not None and not child.running():
            raise StartupError(f"{what} exited with status {child.proc.returncode} before it was ready",
                               child.tail())
        if probe():
            return time.monotonic() - started
        if interrupted():
            raise StartupError(f"interrupted while waiting for {what}", [])
        if time.monotonic() >= deadline:
            raise StartupError(f"{what} did not answer within {timeout} s", child.tail() if child else [])
        time.sleep(POLL_SECONDS)


def wait_for_daemon(socket: Path, child: Child | None, *, deadline: float, timeout: int,
                    interrupted: Callable[[], bool] = lambda: False) -> float:
    """Seconds until ``GET /health`` on the Unix socket answered 200."""
    transport = httpx.HTTPTransport(uds=str(socket))
    with httpx.Client(transport=transport, base_url="http://daemon", timeout=2.0) as client:
        def probe() -> bool:
            try:
                return client.get("/health").status_code == 200
            except httpx.HTTPError:
                return False

        return _wait(probe, child, f"the daemon (socket {socket})", deadline, timeout, interrupted)


def initialize_request() -> dict:
    return {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                   "clientInfo": {"name": "ssebench-entrypoint", "version": __version__}},
    }


def answers_initialize(client: httpx.Client, url: str) -> bool:
    """One MCP ``initialize`` over Streamable HTTP; True when a result came back."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    try:
        response = client.post(url, json=initialize_request(), headers=headers)
    except httpx.HTTPError:
        return False
    if response.status_code != 200:
        return False
    ok = any("serverInfo" in (msg.get("result") or {}) for msg in _messages(response))
    session = response.headers.get("mcp-session-id")
    if session:  # end the probe's session so the server does not keep it
        try:
            client.delete(url, headers={"mcp-session-id": session})
        except httpx.HTTPError:
            pass
    return ok


def _messages(response: httpx.Response) -> list[dict]:
    """JSON-RPC messages of a reply that is either JSON or an SSE stream."""
    text = response.text
    if "text/event-stream" in response.headers.get("content-type", ""):
        payloads = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    else:
        payloads = [text]
    out = []
    for payload in payloads:
        try:
            msg = json.loads(payload)
        except ValueError:
            continue
        out.extend(m for m in (msg if isinstance(msg, list) else [msg]) if isinstance(m, dict))
    return out


def wait_for_mcp(url: str, child: Child | None, *, deadline: float, timeout: int,
                 interrupted: Callable[[], bool] = lambda: False) -> float:
    """Seconds until the server at *url* answered an MCP ``initialize``."""
    with httpx.Client(timeout=5.0) as client:
        return _wait(lambda: answers_initialize(client, url), child, f"the MCP server ({url})",
                     deadline, timeout, interrupted)
