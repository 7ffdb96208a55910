"""The backend's end of a Kubernetes run's tunnel to the job's model gateway (docs/jobs.md,
"The model gateway"; the Pod's end is ssebench/tunnel.py).

Why: the gateway listens on this machine's 127.0.0.1 and a Pod never connects here (a
cluster's nodes may be anywhere; the vendor's key stays here). The API server's port-forward,
as ``kubectl port-forward`` uses it, is opened from here and dials *into* the Pod. So the
backend keeps :data:`POOL` idle port-forward connections to the Pod's tunnel port (each says
HELLO, the Pod answers READY); each one the Pod's relay joins to an agent connection (it sends
GO) is joined here to a new connection to the gateway's port, and a spare is opened in its
place. A tunnel reaches its run's Pod only (found by its Job's name); the run's key decides
whose budget the bytes spend.

When it breaks (the API server unreachable, the Pod's relay gone) the agent's requests fail
like a network error (the Pod's relay closes them after its wait) and the run's folder gets
``gateway-tunnel.log``: a line when the tunnel went down and why, one when it came back, or
that it never came up. A healthy run has no such file. Threads: one filler, one per
port-forward connection; :meth:`PortForwards.close` ends them all.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ssebench import relay, runrecord
from ssebench.tunnel import BYE, GO, HELLO, READY

POOL = 3  # idle connections kept open: an agent's burst of requests does not wait for a new one
FIRST_DELAY, LONGEST_DELAY = 0.25, 2.0  # seconds between failed opens (the Pod is starting, or gone)
LOG_FILE = "gateway-tunnel.log"
JOIN_TIMEOUT = 30.0  # an open hung on the API server is given up on at close


#: opens one connection to the Pod's tunnel port: (the connection, what its end said when it failed)
Opener = Callable[[], tuple[Any, Callable[[], "str | None"]]]


class PodForwarder:
    """Opens port-forward connections through the API server to the run's running Pod."""

    def __init__(self, core: Any, namespace: str, job_name: str, port: int) -> None:
        from kubernetes import client

        # A client of its own: stream() swaps its client's call_api while it opens a connection.
        self._api = client.ApiClient(core.api_client.configuration)
        self._core: Any = client.CoreV1Api(self._api)
        self.namespace, self.job_name, self.port = namespace, job_name, port

    def __call__(self) -> tuple[Any, Callable[[], str | None]]:
        from kubernetes.stream import portforward

        from ssebench.jobs.backends import kube_api

        pods = kube_api.call(self._core.list_namespaced_pod, self.namespace, label_selector=f"job-name={self.job_name}")
        running = [p.metadata.name for p in pods.items if p.status.phase == "Running"]
        if not running:
            raise ConnectionError(f"the run's Pod (Job {self.job_name}) is not running")
        connect = self._core.connect_get_namespaced_pod_portforward
        forward = portforward(connect, running[0], self.namespace, ports=str(self.port))
        return forward.socket(self.port), lambda: forward.error(self.port)

    def close(self) -> None:
        self._api.close()


class PortForwards:
    """Idle connections to one Pod's tunnel port (OPEN makes one), refilled as the Pod takes
    them, each taken one carried to the gateway's GATEWAY_PORT here."""

    def __init__(self, open_one: Opener, gateway_port: int, folder: Path) -> None:
        self.open_one, self.gateway_port, self.folder = open_one, gateway_port, folder
        self._cond = threading.Condition()
        self._stopped = threading.Event()
        self._held = 0  # connections opened and not yet taken or ended
        self._failures = 0  # consecutive failed opens (the delay before the next)
        self._up = self._was_up = self._done = False
        self._why = ""  # the last failure's
        self._open: set[Any] = set()
        self._threads: list[threading.Thread] = []
        self._filler = threading.Thread(target=self._fill, name="ssebench-tunnel-fill", daemon=True)

    def start(self) -> PortForwards:
        self._filler.start()
        return self

    def close(self) -> None:
        """Stop opening, cut every connection (idle or carrying), wait for every thread."""
        with self._cond:
            self._stopped.set()
            self._cond.notify_all()
        self._filler.join(JOIN_TIMEOUT)
        with self._cond:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            threads = list(self._threads)
            never = not self._was_up and self._failures and not self._done
        for thread in threads:
            thread.join(JOIN_TIMEOUT)
        if never:
            self._log(f"the tunnel never came up: {self._why}")

    def _fill(self) -> None:
        while True:
            with self._cond:
                while not self._stopped.is_set() and (self._held >= POOL or self._done):
                    self._cond.wait()
                failures = self._failures
            delay = min(LONGEST_DELAY, FIRST_DELAY * 2 ** (failures - 1)) if failures else 0.0
            if self._stopped.wait(delay):
                return
            try:
                forward = self.open_one()
            except Exception as error:  # an API error, a refused handshake, a Pod not running yet
                self._failed(_one_line(error))
                continue
            thread = threading.Thread(target=self._carry, args=(forward,), name="ssebench-tunnel", daemon=True)
            with self._cond:
                if self._stopped.is_set():  # closed while it was opening: nothing may carry it now
                    forward[0].close()
                    return
                self._held += 1
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()

    def _carry(self, forward: tuple[Any, Callable[[], str | None]]) -> None:
        """One connection: HELLO out, READY in (the Pod's end is up), then GO (joined to an
        agent's: carry it to the gateway), BYE (the run's relay closed: no spare needed) or
        its end (broken). The protocol's why: ssebench/tunnel.py."""
        (sock, error), taken = forward, False
        with self._cond:
            self._open.add(sock)
        try:
            with contextlib.suppress(OSError):
                sock.sendall(HELLO)
            if _signal(sock) != READY:
                self._failed(_one_line(error() or "the Pod's relay is not listening"))
                return
            self._ready()
            signal = _signal(sock)
            self._release()
            taken = True
            if signal == GO:
                self._to_gateway(sock)
            elif signal == BYE:
                with self._cond:
                    self._done = True
            elif not self._stopped.is_set():
                self._failed(_one_line(error() or "the port-forward connection was closed"))
        finally:
            if not taken:
                self._release()
            with self._cond:
                self._open.discard(sock)
            sock.close()

    def _to_gateway(self, sock: Any) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.gateway_port), timeout=30)
        except OSError as error:
            self._log(f"the model gateway on 127.0.0.1:{self.gateway_port} refused a connection: {error}")
            return
        upstream.settimeout(None)
        with self._cond:
            self._open.add(upstream)
        try:
            relay.splice(sock, upstream)
        finally:
            with self._cond:
                self._open.discard(upstream)
            upstream.close()

    def _release(self) -> None:
        with self._cond:
            self._held -= 1
            self._cond.notify_all()

    def _ready(self) -> None:
        with self._cond:  # logged under the lock: the log's order is the state's
            self._failures = 0
            back = not self._up and self._was_up
            self._up = self._was_up = True
            if back:
                self._log("the tunnel is up again")

    def _failed(self, why: str) -> None:
        """A failed open. The second in a row while it was up is logged (not the first: at the
        run's end the Pod's relay stops listening just before its BYE arrives)."""
        with self._cond:
            self._failures += 1
            self._why = why
            down = self._up and self._failures >= 2 and not self._done and not self._stopped.is_set()
            if down:
                self._up = False
                self._log(f"the tunnel is down (the agent's model requests fail until it is up again): {why}")
            self._cond.notify_all()

    def _log(self, line: str) -> None:
        with open(self.folder / LOG_FILE, "a", encoding="utf-8") as log:
            log.write(f"{runrecord.now()} {line}\n")


def _signal(sock: Any) -> bytes:
    """The Pod's next one-byte signal; b"" when the connection ended."""
    try:
        return bytes(sock.recv(1))
    except OSError:
        return b""


def _one_line(error: object) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


API = "authorization.k8s.io/v1"
UNCHECKED = "whether the kubeconfig's user may port-forward to the runs' Pods (the model gateway's tunnels) is unknown"
NO_PORT_FORWARD = (
    "the model gateway's tunnels need port-forward to the runs' Pods, which the kubeconfig's user may not do "
    "in namespace {namespace} (RBAC: get and create on pods/portforward)"
)


def access_problems(api: Any, namespace: str) -> list[str]:
    """What the API server says the kubeconfig's user may not do that a tunnel needs: a
    port-forward is a GET upgraded to a websocket (verb ``get``; from 1.30 on also ``create``)."""
    from kubernetes import client

    from ssebench.jobs.backends import kube_api

    reviews = client.AuthorizationV1Api(api)
    for verb in ("get", "create"):
        attributes = {"namespace": namespace, "verb": verb, "resource": "pods", "subresource": "portforward"}
        review = {"kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": attributes}}
        try:
            answer: Any = kube_api.call(reviews.create_self_subject_access_review, {"apiVersion": API, **review})
        except Exception as error:  # the preflight says it in one line, with the others
            return [f"{UNCHECKED}: {_one_line(error)}"]
        if not answer.status.allowed:
            return [NO_PORT_FORWARD.format(namespace=namespace)]
    return []


@contextlib.contextmanager
def tunnelled(core: Any, namespace: str, job_name: str, env: Mapping[str, str], folder: Path) -> Iterator[None]:
    """The run's tunnel for the block when it goes through the gateway (ENV names its port)."""
    from ssebench.container.gatewayroute import PORT_VAR, TUNNEL_VAR

    if not env.get(TUNNEL_VAR):
        yield
        return
    forwarder = PodForwarder(core, namespace, job_name, int(env[TUNNEL_VAR]))
    forwards = PortForwards(forwarder, int(env[PORT_VAR]), folder).start()
    try:
        yield
    finally:
        forwards.close()
        forwarder.close()
