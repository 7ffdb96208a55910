"""What a check sees of the task folder (task-format.md, "Support files"): the hidden
parts, the support files and the intent step's extra files, split from task.py (which
loads and validates the task file)."""

from __future__ import annotations

import os
import os.path
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ssebench.task import Task, normalize_path

NEVER, POC_RUN, INTENT_STEP = "never", "its PoC run", "the intent step"


@dataclass(frozen=True)
class HiddenPart:
    """A part of the task that checks do not see at ``SSE_TASK_DIR``, except in *step*."""

    key: str  # "the task file", "pocs.files[0]", "intent.diff", "intent.files[0]"
    path: Path  # absolute (may lie outside the task folder: a PoC given by absolute path)
    step: str  # NEVER, POC_RUN (only while that PoC runs) or INTENT_STEP


def hidden_parts(task: Task) -> tuple[HiddenPart, ...]:
    """The task's hidden parts (task-format.md): the one list the daemon's support view,
    ``ssebench task check`` and the docs go by."""
    parts = [HiddenPart("the task file", task.file, NEVER)]
    if task.intent is not None:
        parts.append(HiddenPart("intent.diff", task.intent.diff, NEVER))
    if task.pocs is not None:
        parts += [HiddenPart(f"pocs.files[{i}]", f, POC_RUN) for i, f in enumerate(task.pocs.files)]
    if task.intent is not None:
        parts += [HiddenPart(f"intent.files[{i}]", f, INTENT_STEP) for i, f in enumerate(task.intent.files)]
    return tuple(parts)


@dataclass(frozen=True)
class Entry:
    """One entry of a view of the task folder: *rel* to the task folder, its lstat."""

    rel: PurePosixPath
    stat: os.stat_result

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.stat.st_mode)

    @property
    def is_link(self) -> bool:
        return stat.S_ISLNK(self.stat.st_mode)


def support_files(task: Task, *, leave_out: tuple[Path, ...] = ()) -> Iterator[Entry]:
    """Every file, folder and symlink checks see at ``SSE_TASK_DIR`` (parents first):
    the task folder without its hidden parts (and folders that hold no support file), without the source tree when it
    lies inside (checks get it as ``SSE_TREE``), without ``.git`` (its objects may hold
    every hidden part), without what is not a file, folder or symlink, and without what
    the daemon cannot read. *leave_out*: more paths to leave out (the daemon's own copy,
    should its workspace lie in the task folder)."""
    return _walk(task, [PurePosixPath()], {p.path for p in hidden_parts(task)} | set(leave_out))


def intent_entries(task: Task) -> Iterator[Entry]:
    """What ``[intent] files`` add to ``SSE_TASK_DIR`` in the intent step: each named
    entry, and what a named folder holds, without the other hidden parts."""
    if task.intent is None or not task.intent.files:
        return iter(())
    others = {p.path for p in hidden_parts(task) if p.step != INTENT_STEP}
    tops = [PurePosixPath(os.path.relpath(f, task.dir)) for f in task.intent.files]
    return _walk(task, tops, others, named=True)


def left_out(task: Task) -> list[str]:
    """What of the task folder no check sees for other reasons than being hidden (for
    ``task check``): the source tree inside it and ``.git`` folders."""
    out = []
    rel = os.path.relpath(task.source, task.dir)
    if rel != "." and rel.split(os.sep)[0] != "..":
        out.append(f"{rel} (the source tree: checks get their copy of it as SSE_TREE)")
    if os.path.lexists(task.dir / ".git"):
        out.append(".git (its objects may hold the hidden parts)")
    return out


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _walk(task: Task, tops: list[PurePosixPath], hidden: set[Path], *, named: bool = False) -> Iterator[Entry]:
    """:func:`_entries`, without the folders that hold no file or symlink (left empty
    by what is hidden, they would only show where hidden parts are)."""
    entries = list(_entries(task, tops, hidden, named=named))
    full = {parent for e in entries if not e.is_dir for parent in e.rel.parents}
    keep = set(tops) if named else set()
    return iter([e for e in entries if not e.is_dir or e.rel in full or e.rel in keep])


def _entries(task: Task, tops: list[PurePosixPath], hidden: set[Path], *, named: bool) -> Iterator[Entry]:
    """Walk *tops* (relative to the task folder; the folder itself is ``.``) leaving out
    *hidden* and the source tree, by path and by identity (a hard link or a folder
    reached another way is the same file), ``.git``, special files and unreadable ones.
    *named*: yield each top itself too (``[intent] files``)."""
    cut = {Path(normalize_path(p)) for p in (*hidden, task.source)}
    ids = {i for i in map(_identity, cut) if i is not None}

    def keep(rel: PurePosixPath, st: os.stat_result) -> bool:
        path = task.dir / rel
        if rel.name == ".git" or path in cut:
            return False
        if stat.S_ISLNK(st.st_mode):
            return True
        if (st.st_dev, st.st_ino) in ids or not os.access(path, os.R_OK):
            return False
        return stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)

    stack: list[PurePosixPath] = []
    if named:
        found, folders = _visit(task, list(reversed(tops)), keep)
        yield from found
        stack += folders
    else:
        stack += reversed(tops)
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(task.dir / folder) as it:
                names = sorted(e.name for e in it)
        except OSError:
            continue
        found, subdirs = _visit(task, [folder / name for name in names], keep)
        yield from found
        stack += reversed(subdirs)


def _visit(
    task: Task, rels: list[PurePosixPath], keep: Callable[[PurePosixPath, os.stat_result], bool]
) -> tuple[list[Entry], list[PurePosixPath]]:
    """The entries of *rels* that *keep* takes (``lstat``: a symlink is never followed), and
    which of them are folders to walk into, both in the order of *rels*."""
    found: list[Entry] = []
    folders: list[PurePosixPath] = []
    for rel in rels:
        try:
            st = os.lstat(task.dir / rel)
        except OSError:
            continue
        if keep(rel, st):
            found.append(Entry(rel, st))
            if stat.S_ISDIR(st.st_mode):
                folders.append(rel)
    return found, folders
