"""A job's model gateway, reached from a run's containers (docs/jobs.md, "The model gateway").

The gateway listens on the host's 127.0.0.1:``SSE_GATEWAY_PORT``. A container on the host's
network reaches it there; any other (``none``, a bridge) gets the run's own Unix socket
(``SSE_GATEWAY_SOCKET``, served by the Docker backend on the host) bind-mounted, and its
entrypoint listens on the container's own 127.0.0.1 at the same port, relaying to that socket:
the agent's variables (``http://127.0.0.1:PORT``) mean the same in the container as on the host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from ssebench import relay, settings

PORT_VAR, SOCKET_VAR = "SSE_GATEWAY_PORT", "SSE_GATEWAY_SOCKET"
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


@contextlib.contextmanager
def relayed_in_container(environ: Mapping[str, str] | None = None) -> Iterator[None]:
    """The entrypoint's relay, 127.0.0.1:SSE_GATEWAY_PORT → SSE_GATEWAY_SOCKET, for the block
    (nothing without a socket). SettingsError when the port is taken here."""
    port = settings.value(PORT_VAR, settings.port, None, environ)
    socket = settings.value(SOCKET_VAR, settings.socket_path, None, environ)
    if port is None or socket is None:
        yield
        return
    try:
        listener = relay.tcp_listener(port)
    except OSError as error:
        why = f"127.0.0.1:{port} is taken in this container ({error.strerror})"
        raise settings.SettingsError(f"{PORT_VAR}: the model gateway's relay cannot listen: {why}") from None
    with relay.relayed(listener, relay.to_unix(socket)):
        yield
