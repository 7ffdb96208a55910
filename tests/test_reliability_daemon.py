"""Reliability of the daemon under faults (issue 11): oversized requests, a full disk,
``kill -9`` during a check, workspaces of dead daemons. Real daemon processes, real
sockets, a real small tmpfs where a full disk is needed."""

from __future__ import annotations

import socket
import time

import psutil
import pytest

pytestmark = pytest.mark.timeout(120)

MiB = 1024 * 1024


def rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


def raw_post(sock_path: str, total: int, *, chunked: bool) -> bytes:
    """POST /runs with a *total*-byte body sent in 1 MiB pieces (never held whole here)."""
    head = "POST /runs HTTP/1.1\r\nHost: daemon\r\nContent-Type: application/json\r\n"
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else f"Content-Length: {total}\r\n\r\n"
    piece = b" " * MiB
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock_path)
    try:
        s.sendall(head.encode())
        sent = 0
        try:
            while sent < total:
                data = piece[: min(MiB, total - sent)]
                s.sendall(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
                sent += len(data)
            if chunked:
                s.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon answered 413 and closed: what we want
        reply = b""
        try:
            while chunk := s.recv(65536):
                reply += chunk
                if b"\r\n\r\n" in reply and b"}" in reply:
                    break
        except (ConnectionResetError, TimeoutError):
            pass
        return reply
    finally:
        s.close()


# -- item 3: a huge POST costs no memory -------------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_200_mb_post_is_refused_without_reading_it(task_factory, daemon_factory, chunked):
    t = task_factory()
    d = daemon_factory(t.file)
    assert d.get("/health").status_code == 200
    before = rss(d.proc.pid)
    reply = raw_post(str(d.socket), 200 * MiB, chunked=chunked)
    after = rss(d.proc.pid)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b'{"error":"request body too large"}' in reply
    assert after - before < 20 * MiB, f"RSS grew by {(after - before) / MiB:.1f} MiB"
    # The daemon still serves: a normal run works right after.
    assert d.result()["build"]["state"] == "passed"
