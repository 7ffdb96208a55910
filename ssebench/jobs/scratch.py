"""A job's temporary folder: each try of a run gets its own ``TMPDIR`` under it.

Why: a run's processes make temporary folders (the entrypoint's, the daemon's workspace,
grading's ``ssebench-grade-*``, a Docker run's task copies) and remove them when they stop
normally. A run killed at once (a second Ctrl-C, SIGKILL) cannot; with every such folder
under the try's own ``TMPDIR``, the jobs layer removes them all by removing one folder: after
each try, at the end of ``jobs run``/``resume``, and on ``resume`` for what a killed
``ssebench jobs`` left (the folder's name carries the job's id). The folders are 0711:
the daemon's checks run as another user (uid 65534 when the daemon is root) and must
traverse them to reach their workspace; nobody else can list them.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import threading
from pathlib import Path

from ssebench.parsers import UNIX_SOCKET_MAX_BYTES

PREFIX = "ssebench-j"
MODE = 0o711
#: what a run puts under its TMPDIR on the way to a Unix socket (the entrypoint's private
#: folder and the daemon's socket): a try's folder leaves room for it, else the run keeps
#: the TMPDIR it would have had (and a second Ctrl-C's cleanup loses only that run's files)
SOCKET_TAIL = len("/ssebench-entry-xxxxxxxx/daemon.sock") + 16


def tag(job_id: str) -> str:
    """The part of a job id in its scratch folder's name (the id's random suffix)."""
    return job_id.rsplit("-", 1)[-1][:8]


class Scratch:
    """The job's temporary folder for this invocation, and one folder per try in it."""

    def __init__(self, job_id: str) -> None:
        self.root = Path(tempfile.gettempdir()) / f"{PREFIX}{tag(job_id)}"  # short: sockets live under it
        self.root.mkdir(MODE, exist_ok=True)  # one invocation per job at a time; a killed one's was swept
        self.root.chmod(MODE)
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def for_try(self) -> Path | None:
        """A new empty folder for one try; None when its path would leave no room for a socket."""
        with self._lock:
            path = self.root / str(next(self._numbers))
        if len(str(path).encode()) + SOCKET_TAIL > UNIX_SOCKET_MAX_BYTES:
            return None
        path.mkdir(MODE)
        path.chmod(MODE)  # whatever the umask
        return path

    @staticmethod
    def remove(path: Path | None) -> None:
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def sweep(job_id: str) -> None:
    """Remove what earlier invocations of the job left (a killed ``ssebench jobs``)."""
    shutil.rmtree(Path(tempfile.gettempdir()) / f"{PREFIX}{tag(job_id)}", ignore_errors=True)
