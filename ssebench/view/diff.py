"""The agent's change: a unified diff of its tree against the task's source (difflib, capped).

The tree is where the run kept the agent's working copy (the record's ``task.tree``: the
``tree/`` copy in the results folder, or ``--tree DIR``); the source is the ``source`` of
the task file the record's spec names (the task as the run loaded it). Both are only
read: no git, no program of the run.
Symlinks are never followed (shown as changed entries); files over :data:`FILE_LIMIT`,
binary files and everything past :data:`OUTPUT_LIMIT` of diff text are named, not shown.
"""

from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ssebench.runrecord import RunResult

FILE_LIMIT = 1 << 20
OUTPUT_LIMIT = 2 << 20
MAX_FILES = 20_000
SKIP = {".git", "__pycache__"}


@dataclass
class FileDiff:
    path: str
    status: str  # added, removed, changed, binary, too large, symlink
    lines: list[str] = field(default_factory=list)


@dataclass
class Diff:
    source: str | None = None
    tree: str | None = None
    files: list[FileDiff] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def locate(folder: Path, record: RunResult | None) -> tuple[Path | None, Path | None, list[str]]:
    """The task's source and the agent's tree of the run in FOLDER, with what is missing."""
    from ssebench.task import TaskError, load_task

    problems: list[str] = []
    tree = Path(record.task.tree) if record is not None and record.task.tree else folder / "tree"
    if not tree.is_dir() and (folder / "tree").is_dir():
        tree = folder / "tree"
    if not tree.is_dir():
        problems.append(f"the agent's tree {tree} is not there")
    source = None
    if record is not None:
        try:
            source = load_task(record.spec.task_file).source
        except (TaskError, OSError) as exc:
            problems.append(f"the task file cannot be read: {str(exc).splitlines()[0]}")
    else:
        problems.append("the run has no record naming its task, so the task's source is unknown")
    return source, (tree if tree.is_dir() else None), problems


def tree_diff(source: Path, tree: Path) -> Diff:
    """Every difference between SOURCE and TREE (blocking: run it in a thread)."""
    result = Diff(str(source), str(tree))
    before, after = _files(source, result), _files(tree, result)
    budget = OUTPUT_LIMIT
    for rel in sorted(before.keys() | after.keys()):
        if budget <= 0:
            result.problems.append(f"the diff is longer than {OUTPUT_LIMIT >> 20} MiB: the rest is not shown")
            break
        entry = _compare(rel, before.get(rel), after.get(rel))
        if entry is not None:
            budget -= sum(len(line) for line in entry.lines)
            result.files.append(entry)
    return result


def _files(root: Path, result: Diff) -> dict[str, Path]:
    """Every entry below ROOT by relative path (not following symlinks)."""
    found: dict[str, Path] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        for name in names:
            path = Path(folder) / name
            found[path.relative_to(root).as_posix()] = path
        if len(found) > MAX_FILES:
            result.problems.append(f"{root} holds over {MAX_FILES:,} files: only the first are compared")
            break
    return found


def _compare(rel: str, old: Path | None, new: Path | None) -> FileDiff | None:
    status = "added" if old is None else "removed" if new is None else "changed"
    try:
        old_st = os.lstat(old) if old else None
        new_st = os.lstat(new) if new else None
    except OSError:
        return FileDiff(rel, "unreadable")
    if any(st and stat.S_ISLNK(st.st_mode) for st in (old_st, new_st)):
        return None if _same_link(old, new) else FileDiff(rel, "symlink")
    if any(st and not stat.S_ISREG(st.st_mode) for st in (old_st, new_st)):
        return None
    if any(st and st.st_size > FILE_LIMIT for st in (old_st, new_st)):
        return FileDiff(rel, "too large")
    old_bytes, new_bytes = _read(old), _read(new)
    if old_bytes == new_bytes:
        return None
    if b"\0" in old_bytes[:8192] or b"\0" in new_bytes[:8192]:
        return FileDiff(rel, "binary")
    lines = difflib.unified_diff(
        old_bytes.decode("utf-8", errors="replace").splitlines(keepends=True),
        new_bytes.decode("utf-8", errors="replace").splitlines(keepends=True),
        fromfile=f"a/{rel}" if old else "/dev/null",
        tofile=f"b/{rel}" if new else "/dev/null",
    )
    return FileDiff(rel, status, [line if line.endswith("\n") else line + "\n" for line in lines])


def _read(path: Path | None) -> bytes:
    if path is None:
        return b""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as stream:
        return stream.read(FILE_LIMIT + 1)


def _same_link(old: Path | None, new: Path | None) -> bool:
    try:
        return old is not None and new is not None and os.readlink(old) == os.readlink(new)
    except OSError:
        return False
