"""The private copies a Docker run's containers work on; the user's folders stay as they are.

Its own module so that docker.py (which makes it) and sidecar.py (which mounts it) both
depend on it and not on each other.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Workspace:
    task: Path  # a full copy of the task folder (hidden parts included)
    tree: Path  # a copy of the task's source: the agent's tree in sidecar mode
    sockets: Path  # shared by the sidecar (daemon socket) and the agent container
    results: Path  # the one-container layout's /results, copied to the user's folder after


@contextmanager
def workspace(task_dir: Path, source: Path) -> Iterator[Workspace]:
    """Private copies for the containers to change, removed afterwards."""
    holder = Path(tempfile.mkdtemp(prefix="ssebench-task-"))  # 0700, ours alone
    try:
        space = Workspace(
            task=holder / "task", tree=holder / "tree", sockets=holder / "sockets", results=holder / "results"
        )
        shutil.copytree(task_dir, space.task, symlinks=True)
        shutil.copytree(source, space.tree, symlinks=True)
        space.sockets.mkdir(mode=0o700)
        space.results.mkdir(mode=0o700)
        yield space
    finally:
        shutil.rmtree(holder, ignore_errors=True)
