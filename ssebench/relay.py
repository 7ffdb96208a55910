"""A byte relay between a listening socket and an address it connects each client to.

Why: a job's model gateway listens on the host's 127.0.0.1 only, which a container with a
network of its own (``none``, a bridge) does not reach. So the Docker backend serves each run a
Unix socket of its own on the host (relayed to the gateway's port) and bind-mounts that one
socket into the run's agent container, where the entrypoint relays the gateway's port on the
container's own 127.0.0.1 to it (docs/jobs.md, "The model gateway"). Nothing listens on any
other address; the socket's folder is private (0700) on the host. Plain threads and blocking
sockets: a handful of connections per run, and no event loop to share.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

CHUNK = 1 << 16
ACCEPT_POLL = 0.2  # seconds: how soon a closed relay's accept loop notices


def tcp_listener(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:PORT (OSError when the port is taken)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
    except OSError:
        listener.close()
        raise
    return listener


def unix_listener(path: Path) -> socket.socket:
    """A Unix socket listening at PATH, connectable by any user that reaches it (a container's
    agent may run as another user; the folder holding it decides who does on the host)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        os.chmod(path, 0o666)
        listener.listen(64)
    except OSError:
        listener.close()
        raise
    return listener


def to_tcp(port: int) -> Callable[[], socket.socket]:
    return lambda: socket.create_connection(("127.0.0.1", port), timeout=30)


def to_unix(path: Path) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.settimeout(30)
            upstream.connect(str(path))
        except OSError:
            upstream.close()
            raise
        return upstream

    return connect


class Relay:
    """Accepts on LISTENER; each client is joined to a new connection from CONNECT, bytes both
    ways until either side ends. :meth:`close` stops accepting and cuts every connection."""

    def __init__(self, listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
        self.listener, self.connect = listener, connect
        self._open: set[socket.socket] = set()
        self._joins: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="ssebench-relay", daemon=True)

    def start(self) -> Relay:
        self.listener.settimeout(ACCEPT_POLL)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join()
        self.listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()
        for thread in self._joins:  # each ends once its sockets are cut
            thread.join()

    def _accept(self) -> None:
        for client in accepted(self.listener, self._closed):
            thread = threading.Thread(target=self._join, args=(client,), name="ssebench-relay-conn", daemon=True)
            self._joins = [t for t in self._joins if t.is_alive()] + [thread]
            thread.start()

    def _join(self, client: socket.socket) -> None:
        client.settimeout(None)
        try:
            upstream = self.connect()
        except OSError:
            client.close()  # the client sees the connection end: its request failed
            return
        upstream.settimeout(None)
        with self._lock:
            if self._closed.is_set():
                client.close()
                upstream.close()
                return
            self._open.update((client, upstream))
        splice(client, upstream)
        with self._lock:
            self._open.difference_update((client, upstream))
        client.close()
        upstream.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def accepted(listener: socket.socket, closed: threading.Event) -> Iterator[socket.socket]:
    """Each connection *listener* takes until *closed* is set or the listener is closed
    (its accept times out now and then, so a set *closed* is seen without a connection)."""
    while not closed.is_set():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        yield conn


def splice(one: socket.socket, other: socket.socket) -> None:
    """Bytes both ways between ONE and OTHER until both directions have ended (this thread
    and one more); the caller closes them. Shutting either down from another thread ends it."""
    back = threading.Thread(target=_pump, args=(other, one), name="ssebench-relay-pump", daemon=True)
    back.start()
    _pump(one, other)
    back.join()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy SOURCE to SINK until SOURCE ends (then SINK's writing half is shut: HTTP clients
    and servers see the end of the request or answer) or either fails (both are cut)."""
    try:
        while chunk := source.recv(CHUNK):
            sink.sendall(chunk)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def relayed(listener: socket.socket, connect: Callable[[], socket.socket]) -> Iterator[Relay]:
    """A running relay for the block's length."""
    relay = Relay(listener, connect).start()
    try:
        yield relay
    finally:
        relay.close()
