"""A Kubernetes run's way to the model gateway, with real sockets and no cluster: the Pod's
relay (ssebench/tunnel.py, started by the entrypoint as gatewayroute.relayed_in_container does)
and the backend's pool (ssebench/jobs/backends/kube_tunnel.py) opening its connections as plain
TCP ones where the cluster's port-forward would (the e2e test in tests/e2e/test_kubernetes.py
takes the API server's path). The Pod's loopback and this machine's are one here, so the
agents' port and the gateway's differ."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssebench import relay, tunnel
from ssebench.container import gatewayroute
from ssebench.jobs.backends import kube_tunnel
from ssebench.settings import SettingsError
from tests.test_relay import _free_port, echo_server, exchange


def tcp_opener(port: int) -> kube_tunnel.Opener:
    """What the port-forward gives the pool, as a plain connection to PORT."""

    def open_one() -> tuple[Any, Callable[[], str | None]]:
        return socket.create_connection(("127.0.0.1", port), timeout=5), lambda: None

    return open_one


@contextlib.contextmanager
def tunnelled(folder: Path, gateway: int) -> Iterator[int]:
    """The Pod's relay (entrypoint) and the backend's pool for the block: the agents' port."""
    port, tunnel_port = _free_port(), _free_port()
    env = {gatewayroute.PORT_VAR: str(port), gatewayroute.TUNNEL_VAR: str(tunnel_port)}
    with gatewayroute.relayed_in_container(env):
        forwards = kube_tunnel.PortForwards(tcp_opener(tunnel_port), gateway, folder).start()
        try:
            yield port
        finally:
            forwards.close()


def _ours() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(("ssebench-relay", "ssebench-tunnel"))]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.binary(min_size=0, max_size=300_000))
def test_bytes_pass_both_ways_through_the_tunnel(tmp_path_factory: pytest.TempPathFactory, payload: bytes) -> None:
    folder = tmp_path_factory.mktemp("tunnel")
    with echo_server() as gateway, tunnelled(folder, gateway) as port:
        assert exchange(port, payload) == payload
    assert list(folder.iterdir()) == []  # a healthy run has no gateway-tunnel.log


def test_more_connections_at_once_than_idle_tunnels_each_get_their_answer(tmp_path: Path) -> None:
    results: dict[int, bytes] = {}
    with echo_server() as gateway, tunnelled(tmp_path, gateway) as port:

        def one(i: int) -> None:
            results[i] = exchange(port, f"request {i}\n".encode() * 1000)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(3 * kube_tunnel.POOL)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert results == {i: f"request {i}\n".encode() * 1000 for i in range(3 * kube_tunnel.POOL)}
    assert _ours() == []  # every thread of both ends is gone
    assert list(tmp_path.iterdir()) == []


def test_without_a_tunnel_the_agents_connection_ends_and_the_pod_log_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    agents, tunnels = relay.tcp_listener(0), relay.tcp_listener(0)
    port = agents.getsockname()[1]
    dock = tunnel.TunnelDock(tunnels, wait=0.5).start()
    with relay.relayed(agents, dock.take):
        began = time.monotonic()
        with pytest.raises(ConnectionResetError):  # to the agent: a network error
            exchange(port, b"POST /v1/chat/completions")
        assert time.monotonic() - began >= 0.5
    dock.close()
    assert capsys.readouterr().err == (
        "ssebench entrypoint: model gateway: no connection from ssebench jobs came within 0.5 s (the run's tunnel "
        "through the Kubernetes API server is down: gateway-tunnel.log in the run's folder says why): the agent's "
        "request failed\n"
    )


def _wait(condition: Callable[[], bool], within: float = 30) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_tunnel_that_breaks_is_logged_in_the_run_folder_and_comes_back(tmp_path: Path) -> None:
    """The Pod's relay gone without a BYE (the Pod lost), then back: both in gateway-tunnel.log."""
    port, tunnel_port = _free_port(), _free_port()
    log = tmp_path / kube_tunnel.LOG_FILE
    with echo_server() as gateway:
        forwards = kube_tunnel.PortForwards(tcp_opener(tunnel_port), gateway, tmp_path).start()
        try:
            agents, tunnels = relay.tcp_listener(port), relay.tcp_listener(tunnel_port)
            idle: list[socket.socket] = []
            tunnels.settimeout(30)
            for _ in range(kube_tunnel.POOL):
                conn, _ = tunnels.accept()
                assert conn.recv(1) == tunnel.HELLO
                conn.sendall(tunnel.READY)
                idle.append(conn)
            for conn in idle:  # the Pod's end goes away without a word
                conn.close()
            tunnels.close()
            agents.close()
            _wait(log.exists)
            with gatewayroute.relayed_in_container(
                {gatewayroute.PORT_VAR: str(port), gatewayroute.TUNNEL_VAR: str(tunnel_port)}
            ):
                assert exchange(port, b"back") == b"back"
                _wait(lambda: "up again" in log.read_text())
        finally:
            forwards.close()
    lines = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    assert lines[0].startswith("the tunnel is down (the agent's model requests fail until it is up again): ")
    assert lines[1:] == ["the tunnel is up again"]


def test_a_tunnel_that_never_comes_up_says_so_at_the_end(tmp_path: Path) -> None:
    def refused() -> tuple[Any, Callable[[], str | None]]:
        raise ConnectionError("the run's Pod (Job sse-x) is not running")

    kube_tunnel.PortForwards(refused, _free_port(), tmp_path).start().close()
    line = (tmp_path / kube_tunnel.LOG_FILE).read_text()
    assert line.split(" ", 1)[1] == "the tunnel never came up: the run's Pod (Job sse-x) is not running\n"


def test_the_entrypoint_names_a_taken_tunnel_port() -> None:
    taken = relay.tcp_listener(0)
    tunnel_port = taken.getsockname()[1]
    env = {gatewayroute.PORT_VAR: str(_free_port()), gatewayroute.TUNNEL_VAR: str(tunnel_port)}
    with taken, pytest.raises(SettingsError) as raised, gatewayroute.relayed_in_container(env):
        pass
    assert str(raised.value) == (
        f"SSE_GATEWAY_TUNNEL_PORT: the model gateway's relay cannot listen: 127.0.0.1:{tunnel_port} is taken in "
        "this container (Address already in use)"
    )


def test_a_pods_tunnel_port_is_never_the_gateways() -> None:
    assert gatewayroute.tunnel_port(8000) == 47161
    assert gatewayroute.tunnel_port(47161) == 47162
