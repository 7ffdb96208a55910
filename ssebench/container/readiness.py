"""Is the MCP server up yet? Its ``initialize``, polled with :func:`ssebench.supervise.wait_until`.

The agent must not start before ``test_patch`` answers (the daemon's ``/health`` is
:func:`ssebench.supervise.wait_for_daemon`). The answer must be our own server's: another
MCP server on the port (another run's, on the host's network) answers ``initialize`` too,
while ours fails to bind. So the server is ready only once our child itself listens on the
port: the kernel then lets no other socket listen there (ours does not set SO_REUSEPORT), and
the agent sees nothing new (no token in a reply).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from ssebench import __version__
from ssebench.supervise import Child, StartupError, exited, wait_until

PROTOCOL_VERSION = "2025-06-18"
POLL_SECONDS = 0.1
__all__ = ["StartupError", "answers_initialize", "wait_for_mcp"]


def initialize_request() -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "ssebench-entrypoint", "version": __version__},
        },
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


def listens_on(pid: int, port: int) -> bool:
    """Whether process *pid* holds a listening TCP socket on *port* (any address)."""
    import psutil

    try:
        conns = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in conns)


def _messages(response: httpx.Response) -> list[dict]:
    """JSON-RPC messages of a reply that is either JSON or an SSE stream."""
    text = response.text
    if "text/event-stream" in response.headers.get("content-type", ""):
        payloads = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    else:
        payloads = [text]
    out: list[dict[str, Any]] = []
    for payload in payloads:
        try:
            msg = json.loads(payload)
        except ValueError:
            continue
        out.extend(m for m in (msg if isinstance(msg, list) else [msg]) if isinstance(m, dict))
    return out


def wait_for_mcp(
    url: str,
    child: Child | None,
    *,
    deadline: float | None,
    timeout: float,
    interrupted: Callable[[], bool] = lambda: False,
) -> float:
    """Seconds until the server at *url* answered an MCP ``initialize``, *child* listening
    on its port (so the answer was its own, not another server's on that port)."""
    port = httpx.URL(url).port or 80

    def ours() -> bool:
        return child is None or listens_on(child.proc.pid, port)

    with httpx.Client(timeout=5.0) as client:
        return wait_until(
            lambda: ours() and answers_initialize(client, url),
            what=f"the MCP server ({url})",
            timeout=timeout,
            deadline=deadline,
            gone=exited(child.proc if child else None),
            tail=child.tail if child else list,
            interrupted=interrupted,
            poll=POLL_SECONDS,
        )[1]
