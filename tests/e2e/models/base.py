"""The HTTP plumbing shared by the scripted model servers.

A stdlib ``ThreadingHTTPServer`` in a background thread: no event loop to share with
the test, nothing to install, and each CLI's request gets its own thread, so a slow
``test_patch`` call (the CLI holding a model request open meanwhile) blocks nothing.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class RecordedRequest:
    """One request a CLI sent, as received (body parsed as JSON when it is JSON)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    kind: str = ""  # what the server took it for: "turn", "side", "count", "unknown", ...
    answer: str = ""  # for a turn: "tool" (the script called the tool) or "text"
    at: float = field(default_factory=time.time)


@dataclass
class Reply:
    """What to send back: a JSON document, or a list of SSE events (name, data; a str data is sent as is)."""

    status: int = 200
    json_body: Any = None
    sse: list[tuple[str | None, Any]] | None = None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the record is the log; stderr noise would only hide test output

    def _serve(self) -> None:
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self._read_chunked()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        req = RecordedRequest(
            method=self.command,
            path=split.path,
            query=split.query,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        model = self.server.model
        try:
            reply = model.respond(req)
        except Exception as exc:  # a bug in a script must show up in the test, not hang it
            req.kind = "error"
            reply = Reply(500, {"error": {"type": "scripted_model_error", "message": repr(exc)}})
        model._record(req)
        try:
            self._send(reply)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _read_chunked(self) -> bytes:
        data = b""
        while True:
            size = int(self.rfile.readline().strip().split(b";")[0], 16)
            if size == 0:
                self.rfile.readline()
                return data
            data += self.rfile.read(size)
            self.rfile.readline()

    def _send(self, reply: Reply) -> None:
        if reply.sse is None:
            payload = json.dumps(reply.json_body if reply.json_body is not None else {}).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event, data in reply.sse:
            raw = data if isinstance(data, str) else json.dumps(data)  # a str goes as is: "[DONE]"
            text = (f"event: {event}\n" if event else "") + f"data: {raw}\n\n"
            chunk = text.encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    model: ScriptedModel

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a CLI dropping a keep-alive connection is normal, not a test failure


class ScriptedModel:
    """Base of the scripted model APIs: start/stop, the request record, the script.

    Subclasses implement ``respond(request) -> Reply`` and ``tool_results()``.
    The script is stateless on purpose: each turn is decided from the conversation
    the CLI sends (no tool result yet → call the tool; a tool result → final text),
    so CLI retries and side requests cannot put the script out of step.
    """

    #: the tool name this API's CLI exposes for ssebench's test_patch
    tool_name: str = ""

    def __init__(
        self,
        *,
        tool_name: str | None = None,
        final_text: str = "I ran test_patch.",
        call_tool: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        record_path: str | None = None,
    ) -> None:
        if tool_name is not None:
            self.tool_name = tool_name
        self.final_text = final_text
        self.call_tool = call_tool
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._record_path = record_path
        self._server = _Server((host, port), _Handler)
        self._server.model = self
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """Base URL with no trailing slash and no path."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ScriptedModel:
        self._thread = threading.Thread(target=self._server.serve_forever, name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:  # shutdown() waits for serve_forever: only if it runs
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- record ------------------------------------------------------------------
    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(req)
            if self._record_path:
                with open(self._record_path, "a", encoding="utf-8") as out:
                    out.write(json.dumps(dataclasses.asdict(req)) + "\n")

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def turns(self) -> list[RecordedRequest]:
        """The main-conversation requests (those offering the tool), in order."""
        return [r for r in self.requests if r.kind == "turn"]

    def tool_calls_sent(self) -> int:
        """How many times the script told the CLI to call the tool."""
        return sum(1 for r in self.requests if r.kind == "turn" and r.answer == "tool")

    def describe(self) -> str:
        """A one-line-per-request summary, for assertion messages."""
        return "\n".join(f"{r.method} {r.path} kind={r.kind}" for r in self.requests)

    # -- to implement ------------------------------------------------------------
    def respond(self, req: RecordedRequest) -> Reply:
        raise NotImplementedError

    def tool_results(self) -> list[Any]:
        raise NotImplementedError
