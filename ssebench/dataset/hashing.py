"""Content hashes of a task: every file of its folder and of its source tree, and its fix.

One entry per file, by its path (POSIX, relative to the folder it was found in):
``sha256:<hex>`` for a file, the same plus `` x`` for an executable one (a script whose
mode changed runs differently), ``symlink:<target>`` for a symlink. ``.git`` folders
are left out (a commit changes them, not the task), and so is a ``ssebench.lock`` at
the top of a task folder (a lock written into a single task's folder). Folders count
only through their entries; FIFOs, sockets and devices are left out, as the daemon's
snapshot leaves them out. The task's hash is one sha256 over all of it, so two tasks
with the same bytes have the same hash wherever they lie.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ssebench.task import Task

LOCK_NAME = "ssebench.lock"
CHUNK = 1 << 20


def file_entry(path: Path) -> str | None:
    """The entry of one path (see the module docstring); None for what is left out."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "symlink:" + os.readlink(path)
    if not stat.S_ISREG(st.st_mode):
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest() + (" x" if st.st_mode & 0o111 else "")


def _walk(root: Path, skip: Path | None) -> Iterator[Path]:
    """Every path under *root* that may hold an entry, never through a symlinked folder."""
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        keep = []
        for name in dirs:
            sub = here / name
            if name == ".git" or (skip is not None and sub == skip):
                continue
            if sub.is_symlink():
                yield sub
            else:
                keep.append(name)
        dirs[:] = sorted(keep)
        for name in sorted(files):
            if here == root and name == LOCK_NAME:
                continue
            yield here / name


def folder_entries(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every entry under *root* (without *skip*, a folder inside it), by relative path."""
    out: dict[str, str] = {}
    for path in _walk(root, skip):
        entry = file_entry(path)
        if entry is not None:
            out[path.relative_to(root).as_posix()] = entry
    return dict(sorted(out.items()))


def task_entries(task: Task) -> tuple[dict[str, str], dict[str, str] | None]:
    """The task folder's entries, and the source tree's when it lies outside the folder
    (else None: its files are among the folder's)."""
    folder = task.dir.resolve()
    source = task.source.resolve()
    if source.is_relative_to(folder):
        return folder_entries(folder), None
    return folder_entries(folder), folder_entries(source)


def combine(files: dict[str, str], source_files: dict[str, str] | None, fix: str | None) -> str:
    """One hash over a task's entries and its fix's entry."""
    digest = hashlib.sha256()
    for part, entries in (("folder", files), ("source", source_files or {})):
        for rel, entry in entries.items():
            digest.update(f"{part}\0{rel}\0{entry}\n".encode("utf-8", "surrogateescape"))
    digest.update(f"fix\0{fix or ''}\n".encode())
    return "sha256:" + digest.hexdigest()


def task_hash(task: Task, fix: Path | None = None) -> str:
    """The content hash of *task* (and of *fix*, when given)."""
    files, source_files = task_entries(task)
    return combine(files, source_files, file_entry(fix) if fix is not None else None)


def bytes_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
