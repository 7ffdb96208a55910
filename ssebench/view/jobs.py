"""Job folders as the view finds them: job.json's header and rows, read bounded and cached.

A folder holding ``job.json`` (docs/jobs.md) is a job: its ``runs`` rows say which folders
are its runs (also those not started yet), so an earlier try kept under ``tries/`` is never
counted. The view reads job.json only (not the journal the scheduler appends between two
rewrites of it): a row may lag by the scheduler's flush interval, while how a run ended is
its record's word anyway.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.view.files import read_json

JOB = "job.json"  # the jobs layer's scheduling file: its presence makes a folder a job


@dataclass(frozen=True)
class JobFolder:
    """One job: where it is (relative to the viewed folder), its header and its run rows."""

    rel: str
    job_id: str
    created: str | None = None
    job_file: str | None = None
    backend: str | None = None
    rows: tuple[dict[str, Any], ...] = ()
    problems: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        """How pages name the job: its id, else its folder."""
        return self.job_id or self.rel or "."


def is_job_folder(folder: str | Path) -> bool:
    return os.path.lexists(os.path.join(folder, JOB))


class JobCache:
    """job.json files read once per version (size, mtime): a poll every 2 s re-reads nothing."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[tuple[int, int], JobFolder | None]] = {}

    def read(self, root: Path, rel: str) -> JobFolder | None:
        """The job at ROOT/REL, or None when its job.json is not a job's (no runs list)."""
        path = (root / rel / JOB) if rel else root / JOB
        try:
            st = os.lstat(path)
        except OSError:
            return None
        key = (st.st_size, st.st_mtime_ns)
        known = self._known.get(rel)
        if known is not None and known[0] == key:
            return known[1]
        job = _read(path, rel)
        self._known[rel] = (key, job)
        return job


def _read(path: Path, rel: str) -> JobFolder | None:
    problems: list[str] = []
    document = read_json(path, problems)
    if not isinstance(document, dict) or not isinstance(document.get("runs"), list):
        return None
    rows = tuple(r for r in document["runs"] if isinstance(r, dict) and isinstance(r.get("folder"), str))
    return JobFolder(
        rel=rel,
        job_id=_text(document.get("job_id")) or (Path(rel).name if rel else path.parent.name),
        created=_text(document.get("created")),
        job_file=_text(document.get("job_file")),
        backend=_text(document.get("backend")),
        rows=rows,
        problems=tuple(problems),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
