"""Files of the given folders, and nothing else: no ``..``, no symlink out, no special file.

A path is resolved (``realpath``) and must stay inside its root; the last component is
then opened with ``O_NOFOLLOW`` and checked to be a regular file or a folder on the open
descriptor, so a symlink swapped in after the check is not followed either.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from ssebench import runrecord

CHUNK = 64 << 10
SMALL_LIMIT = 64 << 20  # a record or job.json larger than this is not one we wrote
#: the files of a run folder an exported site may hold (``ssebench view --export``): the
#: record, the dialog, the logs, the call texts; never the agent's HOME (its keys and
#: configuration), install.log (what was written there), the tree, a dot-file, or a job's
#: job.json (its stored job holds the agents' environments; the job page shows the rest)
EXPORTED_FILES = frozenset(
    {
        runrecord.RESULTS_FILE,
        "dialog.jsonl",
        "agent-stdout.log",
        "agent-stderr.log",
        "daemon.log",
        "server.log",
        "grading.json",
        "grading.log",
        "container.log",
        "ssebench-run.log",
    }
)
NEVER_EXPORTED = frozenset({"home", "tree", "tries", "node_modules"})


@dataclass
class FileEntry:
    name: str
    rel: str
    folder: bool
    size: int


def exportable(rel: str, folder: bool) -> bool:
    """Whether the entry REL (a file, or a FOLDER) may be in an exported site."""
    parts = PurePosixPath(rel).parts
    if any(part.startswith(".") or part in NEVER_EXPORTED for part in parts):
        return False
    if folder or not parts:
        return True
    name = parts[-1]
    in_calls = len(parts) > 1 and parts[-2] == "calls" and name.endswith(".txt") and name[:-4].isdigit()
    return name in EXPORTED_FILES or in_calls


def resolve(root: Path, rel: str) -> Path | None:
    """ROOT/REL if it stays inside ROOT once every symlink is resolved, else None."""
    parts = PurePosixPath(rel).parts
    if any(part in ("..", "") or "\0" in part for part in parts) or rel.startswith("/"):
        return None
    path = Path(os.path.realpath(root.joinpath(*parts)))
    if path != root and root not in path.parents:
        return None
    return path


def open_file(root: Path, rel: str) -> tuple[int, int] | None:
    """``(fd, size)`` of the regular file ROOT/REL, or None (missing, outside, not a file)."""
    path = resolve(root, rel)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st.st_size


def chunks(fd: int, size: int) -> Iterator[bytes]:
    """The file's first SIZE bytes in chunks (what Content-Length promised, even if the file
    grows meanwhile, as a live dialog does); blocking reads: Starlette iterates in a thread."""
    with os.fdopen(fd, "rb") as stream:
        while size > 0 and (chunk := stream.read(min(CHUNK, size))):
            size -= len(chunk)
            yield chunk


def listing(root: Path, rel: str, only_exportable: bool = False) -> list[FileEntry] | None:
    """The entries of the folder ROOT/REL (folders first), or None if it is not one inside ROOT
    (ONLY_EXPORTABLE: only what an exported site may hold)."""
    path = resolve(root, rel)
    if path is None or not path.is_dir():
        return None
    entries = []
    base = path.relative_to(root).as_posix() if path != root else ""
    for entry in os.scandir(path):
        if entry.name.startswith(".ssebench-view"):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode) or not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            continue
        found = FileEntry(entry.name, f"{base}/{entry.name}".lstrip("/"), stat.S_ISDIR(st.st_mode), st.st_size)
        if not only_exportable or exportable(found.rel, found.folder):
            entries.append(found)
    return sorted(entries, key=lambda e: (not e.folder, e.name))


def read_small(path: Path, limit: int = SMALL_LIMIT) -> bytes | None:
    """The bytes of a regular file, opened without following a symlink; None when absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{path.name} is larger than {limit >> 20} MiB")
    return data


def open_nofollow(path: Path) -> BinaryIO:
    """PATH opened for reading, never through a symlink (OSError for one), regular files only."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path.name} is not a regular file")
    return os.fdopen(fd, "rb")


def read_json(path: Path, problems: list[str]) -> Any:
    """The JSON in PATH (job.json), or None with a named problem (missing files are no problem)."""
    try:
        data = read_small(path)
    except OSError as exc:
        problems.append(f"{path.name}: cannot be read ({exc.strerror or exc})")
        return None
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8", errors="replace"))
    except ValueError as exc:
        problems.append(f"{path.name}: not valid JSON ({exc}); half-written?")
        return None
