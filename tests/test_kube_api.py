"""The Kubernetes backend's one retry (kube_api.py), against a real HTTP server on 127.0.0.1
that answers the official client as a troubled API server does: 429, 5xx, a connection
reset after the request arrived, then the real answer. Nothing of the client is mocked."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("kubernetes", reason="the kubernetes client is not installed (pip install -e '.[test]')")

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError, ProtocolError

from ssebench.jobs.backends import kube_api

FAST = kube_api.Backoff(attempts=5, first=0.01, longest=0.05)
LABELS = {"app.kubernetes.io/managed-by": "ssebench", "ssebench.dev/job": "j", "ssebench.dev/run": "r"}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sse-j-r", "labels": LABELS}}
PODS = {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []}


@dataclass
class Answer:
    """What the server does with one request: a status and body, or a reset connection."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    reset: bool = False  # read the request, then reset the connection (no answer)


class Server:
    """Answers requests in the order of *script*; records each request's method and path."""

    def __init__(self) -> None:
        self.script: list[Answer] = []
        self.seen: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server.lock:
                    server.seen.append((self.command, self.path.split("?", 1)[0]))
                    answer = server.script.pop(0) if server.script else Answer(500, {"message": "unscripted"})
                if answer.reset:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                    return
                data = json.dumps(answer.body).encode()
                self.send_response(answer.status)
                for key, value in {"Content-Type": "application/json", **answer.headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

        return Handler

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def server() -> Iterator[Server]:
    started = Server()
    started.thread.start()
    try:
        yield started
    finally:
        started.httpd.shutdown()
        started.httpd.server_close()


@pytest.fixture
def core(server: Server) -> Iterator[Any]:
    configuration = client.Configuration()
    configuration.host = server.url
    api = client.ApiClient(configuration)
    try:
        yield client.CoreV1Api(api)
    finally:
        api.close()


def status(code: int, **headers: str) -> Answer:
    return Answer(code, {"kind": "Status", "apiVersion": "v1", "code": code, "message": f"status {code}"}, headers)


def test_429_and_5xx_are_tried_again_until_the_answer(server: Server, core: Any) -> None:
    server.script = [status(500), status(429, **{"Retry-After": "0"}), status(503), Answer(200, PODS)]
    began = time.monotonic()
    pods = kube_api.call(core.list_namespaced_pod, "default", backoff=FAST)
    assert pods.items == []
    assert server.seen == [("GET", "/api/v1/namespaces/default/pods")] * 4
    assert time.monotonic() - began < 5


def test_an_error_that_is_no_accident_is_raised_at_once(server: Server, core: Any) -> None:
    server.script = [status(403), Answer(200, PODS)]
    with pytest.raises(ApiException) as caught:
        kube_api.call(core.list_namespaced_pod, "default", backoff=FAST)
    assert caught.value.status == 403 and len(server.seen) == 1


def test_the_retry_is_bounded(server: Server, core: Any) -> None:
    server.script = [status(503)] * 9
    with pytest.raises(ApiException) as caught:
        kube_api.call(core.list_namespaced_pod, "default", backoff=FAST)
    assert caught.value.status == 503 and len(server.seen) == FAST.attempts


def test_a_create_whose_answer_was_lost_is_not_made_twice(server: Server, core: Any) -> None:
    """The first POST arrives (the Secret is made) but its answer is lost to a reset: the
    retry's 409 AlreadyExists is success, since the Secret there carries our labels."""
    server.script = [Answer(reset=True), status(409), Answer(200, SECRET)]
    kube_api.create(core.create_namespaced_secret, core.read_namespaced_secret, "default", SECRET, FAST)
    assert server.seen == [
        ("POST", "/api/v1/namespaces/default/secrets"),
        ("POST", "/api/v1/namespaces/default/secrets"),
        ("GET", "/api/v1/namespaces/default/secrets/sse-j-r"),
    ]


def test_a_409_is_not_ours_when_nothing_failed_before_or_the_labels_differ(server: Server, core: Any) -> None:
    server.script = [status(409)]
    with pytest.raises(ApiException) as caught:
        kube_api.create(core.create_namespaced_secret, core.read_namespaced_secret, "default", SECRET, FAST)
    assert caught.value.status == 409 and len(server.seen) == 1
    foreign = {**SECRET, "metadata": {"name": "sse-j-r", "labels": {"app": "someone-else"}}}
    server.seen.clear()
    server.script = [status(502), status(409), Answer(200, foreign)]
    with pytest.raises(ApiException) as caught:
        kube_api.create(core.create_namespaced_secret, core.read_namespaced_secret, "default", SECRET, FAST)
    assert caught.value.status == 409 and [m for m, _ in server.seen] == ["POST", "POST", "GET"]


def test_a_reset_connection_is_tried_again(server: Server, core: Any) -> None:
    """A POST (not idempotent: urllib3 does not retry it) reset twice, then created."""
    server.script = [Answer(reset=True), Answer(reset=True), Answer(201, SECRET)]
    kube_api.create(core.create_namespaced_secret, core.read_namespaced_secret, "default", SECRET, FAST)
    assert [m for m, _ in server.seen] == ["POST", "POST", "POST"]


def test_what_counts_as_transient() -> None:
    """The exec stream's websocket reports its handshake in ApiException(status=0)."""
    assert kube_api.transient(ApiException(status=0, reason="Handshake status 503 Service Unavailable"))
    assert kube_api.transient(ApiException(status=0, reason="[Errno 104] Connection reset by peer"))
    assert not kube_api.transient(ApiException(status=0, reason="Handshake status 403 Forbidden"))
    assert not kube_api.transient(ApiException(status=404, reason="Not Found"))
    assert kube_api.transient(ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")))


def test_a_refused_connection_is_tried_again_then_raised(core: Any) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # closed on leaving: nothing listens there
    core.api_client.configuration.host = f"http://127.0.0.1:{port}"
    core.api_client.rest_client.pool_manager.clear()
    tries = kube_api.Backoff(attempts=2, first=0.01)
    with pytest.raises(MaxRetryError) as caught:
        kube_api.call(core.list_namespaced_pod, "default", backoff=tries)
    assert kube_api.transient(caught.value)
