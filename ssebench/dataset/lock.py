"""Locking a dataset and checking it against its lock (``dataset lock``, ``dataset
verify``, ``jobs run``'s refusal of a task that changed). The file: lockfile.py."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ssebench.dataset.hashing import LOCK_NAME, combine, file_entry, folder_entries, task_entries
from ssebench.dataset.lockfile import DatasetError, Lock, LockedTask
from ssebench.dataset.verdicts import Cached
from ssebench.task import Task, TaskError, load_task

TASK_FILE = "task.toml"


def discover(dirs: list[Path]) -> list[Task]:
    """Every task in *dirs* (a task folder, or a folder with task folders at any depth);
    raises DatasetError: a folder without tasks, a task that does not load, two tasks
    with one id."""
    found: list[Path] = []
    for d in dirs:
        if not d.is_dir():
            raise DatasetError(f"{d}: not a folder")
        files = [d / TASK_FILE] if (d / TASK_FILE).is_file() else _below(d)
        if not files:
            raise DatasetError(f"{d}: no {TASK_FILE} in it or in any folder below it")
        found += files
    tasks: list[Task] = []
    seen: dict[str, Path] = {}
    for file in dict.fromkeys(f.resolve() for f in found):
        try:
            task = load_task(file)
        except TaskError as exc:
            raise DatasetError(str(exc)) from None
        if task.id in seen:
            raise DatasetError(f"{file}: key 'id': two tasks have the id '{task.id}': {seen[task.id]} and {file}")
        seen[task.id] = file
        tasks.append(task)
    return tasks


def _below(root: Path) -> list[Path]:
    """The task files under *root*; a task folder's own subfolders are not searched."""
    out = []
    for folder, dirs, files in os.walk(root):
        if TASK_FILE in files and Path(folder) != root:
            out.append(Path(folder) / TASK_FILE)
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if d != ".git" and not (Path(folder) / d).is_symlink())
    return sorted(out)


def fix_beside(task: Task) -> Path | None:
    """The task's reference fix, kept beside its folder: ``<folder>.fix.patch``."""
    path = task.dir.parent / f"{task.dir.name}.fix.patch"
    return path if path.is_file() else None


def _rel(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()


def locked_task(task: Task, root: Path, cached: Cached | None) -> LockedTask:
    """The lock's record of *task* (paths relative to *root*) with its verdict."""
    files, source_files = task_entries(task)
    fix = fix_beside(task)
    fix_entry = file_entry(fix) if fix is not None else None
    if cached is None:
        verify: dict[str, Any] = {"verdict": "not verified", "at": None, "problems": []}
    else:
        sound = cached.verdict.get("sound")
        verify = {"verdict": "sound" if sound else "unsound", "at": cached.at, "problems": cached.verdict["problems"]}
    return LockedTask(
        id=task.id,
        task_file=_rel(task.file, root),
        folder=_rel(task.dir, root),
        hash=combine(files, source_files, fix_entry),
        files=files,
        source=_rel(task.source, root),
        source_files=source_files,
        fix={"path": _rel(fix, root), "entry": str(fix_entry)} if fix is not None else None,
        verify=verify,
        image=cached.verdict.get("image") if cached is not None else None,
    )


def changes(lock: Lock) -> list[str]:
    """Every file that changed since *lock* was written, one line each (empty: none);
    raises DatasetError when the lock is from another dataset."""
    root = lock.root
    present = [t for t in lock.tasks if (root / t.task_file).is_file()]
    if lock.tasks and not present:
        first = lock.tasks[0]
        raise DatasetError(
            f"{lock.path}: a lock from another dataset: none of its {len(lock.tasks)} tasks is there "
            f"(key 'tasks[0].task_file': {root / first.task_file} does not exist)"
        )
    out: list[str] = []
    for i, locked in enumerate(lock.tasks):
        out += _task_changes(lock, i, locked)
    known = {(root / t.task_file).resolve() for t in lock.tasks}
    for file in _below(root) + ([root / TASK_FILE] if (root / TASK_FILE).is_file() else []):
        if file.resolve() not in known:
            out.append(f"{_rel(file, root)}: a task that is not in the lock")
    return out


def image_changes(lock: Lock, digest: str) -> list[str]:
    """Every task of *lock* verified in a task image other than *digest* (the one this
    ssebench builds now), one line each; a task verified on the host has none to compare."""
    return [
        f"task '{t.id}': verified in image {t.image}; the task image is now {digest} "
        "(ssebench dataset lock --docker verifies it there)"
        for t in lock.tasks
        if t.image is not None and t.image != digest
    ]


def _task_changes(lock: Lock, index: int, locked: LockedTask) -> list[str]:
    """How one locked task differs now, by the lock's own paths (a task that no longer
    loads still has its files compared)."""
    root = lock.root
    file = root / locked.task_file
    if not file.is_file():
        return [f"task '{locked.id}': {locked.task_file} removed"]
    try:
        task_id: str | None = load_task(file).id
    except TaskError:
        task_id = None  # its task file changed: named below
    if task_id is not None and task_id != locked.id:
        raise DatasetError(
            f"{lock.path}: key 'tasks[{index}].id': the lock says '{locked.id}', but {file} is task "
            f"'{task_id}': a lock from another dataset?"
        )
    name = f"task '{locked.id}'"
    folder = root / locked.folder
    out = _diff(name, locked.folder, locked.files, folder_entries(folder))
    if locked.source_files is not None:
        source = root / locked.source
        out += _diff(name, locked.source, locked.source_files, folder_entries(source) if source.is_dir() else {})
    fix = root / locked.fix["path"] if locked.fix else folder.parent / f"{folder.name}.fix.patch"
    entry = file_entry(fix) if fix.is_file() else None
    if (locked.fix or {}).get("entry") != entry:
        what = "changed" if locked.fix and entry else "removed" if locked.fix else "added"
        out.append(f"{name}: fix {_rel(fix, root)} {what}")
    return out


def _diff(name: str, base: str, before: dict[str, str], after: dict[str, str]) -> list[str]:
    out = []
    for rel in sorted(set(before) | set(after)):
        old, new = before.get(rel), after.get(rel)
        if old == new:
            continue
        what = "added" if old is None else "removed" if new is None else "changed"
        out.append(f"{name}: {what}: {base}/{rel}" if base != "." else f"{name}: {what}: {rel}")
    return out


def find_lock(task: Task) -> Path | None:
    """The lock beside a task: the nearest ``ssebench.lock`` in its folder or above."""
    for folder in (task.dir.resolve(), *task.dir.resolve().parents):
        if (folder / LOCK_NAME).is_file():
            return folder / LOCK_NAME
    return None


def check_task(task: Task, read: Callable[[Path], Lock]) -> tuple[Lock | None, list[str]]:
    """The lock beside *task* and how the task differs from it (empty: as locked, or no
    lock); for ``jobs run``. Raises DatasetError for a lock that does not read."""
    path = find_lock(task)
    if path is None:
        return None, []
    lock = read(path)
    for i, locked in enumerate(lock.tasks):
        if (lock.root / locked.task_file).resolve() == task.file.resolve():
            return lock, _task_changes(lock, i, locked)
    return lock, [f"task '{task.id}' ({task.file}) is not in the lock {path}"]


SHOWN_CHANGES = 5  # changed files named per task in a refusal; the rest counted


def preflight(task_files: list[Path], ignore: bool) -> tuple[dict[Path, str | None], list[str]]:
    """``jobs run``'s check of each task against the lock beside it: the lock's hash per
    task (None: no lock), and one message per task that differs (empty when *ignore*:
    the run goes ahead and its record says so)."""
    from ssebench.dataset.lockfile import read

    hashes: dict[Path, str | None] = {}
    refusals: list[str] = []
    for file in task_files:
        try:
            lock, differs = check_task(load_task(file), read)
        except TaskError:
            hashes[file] = None  # the job's own loader names a bad task file
            continue
        hashes[file] = lock.hash if lock is not None else None
        if differs and lock is not None and not ignore:
            more = f"; and {len(differs) - SHOWN_CHANGES} more" if len(differs) > SHOWN_CHANGES else ""
            refusals.append(
                f"{file}: differs from the lock {lock.path}: {'; '.join(differs[:SHOWN_CHANGES])}{more} "
                "(ssebench dataset verify names every change; lock again, or run with --ignore-lock)"
            )
    return hashes, refusals
