"""ssebench/relay.py and the gateway's route into a container (ssebench/container/gatewayroute.py),
with real sockets: a TCP echo server behind the two relays a Docker run's model requests take
(the container's 127.0.0.1 → the run's Unix socket → the gateway's 127.0.0.1 port)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssebench import relay
from ssebench.container import gatewayroute
from ssebench.settings import SettingsError


@contextlib.contextmanager
def echo_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that sends back what it got, then ends its side at the client's end."""
    server = relay.tcp_listener(0)
    port = server.getsockname()[1]

    def serve(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)
            conn.shutdown(socket.SHUT_WR)

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        server.shutdown(socket.SHUT_RDWR)
        server.close()
        thread.join(timeout=10)


@contextlib.contextmanager
def two_relays(folder: Path, upstream: int) -> Iterator[int]:
    """The path of a Docker run's request: a TCP port relayed to a Unix socket relayed to UPSTREAM."""
    path = folder / "gateway.sock"
    with relay.relayed(relay.unix_listener(path), relay.to_tcp(upstream)):
        front = relay.tcp_listener(0)
        port = front.getsockname()[1]
        with relay.relayed(front, relay.to_unix(path)):
            yield port


def exchange(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
        client.sendall(payload)
        client.shutdown(socket.SHUT_WR)  # the end of the request reaches the server
        got = b""
        while chunk := client.recv(65536):
            got += chunk
    return got


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.binary(min_size=0, max_size=300_000))
def test_bytes_pass_both_ways_unchanged_and_the_ends_too(
    tmp_path_factory: pytest.TempPathFactory, payload: bytes
) -> None:
    folder = tmp_path_factory.mktemp("relay")
    with echo_server() as upstream, two_relays(folder, upstream) as port:
        assert exchange(port, payload) == payload


def test_parallel_connections_each_get_their_own_answer(tmp_path: Path) -> None:
    results: dict[int, bytes] = {}
    with echo_server() as upstream, two_relays(tmp_path, upstream) as port:

        def one(i: int) -> None:
            results[i] = exchange(port, f"request {i}\n".encode() * 1000)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert results == {i: f"request {i}\n".encode() * 1000 for i in range(8)}


def test_a_closed_relay_cuts_its_connections_and_leaves_no_thread(tmp_path: Path) -> None:
    with echo_server() as upstream:
        listener = relay.tcp_listener(0)
        port = listener.getsockname()[1]
        live = relay.Relay(listener, relay.to_tcp(upstream)).start()
        client = socket.create_connection(("127.0.0.1", port), timeout=30)
        client.sendall(b"ping")
        assert client.recv(4) == b"ping"
        live.close()
        assert client.recv(4) == b""  # cut: the client sees the end
        client.close()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5)
    assert [t.name for t in threading.enumerate() if t.name.startswith("ssebench-relay")] == []


def test_a_client_whose_upstream_is_gone_sees_its_connection_end(tmp_path: Path) -> None:
    with relay.relayed(relay.unix_listener(tmp_path / "s.sock"), relay.to_tcp(_free_port())):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(30)
            client.connect(str(tmp_path / "s.sock"))
            assert client.recv(1) == b""


def test_the_socket_is_connectable_by_any_user_its_folder_lets_in(tmp_path: Path) -> None:
    with relay.relayed(relay.unix_listener(tmp_path / "s.sock"), relay.to_tcp(_free_port())):
        assert (tmp_path / "s.sock").stat().st_mode & 0o777 == 0o666


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_what_ssebench_run_docker_gives_the_agents_container(tmp_path: Path) -> None:
    sock = tmp_path / "gateway.sock"
    env = {
        "SSE_GATEWAY_PORT": "40123",
        "SSE_GATEWAY_SOCKET": str(sock),
        "OPENAI_BASE_URL": "http://127.0.0.1:40123/v1",
        "OPENAI_API_KEY": "sk-ssebench-run",
        "HOME": "/root",
    }
    assert gatewayroute.for_containers(env, custom=True) == (
        {
            "SSE_GATEWAY_PORT": "40123",
            "OPENAI_BASE_URL": "http://127.0.0.1:40123/v1",
            "OPENAI_API_KEY": "sk-ssebench-run",
            "SSE_GATEWAY_SOCKET": "/run/ssebench-gateway.sock",
        },
        {sock: "/run/ssebench-gateway.sock"},
    )
    # a bundled agent's recipe passes its own variables on; on the host's network, no socket
    no_socket = {k: v for k, v in env.items() if k != "SSE_GATEWAY_SOCKET"}
    assert gatewayroute.for_containers(no_socket, custom=False) == ({"SSE_GATEWAY_PORT": "40123"}, {})
    assert gatewayroute.for_containers({"HOME": "/root"}, custom=True) == ({}, {})


def test_the_entrypoint_names_a_taken_port(tmp_path: Path) -> None:
    taken = relay.tcp_listener(0)
    port = taken.getsockname()[1]
    env = {"SSE_GATEWAY_PORT": str(port), "SSE_GATEWAY_SOCKET": str(tmp_path / "gateway.sock")}
    with taken, pytest.raises(SettingsError) as raised, gatewayroute.relayed_in_container(env):
        pass
    assert str(raised.value) == (
        f"SSE_GATEWAY_PORT: the model gateway's relay cannot listen: 127.0.0.1:{port} is taken in this container "
        "(Address already in use)"
    )


def test_the_entrypoint_relays_the_port_to_the_socket(tmp_path: Path) -> None:
    port = _free_port()
    env = {"SSE_GATEWAY_PORT": str(port), "SSE_GATEWAY_SOCKET": str(tmp_path / "gateway.sock")}
    with echo_server() as upstream:
        with relay.relayed(relay.unix_listener(tmp_path / "gateway.sock"), relay.to_tcp(upstream)):
            with gatewayroute.relayed_in_container(env):
                assert exchange(port, b"POST /v1/chat/completions") == b"POST /v1/chat/completions"
