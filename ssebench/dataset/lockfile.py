"""``ssebench.lock``: what a dataset's tasks were when it was locked (docs/datasets.md).

A JSON object, version 1::

    {"ssebench_lock": 1, "created": "2025-01-31T12:00:00Z", "tasks": [TASK, ...]}

TASK: ``id``; ``task_file`` and ``folder`` (POSIX paths relative to the lock's folder);
``hash`` (one sha256 over everything below, ssebench/dataset/hashing.py); ``files`` (every
file of the task folder: relative path -> entry); ``source`` (the tree, relative to the
lock's folder) and ``source_files`` (its entries when it lies outside the task folder,
else null); ``fix`` (``{"path", "entry"}`` of the reference fix beside the folder, or
null); ``verify`` (``{"verdict": "sound"|"unsound"|"not verified", "at", "problems"}``);
``image`` (the task image's digest when the verdict was made in Docker, else null).

The lock is written whole or not at all (a temporary file renamed over it) and read
strictly: a key missing or of the wrong type is one error naming the file and the key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.dataset.hashing import LOCK_NAME, bytes_hash

VERSION = 1
VERDICTS = ("sound", "unsound", "not verified")


class DatasetError(ValueError):
    """Bad input for a dataset command: one line naming the file and the key (exit 2)."""


@dataclass(frozen=True)
class LockedTask:
    """One task of a lock, as the lock has it."""

    id: str
    task_file: str
    folder: str
    hash: str
    files: dict[str, str]
    source: str
    source_files: dict[str, str] | None
    fix: dict[str, str] | None
    verify: dict[str, Any]
    image: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task_file": self.task_file,
            "folder": self.folder,
            "hash": self.hash,
            "files": self.files,
            "source": self.source,
            "source_files": self.source_files,
            "fix": self.fix,
            "verify": self.verify,
            "image": self.image,
        }


@dataclass(frozen=True)
class Lock:
    """A whole lock: where it lies, when it was made, its tasks, and its own hash."""

    path: Path
    created: str
    tasks: tuple[LockedTask, ...]
    hash: str = ""  # sha256 of the file's bytes (what a run record names)
    by_id: dict[str, LockedTask] = field(default_factory=dict, compare=False)

    @property
    def root(self) -> Path:
        return self.path.parent


def document(created: str, tasks: list[LockedTask]) -> bytes:
    data = {"ssebench_lock": VERSION, "created": created, "tasks": [t.to_json() for t in tasks]}
    return (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape")


def write(path: Path, created: str, tasks: list[LockedTask]) -> str:
    """Write the lock atomically; returns its hash."""
    from ssebench.agents.files import atomic_write

    data = document(created, tasks)
    atomic_write(path, data, 0o644)
    return bytes_hash(data)


def default_path(dirs: list[Path]) -> Path:
    """Where ``dataset lock`` writes: in the one folder, or the folders' common parent."""
    common = Path(os.path.commonpath([str(d.resolve()) for d in dirs]))
    return common / LOCK_NAME


def read(path: Path) -> Lock:
    """The lock at *path*; raises DatasetError naming the file and the key."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such lock file (write one with: ssebench dataset lock DIR)") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a folder, not a lock file") from None
    except OSError as exc:
        raise DatasetError(f"{path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: not a lock file: not valid JSON ({exc})") from None
    r = _LockReader(path)
    if not isinstance(data, dict) or data.get("ssebench_lock") != VERSION:
        raise DatasetError(f"{path}: not an ssebench lock (version {VERSION}): key 'ssebench_lock' missing or other")
    created = r.text(data, "created", "created")
    items = data.get("tasks")
    if not isinstance(items, list):
        raise DatasetError(f"{path}: key 'tasks': must be an array")
    tasks = tuple(_task(r, item, f"tasks[{i}]") for i, item in enumerate(items))
    by_id: dict[str, LockedTask] = {}
    for i, task in enumerate(tasks):
        if task.id in by_id:
            raise DatasetError(f"{path}: key 'tasks[{i}].id': two tasks have the id '{task.id}'")
        by_id[task.id] = task
    return Lock(path, created, tasks, bytes_hash(raw), by_id)


@dataclass(frozen=True)
class _LockReader:
    path: Path

    def fail(self, key: str, what: str) -> DatasetError:
        return DatasetError(f"{self.path}: key '{key}': {what}")

    def text(self, data: dict[str, Any], name: str, key: str) -> str:
        value = data.get(name)
        if not isinstance(value, str):
            raise self.fail(key, "missing or not a string")
        return value

    def entries(self, data: dict[str, Any], name: str, key: str, *, null: bool = False) -> dict[str, str] | None:
        value = data.get(name)
        if value is None and null:
            return None
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise self.fail(key, "must be an object of strings (path -> entry)")
        return value


def _task(r: _LockReader, item: Any, key: str) -> LockedTask:
    if not isinstance(item, dict):
        raise r.fail(key, "must be an object")
    files = r.entries(item, "files", f"{key}.files")
    assert files is not None
    fix = item.get("fix")
    if fix is not None and not (isinstance(fix, dict) and all(isinstance(fix.get(k), str) for k in ("path", "entry"))):
        raise r.fail(f"{key}.fix", 'must be null or {"path": ..., "entry": ...}')
    verify = item.get("verify")
    if not isinstance(verify, dict) or verify.get("verdict") not in VERDICTS:
        raise r.fail(f"{key}.verify", f"must be an object whose 'verdict' is one of {', '.join(VERDICTS)}")
    image = item.get("image")
    if image is not None and not isinstance(image, str):
        raise r.fail(f"{key}.image", "must be null or a string")
    return LockedTask(
        id=r.text(item, "id", f"{key}.id"),
        task_file=r.text(item, "task_file", f"{key}.task_file"),
        folder=r.text(item, "folder", f"{key}.folder"),
        hash=r.text(item, "hash", f"{key}.hash"),
        files=files,
        source=r.text(item, "source", f"{key}.source"),
        source_files=r.entries(item, "source_files", f"{key}.source_files", null=True),
        fix=fix,
        verify=verify,
        image=image,
    )
