"""A job's model gateway, reached from a run's containers (docs/jobs.md, "The model gateway").

The gateway listens on the host's 127.0.0.1:``SSE_GATEWAY_PORT``. A container on the host's
network reaches it there; any other (``none``, a bridge) gets the run's own Unix socket
(``SSE_GATEWAY_SOCKET``, served by the Docker backend on the host) bind-mounted, and its
entrypoint listens on the container's own 127.0.0.1 at the same port, relaying to that socket:
the agent's variables (``http://127.0.0.1:PORT``) mean the same in the container as on the host.
A Kubernetes Pod gets ``SSE_GATEWAY_TUNNEL_PORT`` instead of a socket: the same listener, each
connection joined to one the backend opened to that port through the API server (ssebench/tunnel.py).
"""

from __future__ import annotations

import contextlib
import socket as _socket
from collections.abc import Iterator, Mapping
from pathlib import Path

from ssebench import relay, settings
from ssebench import tunnel as tunnels

PORT_VAR, SOCKET_VAR, TUNNEL_VAR = "SSE_GATEWAY_PORT", "SSE_GATEWAY_SOCKET", "SSE_GATEWAY_TUNNEL_PORT"
TUNNEL_PORTS = (47161, 47162)  # a Pod's tunnel port: the first that is not the gateway's
#: a custom command agent gets both vendors' usual variables (its program picks what it reads);
#: here, beside the other gateway names, so the jobs' gateway and the container share them
COMMAND_VARS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
CONTAINER_SOCKET = "/run/ssebench-gateway.sock"  # where the run's socket is mounted in the agent's container


def for_containers(env: Mapping[str, str], custom: bool) -> tuple[dict[str, str], dict[Path, str]]:
    """The agent container's variables and mounts for ``ssebench run --docker`` (ENV: its own
    environment): the port, the socket's container path and mount; for a custom command also
    the variables that point it at the gateway (a bundled agent's recipe passes its own on)."""
    port = settings.value(PORT_VAR, settings.port, None, env)
    if port is None:
        return {}, {}
    added = {PORT_VAR: str(port)}
    if custom:
        added.update({name: env[name] for name in COMMAND_VARS if name in env})
    socket = settings.value(SOCKET_VAR, settings.socket_path, None, env)
    if socket is None:
        return added, {}
    return {**added, SOCKET_VAR: CONTAINER_SOCKET}, {socket: CONTAINER_SOCKET}


def tunnel_port(gateway_port: int) -> int:
    """The Pod's loopback port the backend's tunnel connections come to (not the gateway's)."""
    return next(port for port in TUNNEL_PORTS if port != gateway_port)


@contextlib.contextmanager
def relayed_in_container(environ: Mapping[str, str] | None = None) -> Iterator[None]:
    """The entrypoint's relay, 127.0.0.1:SSE_GATEWAY_PORT → SSE_GATEWAY_SOCKET (Docker) or the
    backend's tunnel connections on SSE_GATEWAY_TUNNEL_PORT (Kubernetes), for the block
    (nothing without either). SettingsError when a port is taken here."""
    port = settings.value(PORT_VAR, settings.port, None, environ)
    socket = settings.value(SOCKET_VAR, settings.socket_path, None, environ)
    tunnel = settings.value(TUNNEL_VAR, settings.port, None, environ)
    if port is None or (socket is None and tunnel is None):
        yield
        return
    listeners = _listen(port, tunnel)
    if tunnel is not None:
        with tunnels.reversed_relay(*listeners):
            yield
        return
    assert socket is not None
    with relay.relayed(listeners[0], relay.to_unix(socket)):
        yield


def _listen(port: int, tunnel: int | None) -> list[_socket.socket]:
    """The agents' listener (and the tunnel's); SettingsError naming the port that is taken."""
    listeners: list[_socket.socket] = []
    for wanted in (port,) if tunnel is None else (port, tunnel):
        try:
            listeners.append(relay.tcp_listener(wanted))
        except OSError as error:
            for listener in listeners:
                listener.close()
            why = f"127.0.0.1:{wanted} is taken in this container ({error.strerror})"
            name = PORT_VAR if wanted == port else TUNNEL_VAR
            raise settings.SettingsError(f"{name}: the model gateway's relay cannot listen: {why}") from None
    return listeners
