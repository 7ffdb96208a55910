"""The cache of ``task verify`` verdicts, by content hash (the task's files, its tree and
its fix): ``dataset lock`` records a verdict without verifying the same bytes again, and
the tests verify every task they use once. A verdict holds for the machine that made it,
so the cache is the user's own (``settings.cache_dir``); only sandboxed verdicts go in.
A file lock per key makes one process verify while the others wait and then read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssebench import settings


@dataclass(frozen=True)
class Cached:
    """One cached verdict: ``task verify --json``'s object, and when it was made."""

    key: str
    at: str  # ISO 8601, UTC
    verdict: dict[str, Any]

    @property
    def sound(self) -> bool:
        return bool(self.verdict.get("sound"))


def folder() -> Path:
    return settings.cache_dir("verified")


def _path(key: str) -> Path:
    return folder() / (key.partition(":")[2] or key)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def load(key: str) -> Cached | None:
    """The cached verdict for *key*, or None (missing, or not one of ours)."""
    try:
        data = json.loads(_path(key).with_suffix(".json").read_text())
        return Cached(data["key"], data["at"], data["verdict"]) if data.get("key") == key else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save(key: str, verdict: dict[str, Any], at: str | None = None) -> Cached:
    from ssebench.agents.files import atomic_write

    cached = Cached(key, at or now(), verdict)
    path = _path(key).with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"key": key, "at": cached.at, "verdict": verdict}
    atomic_write(path, (json.dumps(data, indent=1) + "\n").encode(), 0o644)
    return cached


@contextmanager
def locked(key: str) -> Iterator[None]:
    """One verifier per key at a time (pytest-xdist workers, parallel locks)."""
    from filelock import FileLock

    folder().mkdir(parents=True, exist_ok=True)
    with FileLock(str(_path(key).with_suffix(".lock"))):
        yield


def verified(key: str, run: Callable[[], dict[str, Any]]) -> tuple[Cached, bool]:
    """The cached verdict for *key*, else *run*'s (then cached); and whether it was cached."""
    with locked(key):
        hit = load(key)
        if hit is not None:
            return hit, True
        return save(key, run()), False
