"""What a check sees at ``SSE_TASK_DIR`` (``/sse/task``): the task's support files.

Why a copy: the task folder holds the hidden parts (task.toml, PoCs, intent diff,
``[intent] files``) beside the support files (build scripts, test drivers), so the
sandbox cannot bind the folder itself. At start the daemon (and ``ssebench grade``)
copies the support files (:func:`ssebench.taskfiles.support_files`) into a folder of its
workspace, symlinks as symlinks, and every check gets that folder read-only; the
``[intent] files`` are copied into a second folder, bound only in the intent step. The
copy is a snapshot: support files changed after the start are not seen until a restart.

:func:`mount_args` turns the view plus one invocation's extra files (the PoC being run,
the intent files) into bwrap arguments. Extras cannot be bound inside a read-only bind
(bwrap cannot create their mount points there), so with extras ``/sse/task`` is a tmpfs
holding binds of the view's entries, expanded only along the extras' parent folders,
and is made read-only once everything is in place.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ssebench.task import Task
from ssebench.taskfiles import Entry, intent_entries, support_files


class TaskViewError(OSError):
    """The support view could not be made; ``str(err)`` is the one line for the user."""


@dataclass(frozen=True)
class TaskView:
    """The daemon-owned copies: *root* (every check), *intent* (the intent step's extras,
    sandbox path → host path; folders are bound whole)."""

    root: Path
    intent: Mapping[str, Path] = field(default_factory=dict)


def build(task: Task, dest: Path, inside: str, *, leave_out: tuple[Path, ...] = ()) -> TaskView:
    """Copy the support files of *task* to ``dest/support`` and its ``[intent] files`` to
    ``dest/intent`` (blocking: at start, or in a thread). *inside* is the sandbox path of
    the task folder (``/sse/task``); *leave_out*: the daemon's own folders (its workspace,
    the tree under test), should they lie in the task folder. Raises :class:`TaskViewError`."""
    root, intent = dest / "support", dest / "intent"
    try:
        dest.mkdir(mode=0o700)
        _copy(task.dir, root, support_files(task, leave_out=(dest, *leave_out)))
        entries = list(intent_entries(task))
        _copy(task.dir, intent, entries)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise TaskViewError(f"could not copy the task's support files: {where}{exc.strerror or exc}") from None
    tops = [PurePosixPath(os.path.relpath(f, task.dir)) for f in task.intent.files] if task.intent else []
    extras = {str(PurePosixPath(inside) / top): intent / top for top in tops if os.path.lexists(intent / top)}
    return TaskView(root, extras)


def _copy(src: Path, dst: Path, entries: Iterable[Entry]) -> None:
    """Copy *entries* (parents first) from *src* to *dst*: files with their mode and
    times, symlinks as symlinks, folders made as they come."""
    dst.mkdir(mode=0o755)
    for entry in entries:
        target = dst / entry.rel
        if os.path.lexists(target):
            continue  # named twice ([intent] files = ["t", "t/a"])
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.is_link:
            os.symlink(os.readlink(src / entry.rel), target)
        elif entry.is_dir:
            target.mkdir()
        else:
            try:
                shutil.copy2(src / entry.rel, target, follow_symlinks=False)
            except PermissionError:
                continue  # unreadable to the daemon, so to every check too


def mount_args(
    root: Path | None, inside: str, files: Mapping[str, Path], fds: Mapping[str, int] | None = None
) -> list[str]:
    """bwrap arguments that show *root* (or an empty folder) read-only at *inside*, plus
    *files* (sandbox path → host path; a host symlink stays a symlink) read-only. *fds*:
    sandbox path → an fd the daemon opened on that file (checks that run as another uid
    may not reach the host path): bwrap copies the file from it."""
    if not files:
        return ["--ro-bind", str(root), inside] if root is not None else ["--dir", inside]
    base = PurePosixPath(inside)
    extras = {PurePosixPath(k).relative_to(base): Path(v) for k, v in files.items()}
    spine = {parent for rel in extras for parent in rel.parents}  # "." and every parent folder
    args = ["--tmpfs", inside]
    for folder in sorted(spine, key=lambda p: len(p.parts)):
        if folder.parts:
            args += ["--dir", str(base / folder)]
        if root is None:
            continue
        here = root / folder
        if here.is_symlink() or not here.is_dir():
            continue  # a parent that is a symlink or a file in the view: the extra wins
        for name in sorted(os.listdir(here)):
            rel = folder / name
            if rel in spine or rel in extras:
                continue
            args += _entry_args(here / name, str(base / rel))
    for rel, host in sorted(extras.items()):
        fd = (fds or {}).get(str(base / rel))
        args += (
            _entry_args(host, str(base / rel))
            if fd is None
            else ["--perms", "0444", "--ro-bind-data", str(fd), str(base / rel)]
        )
    return args + ["--remount-ro", inside]


def _entry_args(host: Path, inside: str) -> list[str]:
    if host.is_symlink():
        return ["--symlink", os.readlink(host), inside]
    return ["--ro-bind", str(host), inside]
