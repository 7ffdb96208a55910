"""The index of one folder's runs: SQLite next to the results, re-read only where files changed.

Finding the runs costs a walk and a few ``stat`` calls per run; reading a run (its
record, the dialog's ends) happens only when the sizes or mtimes of those files (or its
job row) changed since the last look, so a folder of 1,000 runs lists in
milliseconds after the first index. The database lives in the folder
(``.ssebench-view.sqlite``) or, when the folder is not writable, in ``~/.cache/ssebench/view/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from ssebench import settings
from ssebench.view.runs import DIALOG, JOB, RESULTS, WATCHED, RunRow, read_json, read_run

log = logging.getLogger("ssebench.view")
INDEX_FILE = ".ssebench-view.sqlite"
SCHEMA = 2  # the index keeps RunRow's JSON: another version is read again
#: how deep below a folder the walk looks for run folders (job/agent/run is 3)
MAX_DEPTH = 4
#: folders a run keeps that are never runs themselves (the agent's tree and HOME)
NOT_RUNS = {"tree", "home", "node_modules", "__pycache__"}


def index_path(root: Path) -> Path:
    """Where ROOT's index lives: in ROOT when it is writable, else in the user's cache."""
    if os.access(root, os.W_OK | os.X_OK):
        return root / INDEX_FILE
    cache = settings.cache_dir("view")
    with contextlib.suppress(OSError):  # no cache folder: opening the index fails, memory serves
        cache.mkdir(parents=True, exist_ok=True)
    return cache / (hashlib.sha256(str(root).encode()).hexdigest()[:20] + ".sqlite")


def is_run_folder(folder: Path | str) -> bool:
    return any(os.path.lexists(os.path.join(folder, name)) for name in (RESULTS, DIALOG))


def inside(root: Path, path: Path) -> bool:
    """PATH (already resolved) is ROOT or below it."""
    return path == root or root in path.parents


def find_runs(root: Path) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """``(relative folder, job.json row or None)`` of every run under ROOT."""
    if is_run_folder(root):
        yield "", None
        return
    job = read_json(root / JOB, []) if os.path.lexists(root / JOB) else None
    if isinstance(job, dict) and isinstance(job.get("runs"), list):
        yield from _job_runs(root, job["runs"])
        return
    yield from _walk(root, str(root), 0)


def _job_runs(root: Path, rows: list[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("folder"), str):
            continue
        folder = (root / row["folder"]).resolve()
        if inside(root, folder) and folder != root:
            yield folder.relative_to(root).as_posix(), row


def _walk(root: Path, folder: str, depth: int) -> Iterator[tuple[str, None]]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    prefix = len(str(root)) + 1
    for entry in entries:
        if entry.name.startswith(".") or entry.name in NOT_RUNS or not entry.is_dir(follow_symlinks=False):
            continue
        if is_run_folder(entry.path):
            yield entry.path[prefix:], None
        elif depth + 1 < MAX_DEPTH:
            yield from _walk(root, entry.path, depth + 1)


def signature(folder: Path, row: dict[str, Any] | None) -> str:
    """Sizes and mtimes of the files a run is read from (and its job row): changed → read again."""
    parts: list[Any] = [SCHEMA, row]
    base = str(folder)
    for name in WATCHED:
        try:
            st = os.lstat(os.path.join(base, name))
            parts.append((st.st_size, st.st_mtime_ns))
        except OSError:
            parts.append(None)
    return json.dumps(parts, sort_keys=True)


class Index:
    """One root folder's runs, kept in SQLite; :meth:`runs` brings it up to date first."""

    def __init__(self, root: Path, number: int) -> None:
        self.root = root
        self.number = number
        self.path = index_path(root)
        self._lock = threading.Lock()
        self._memory: dict[str, tuple[str, RunRow]] | None = None

    def _connect(self) -> sqlite3.Connection:
        """The index, made if missing; a file that is not one is replaced (a busy one is not)."""
        for attempt in (1, 2):
            db = sqlite3.connect(self.path, timeout=10)
            try:
                db.execute("CREATE TABLE IF NOT EXISTS runs (rel TEXT PRIMARY KEY, sig TEXT, data TEXT)")
                return db
            except sqlite3.DatabaseError as exc:
                db.close()
                if isinstance(exc, sqlite3.OperationalError) or attempt == 2:
                    raise
                self.path.unlink(missing_ok=True)  # damaged: rebuilt, never trusted
        raise AssertionError("unreachable")

    def runs(self) -> list[RunRow]:
        """Every run of the folder, re-reading those whose files changed (blocking: call in a thread).

        The runs read are kept in memory too, so a listing decodes nothing that did not change."""
        with self._lock:
            if self._memory is None:
                self._memory = self._load()
            found, changed, seen = [], [], set()
            for rel, row in find_runs(self.root):
                seen.add(rel)
                folder = self.root / rel if rel else self.root
                sig = signature(folder, row)
                known = self._memory.get(rel)
                if known is None or known[0] != sig:
                    known = (sig, read_run(folder, self.number, rel, row))
                    self._memory[rel] = known
                    changed.append((rel, sig, json.dumps(known[1].as_json())))
                found.append(known[1])
            gone = [rel for rel in self._memory if rel not in seen]
            for rel in gone:
                del self._memory[rel]
            if changed or gone:
                self._store(changed, gone)
        return found

    def _load(self) -> dict[str, tuple[str, RunRow]]:
        try:
            with closing(self._connect()) as db:
                rows = db.execute("SELECT rel, sig, data FROM runs").fetchall()
        except (sqlite3.Error, OSError) as exc:  # no index file: the runs are read, kept in memory
            log.warning("ssebench view: the index %s cannot be read (%s); reading every run", self.path, exc)
            return {}
        loaded = {}
        for rel, sig, data in rows:
            try:
                if not sig.startswith(f"[{SCHEMA},"):
                    continue  # an index of another version: read that run again
                loaded[rel] = (sig, RunRow.from_json(json.loads(data)))
            except (ValueError, TypeError):  # damaged row: read that run again
                continue
        return loaded

    def _store(self, changed: list[tuple[str, str, str]], gone: list[str]) -> None:
        try:
            with closing(self._connect()) as db, db:
                db.executemany("INSERT OR REPLACE INTO runs VALUES (?, ?, ?)", changed)
                db.executemany("DELETE FROM runs WHERE rel = ?", [(rel,) for rel in gone])
        except (sqlite3.Error, OSError) as exc:  # a full or read-only disk: the memory copy still serves
            log.warning("ssebench view: the index %s cannot be written (%s)", self.path, exc)

    def locate(self, rel: str) -> tuple[Path, dict[str, Any] | None] | None:
        """ROOT/REL resolved, with its job row, if it is a run of this root: a run folder, or
        a run job.json lists (which may have no folder yet). None otherwise."""
        folder = (self.root / rel).resolve()
        if not inside(self.root, folder):
            return None
        found = folder.relative_to(self.root).as_posix() if folder != self.root else ""
        for known, row in find_runs(self.root) if found else ():
            if known == found and row is not None:
                return folder, row
        if folder.is_dir() and is_run_folder(folder):
            return folder, None
        return None

    def run(self, rel: str) -> RunRow | None:
        """The run at REL, read afresh, if REL is a run of this root (else None)."""
        located = self.locate(rel)
        if located is None:
            return None
        folder, row = located
        rel = folder.relative_to(self.root).as_posix() if folder != self.root else ""
        return read_run(folder, self.number, rel, row)
