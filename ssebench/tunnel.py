"""The Pod's end of a reversed tunnel: connections that come in, handed to agents that go out.

Why: a Kubernetes run's agent reaches the job's model gateway on ``127.0.0.1:PORT`` as on the
other backends, but a Pod never connects to this machine (docs/jobs.md, "The model gateway").
The API server's port-forward only dials *into* a Pod, so the direction is reversed: the
backend opens connections to the Pod's tunnel port ahead of need (a few idle ones:
ssebench/jobs/backends/kube_tunnel.py) and the entrypoint's relay (ssebench/relay.py) takes one
of them for each agent connection. One byte each way says what a tunnel connection is for:
the backend sends :data:`HELLO` first, the Pod answers :data:`READY` (the backend then knows
the Pod's end is up), then :data:`GO` when an agent connection is joined to it (the backend
then connects to the gateway and has a spare one opened) or :data:`BYE` when the relay closes
with it idle (the run's agent is done: no more are needed). After GO, the bytes are the
agent's, both ways. Why the backend speaks first: the client's port-forward reader misses
bytes that came with the API server's handshake answer (they wait in the TLS buffer, which
its ``select`` does not see, until more arrive), so the Pod sends nothing before HELLO.
"""

from __future__ import annotations

import contextlib
import queue
import select
import socket
import sys
import threading
import time
from collections.abc import Iterator

from ssebench import relay

HELLO, READY, GO, BYE = b"H", b"R", b"G", b"B"
GREET = 30.0  # seconds a new tunnel connection has to say HELLO
WAIT = 30.0  # seconds an agent connection waits for a tunnel before it is refused (the backend refills in ms)
NO_TUNNEL = (
    "model gateway: no connection from ssebench jobs came within {wait:g} s (the run's tunnel through the "
    "Kubernetes API server is down: gateway-tunnel.log in the run's folder says why): the agent's request failed"
)


class TunnelDock:
    """Accepts the backend's tunnel connections on a listener and keeps them idle until
    :meth:`take` hands one to an agent connection (it is :class:`relay.Relay`'s ``connect``)."""

    def __init__(self, listener: socket.socket, wait: float = WAIT) -> None:
        self.listener, self.wait = listener, wait
        self._idle: queue.Queue[socket.socket] = queue.Queue()
        self._greeting: set[socket.socket] = set()  # accepted, HELLO not read yet
        self._greeters: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="ssebench-tunnel-dock", daemon=True)

    def start(self) -> TunnelDock:
        self.listener.settimeout(relay.ACCEPT_POLL)
        self._thread.start()
        return self

    def take(self) -> socket.socket:
        """A live idle tunnel connection, told GO; OSError when none came within the wait (the
        relay then closes the agent's connection: to the agent, a failed request)."""
        deadline = time.monotonic() + self.wait
        while not self._closed.is_set():
            try:
                tunnel = self._idle.get(timeout=max(0.0, min(relay.ACCEPT_POLL, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    break
                continue
            if _ended(tunnel):  # the backend (or the API server) closed it while it was idle
                tunnel.close()
                continue
            try:
                tunnel.sendall(GO)
            except OSError:
                tunnel.close()
                continue
            return tunnel
        if not self._closed.is_set():  # closing: the agent is done, nothing to say
            print(f"ssebench entrypoint: {NO_TUNNEL.format(wait=self.wait)}", file=sys.stderr, flush=True)
        raise ConnectionRefusedError("no tunnel connection to the model gateway")

    def close(self) -> None:
        """Stop accepting; each idle connection is told BYE and closed."""
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join()
        self.listener.close()
        with self._lock:
            for tunnel in self._greeting:
                with contextlib.suppress(OSError):
                    tunnel.shutdown(socket.SHUT_RDWR)
        for thread in self._greeters:
            thread.join()
        while True:
            try:
                tunnel = self._idle.get_nowait()
            except queue.Empty:
                return
            with contextlib.suppress(OSError):
                tunnel.sendall(BYE)
            tunnel.close()

    def _accept(self) -> None:
        for tunnel in relay.accepted(self.listener, self._closed):
            thread = threading.Thread(target=self._greet, args=(tunnel,), name="ssebench-tunnel-greet", daemon=True)
            with self._lock:
                self._greeting.add(tunnel)
                self._greeters = [t for t in self._greeters if t.is_alive()] + [thread]
            thread.start()

    def _greet(self, tunnel: socket.socket) -> None:
        """HELLO in, READY out, then idle; anything else (or nothing in time) is closed."""
        try:
            tunnel.settimeout(GREET)
            hello = tunnel.recv(1) == HELLO
            tunnel.settimeout(None)
            if hello:
                tunnel.sendall(READY)
        except OSError:
            hello = False
        with self._lock:
            self._greeting.discard(tunnel)
            if hello and not self._closed.is_set():
                self._idle.put(tunnel)
                return
        tunnel.close()


def _ended(sock: socket.socket) -> bool:
    """Whether an idle tunnel connection has anything to read: the backend sends nothing
    before GO, so that is its end (or a broken connection)."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


@contextlib.contextmanager
def reversed_relay(agents: socket.socket, tunnels: socket.socket) -> Iterator[None]:
    """Agents' connections to the AGENTS listener joined to the backend's to the TUNNELS one,
    for the block; both listeners are closed after it."""
    dock = TunnelDock(tunnels).start()
    joined = relay.Relay(agents, dock.take).start()
    try:
        yield
    finally:
        dock.close()  # first: an agent connection waiting for a tunnel gives up at once
        joined.close()
