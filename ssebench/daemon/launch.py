"""What one sandboxed invocation sees and needs (sandbox.py): the check's tree as a
:class:`TreeView`, where a PoC appears, and the fds and uid of one launch."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

TREE_PATH = "/sse/tree"
TASK_PATH = "/sse/task"


@dataclass(frozen=True)
class TreeView:
    """How a check's tree appears at :data:`TREE_PATH`.

    ``TreeView.bind(dir)``: *dir* bound read-write. ``TreeView.overlay(lower, upper,
    work)``: a copy-on-write overlay; *lower* is only read, writes go to *upper* (both
    *upper* and *work* empty daemon-owned folders on the same non-overlay filesystem;
    they may be reused by several invocations of one check and are discarded after it).
    """

    lower: Path
    upper: Path | None = None
    work: Path | None = None
    read_only: bool = False  # a bind the sandbox cannot write (the daemon's own git reads)

    @classmethod
    def bind(cls, path: Path) -> TreeView:
        return cls(Path(path))

    @classmethod
    def overlay(cls, lower: Path, upper: Path, work: Path) -> TreeView:
        return cls(Path(lower), Path(upper), Path(work))

    @property
    def is_overlay(self) -> bool:
        return self.upper is not None


def poc_path(task_dir: Path, poc: Path) -> str:
    """Where a PoC file appears in the sandbox: at its place under ``SSE_TASK_DIR`` when it
    lies in the task folder, else under ``SSE_TASK_DIR/.poc/`` by its name."""
    try:
        rel = PurePosixPath(os.path.relpath(poc, task_dir))
    except ValueError:
        rel = PurePosixPath("..")
    if rel.parts and rel.parts[0] == "..":
        rel = PurePosixPath(".poc") / poc.name
    return str(PurePosixPath(TASK_PATH) / rel)


@dataclass
class LaunchFds:
    """What starting one sandboxed process needs besides its argv: the fds bwrap reads
    (the seccomp program, the files of this invocation when checks run as another uid)
    and the host uid/gid it runs as. Fresh per process (bwrap reads each fd to its end);
    close it once the process is started."""

    seccomp_fd: int | None = None
    file_fds: dict[str, int] = field(default_factory=dict)
    user: tuple[int, int] | None = None

    @property
    def pass_fds(self) -> tuple[int, ...]:
        fds = list(self.file_fds.values())
        return tuple(fds + ([self.seccomp_fd] if self.seccomp_fd is not None else []))

    def close(self) -> None:
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.seccomp_fd = None
        self.file_fds = {}
