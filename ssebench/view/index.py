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
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench import settings
from ssebench.view.jobs import JobCache, JobFolder, is_job_folder
from ssebench.view.runs import DIALOG, RESULTS, WATCHED, RunRow, read_run

log = logging.getLogger("ssebench.view")
INDEX_FILE = ".ssebench-view.sqlite"
SCHEMA = 3  # the index keeps RunRow's JSON: another version is read again
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


@dataclass(frozen=True)
class Found:
    """A run found under a root: its folder (relative), its job.json row and job, if any."""

    rel: str
    row: dict[str, Any] | None = None
    job: JobFolder | None = None


def find_runs(root: Path, cache: JobCache | None = None) -> tuple[list[Found], list[JobFolder]]:
    """Every run under ROOT, and every job folder the walk met (a job's runs are its rows)."""
    cache = cache or JobCache()
    if is_run_folder(root):
        return [Found("")], []
    found: list[Found] = []
    jobs: list[JobFolder] = []
    job = cache.read(root, "") if is_job_folder(root) else None
    if job is not None:
        _job_runs(root, job, found, jobs)
    else:
        _walk(root, str(root), 0, cache, found, jobs)
    return found, jobs


def _job_runs(root: Path, job: JobFolder, found: list[Found], jobs: list[JobFolder]) -> None:
    jobs.append(job)
    base = (root / job.rel).resolve() if job.rel else root
    for row in job.rows:
        folder = (base / row["folder"]).resolve()
        if inside(base, folder) and folder != base:
            found.append(Found(folder.relative_to(root).as_posix(), row, job))


def _walk(root: Path, folder: str, depth: int, cache: JobCache, found: list[Found], jobs: list[JobFolder]) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    prefix = len(str(root)) + 1
    for entry in entries:
        if entry.name.startswith(".") or entry.name in NOT_RUNS or not entry.is_dir(follow_symlinks=False):
            continue
        rel = entry.path[prefix:]
        if is_run_folder(entry.path):
            found.append(Found(rel))
            continue
        job = cache.read(root, rel) if is_job_folder(entry.path) else None
        if job is not None:
            _job_runs(root, job, found, jobs)
        elif depth + 1 < MAX_DEPTH:
            _walk(root, entry.path, depth + 1, cache, found, jobs)


def signature(folder: Path, found: Found) -> str:
    """Sizes and mtimes of the files a run is read from (and its job row): changed → read again."""
    parts: list[Any] = [SCHEMA, found.row, found.job.job_id if found.job else None]
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
        self._jobs_cache = JobCache()
        self.jobs: list[JobFolder] = []  # the jobs the last listing found
        self.generation = 0  # goes up when a page would show something else

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

        The runs read are kept in memory too, so a listing decodes nothing that did not change;
        :attr:`generation` goes up whenever what a page shows of a run (or the set of runs or
        jobs) changed, which is what the live pages poll."""
        with self._lock:
            if self._memory is None:
                self._memory = self._load()
            result, changed, seen = [], [], set()
            found, jobs = find_runs(self.root, self._jobs_cache)
            for item in found:
                seen.add(item.rel)
                known = self._memory.get(item.rel)
                fresh = self._fresh(item, known)
                if fresh is not known:
                    data = json.dumps(fresh[1].as_json())
                    if known is None or data != json.dumps(known[1].as_json()):
                        self.generation += 1
                    self._memory[item.rel] = fresh
                    changed.append((item.rel, fresh[0], data))
                result.append(fresh[1])
            gone = [rel for rel in self._memory if rel not in seen]
            for rel in gone:
                del self._memory[rel]
            if gone or [j.job_id for j in jobs] != [j.job_id for j in self.jobs]:
                self.generation += 1
            self.jobs = jobs
            if changed or gone:
                self._store(changed, gone)
        return result

    def _fresh(self, item: Found, known: tuple[str, RunRow] | None) -> tuple[str, RunRow]:
        """KNOWN if the run's files did not change, else the run read again."""
        folder = self.root / item.rel if item.rel else self.root
        sig = signature(folder, item)
        if known is not None and known[0] == sig:
            return known
        return sig, read_run(folder, self.number, item.rel, item.row, item.job)

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

    def locate(self, rel: str) -> Found | None:
        """ROOT/REL if it is a run of this root: a run folder, or a run a job.json lists (which
        may have no folder yet), with its row and job. None otherwise."""
        folder = (self.root / rel).resolve()
        if not inside(self.root, folder):
            return None
        wanted = folder.relative_to(self.root).as_posix() if folder != self.root else ""
        found, _ = find_runs(self.root, self._jobs_cache)
        for item in found:
            if item.rel == wanted:
                return item
        return None

    def folder(self, found: Found) -> Path:
        return self.root / found.rel if found.rel else self.root

    def run(self, rel: str) -> RunRow | None:
        """The run at REL, read afresh, if REL is a run of this root (else None)."""
        found = self.locate(rel)
        if found is None:
            return None
        return read_run(self.folder(found), self.number, found.rel, found.row, found.job)

    def job(self, rel: str) -> JobFolder | None:
        """The job at REL of this root (read afresh), or None."""
        folder = (self.root / rel).resolve()
        if not inside(self.root, folder) or not is_job_folder(folder):
            return None
        return self._jobs_cache.read(self.root, folder.relative_to(self.root).as_posix() if folder != self.root else "")
