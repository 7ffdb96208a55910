"""``ssebench view`` for the tests: the real server (from scripts/view_screenshots.py, which
starts it the same way for the screenshots), raw HTTP requests, and the browser check."""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent.parent


def screenshots_script() -> ModuleType:
    """scripts/view_screenshots.py as a module (its viewer, browser and shoot)."""
    spec = importlib.util.spec_from_file_location("view_screenshots", REPO / "scripts" / "view_screenshots.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def need_browser() -> None:
    """Skip (fail in CI) when Chromium, ChromeDriver or Selenium is missing."""
    reason = screenshots_script().missing()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser tests cannot run: {reason}")
        pytest.skip(reason)


def raw_get(url: str, path: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """GET PATH exactly as written (no client normalising ``..`` or ``%2e``), with HOST."""
    hostport = url.split("//", 1)[1]
    name, port = hostport.rsplit(":", 1)
    with socket.create_connection((name, int(port)), timeout=10) as sock:
        request = f"GET {path} HTTP/1.1\r\nHost: {hostport if host is None else host}\r\nConnection: close\r\n\r\n"
        sock.sendall(request.encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    headers = {k.lower(): v for k, v in headers.items()}
    if headers.get("transfer-encoding") == "chunked":
        body = _unchunk(body)
    return int(lines[0].split()[1]), headers, body


def _unchunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, body = out + body[:size], body[size + 2 :]
    return out


HOSTILE_SCRIPT = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
HUGE_TEXT_BYTES = 3 << 20


def write_hostile_dialog(path: Path) -> None:
    """A dialog an agent could leave: HTML and script in every field, invalid UTF-8,
    a line that is not JSON, an unknown type, a 3 MiB line."""
    import json

    lines = [
        json.dumps({"seq": 1, "ts": "t", "type": "init", "agent": "claude", "model": HOSTILE_SCRIPT}),
        json.dumps({"seq": 2, "ts": "t", "type": "prompt", "text": "</pre>" + HOSTILE_SCRIPT}),
        json.dumps(
            {
                "seq": 3,
                "ts": "t",
                "type": "tool",
                "id": "x",
                "name": HOSTILE_SCRIPT,
                "status": "running",
                "input": {"a": HOSTILE_SCRIPT},
            }
        ),
    ]
    data = "\n".join(lines).encode() + b"\n"
    data += b'{"seq": 4, "ts": "t", "type": "message", "role": "assistant", "text": "caf\xff\xfe <b>bold</b>"}\n'
    data += HOSTILE_SCRIPT.encode() + b"\n"
    data += json.dumps({"seq": 6, "ts": "t", "type": HOSTILE_SCRIPT}).encode() + b"\n"
    data += (
        json.dumps({"seq": 7, "ts": "t", "type": "message", "text": "A" * HUGE_TEXT_BYTES + HOSTILE_SCRIPT}).encode()
        + b"\n"
    )
    data += (
        json.dumps(
            {"seq": 8, "ts": "t", "type": "message", "role": "assistant", "text": "after the huge line"}
        ).encode()
        + b"\n"
    )
    path.write_bytes(data)
