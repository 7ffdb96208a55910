"""The private copies a Docker run's containers work on; the user's folders stay as they are.

Its own module so that docker.py (which makes it) and sidecar.py (which mounts it) both
depend on it and not on each other.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ssebench.socketdirs import private_socket_dir

SOCKETS = "sockets"  # the folder shared by the sidecar and the agent's container
DAEMON_SOCKET = "daemon.sock"  # the sidecar daemon's socket in it


@dataclass(frozen=True)
class TaskCopies:
    task: Path  # a full copy of the task folder (hidden parts included)
    tree: Path  # a copy of the task's source: the agent's tree in sidecar mode
    sockets: Path  # shared by the sidecar (daemon socket) and the agent container
    results: Path  # the one-container layout's /results, copied to the user's folder after


@contextmanager
def workspace(task_dir: Path, source: Path) -> Iterator[TaskCopies]:
    """Private copies for the containers to change, removed afterwards."""
    # 0700, ours alone; in /tmp when TMPDIR is too deep for the host to reach the sidecar's socket
    holder = private_socket_dir("ssebench-task-", f"{SOCKETS}/{DAEMON_SOCKET}")
    try:
        space = TaskCopies(
            task=holder / "task", tree=holder / "tree", sockets=holder / SOCKETS, results=holder / "results"
        )
        shutil.copytree(task_dir, space.task, symlinks=True)
        shutil.copytree(source, space.tree, symlinks=True)
        space.sockets.mkdir(mode=0o700)
        space.results.mkdir(mode=0o700)
        yield space
    finally:
        shutil.rmtree(holder, ignore_errors=True)
