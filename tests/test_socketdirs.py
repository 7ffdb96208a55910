"""A socket's private folder under a deep TMPDIR (ssebench/socketdirs.py): the entrypoint's
workdir and a Docker run's shared socket folder both fall back to /tmp by one rule, and a
path that cannot be a socket is refused at once with its length, not after a timeout."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssebench.container.workspace import DAEMON_SOCKET, workspace
from ssebench.socketdirs import UNIX_SOCKET_MAX_BYTES, private_socket_dir
from ssebench.supervise import StartupError, wait_for_daemon
from tests.helpers.daemon import short_tempdir


@pytest.fixture
def tmpdir_at(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """Sets TMPDIR (as a user would) to a real folder whose path is *length* bytes long."""
    base = short_tempdir()

    def at(length: int) -> Path:
        room = length - len(os.fsencode(base)) - 1
        assert room > 0, f"{base} is already longer than {length} bytes"
        parts = [("d" * 60)[: min(60, room - i * 61)] for i in range((room + 60) // 61)]
        deep = base.joinpath(*[p for p in parts if p])
        deep.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv("TMPDIR", str(deep))
        monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
        return deep

    yield at


def bindable(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.bind(str(path))
        except OSError:
            return False
    path.unlink()
    return True


def test_a_shallow_tmpdir_is_used(tmpdir_at) -> None:
    deep = tmpdir_at(40)
    folder = private_socket_dir("ssebench-entry-", "daemon.sock")
    try:
        assert folder.parent == deep and folder.name.startswith("ssebench-entry-")
        assert folder.stat().st_mode & 0o777 == 0o700
        assert bindable(folder / "daemon.sock")
    finally:
        folder.rmdir()


def test_a_deep_tmpdir_moves_the_folder_to_tmp(tmpdir_at) -> None:
    deep = tmpdir_at(100)
    assert not bindable(deep / "daemon.sock")  # what the fallback is for: this TMPDIR cannot hold it
    folder = private_socket_dir("ssebench-entry-", "daemon.sock")
    try:
        assert folder.parent == Path("/tmp") and folder.stat().st_mode & 0o777 == 0o700
        assert bindable(folder / "daemon.sock")
        assert list(deep.iterdir()) == []  # nothing left in TMPDIR
    finally:
        folder.rmdir()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.integers(min_value=0, max_value=100), tail=st.sampled_from(["daemon.sock", "sockets/daemon.sock"]))
def test_the_socket_always_fits_and_tmpdir_is_kept_when_it_can_be(tmpdir_at, extra: int, tail: str) -> None:
    deep = tmpdir_at(30 + extra)
    folder = private_socket_dir("ssebench-x-", tail)
    try:
        in_tmpdir = folder.parent == deep
        fits_there = len(os.fsencode(deep / "ssebench-x-12345678" / tail)) <= UNIX_SOCKET_MAX_BYTES
        assert len(os.fsencode(folder / tail)) <= UNIX_SOCKET_MAX_BYTES
        assert in_tmpdir == fits_there and (in_tmpdir or folder.parent == Path("/tmp"))
    finally:
        shutil.rmtree(folder)


def test_a_docker_runs_socket_folder_under_a_deep_tmpdir_holds_a_socket(tmpdir_at, task_factory) -> None:
    """What the host connects to in the sidecar layout (the bug: a deep TMPDIR put it past
    107 bytes and the run failed after 120 s)."""
    task = task_factory(build="true")
    deep = tmpdir_at(100)
    with workspace(task.dir, task.tree) as space:
        holder = space.sockets.parent
        assert holder.parent == Path("/tmp") and holder.name.startswith("ssebench-task-")
        assert bindable(space.sockets / DAEMON_SOCKET)
        assert (space.tree.is_dir(), space.task.is_dir(), space.results.is_dir()) == (True, True, True)
    assert not holder.exists() and list(deep.iterdir()) == []


def test_a_socket_path_too_long_fails_at_once_naming_it(tmp_path: Path) -> None:
    sock = tmp_path / ("s" * 120) / "daemon.sock"
    length = len(os.fsencode(sock))
    began = time.monotonic()
    with pytest.raises(StartupError) as caught:
        wait_for_daemon(sock, what="the daemon's container", where="on its socket", timeout=120)
    assert time.monotonic() - began < 1
    assert str(caught.value) == (
        f"the daemon's container cannot be reached: its socket's path {sock} is {length} bytes long, "
        "over the 107-byte limit of Unix sockets (set TMPDIR to a shorter folder)"
    )
