"""Every task the tests use, verified once (``ssebench task verify`` with its fix), cached
by content hash in the user's cache (ssebench/dataset/verdicts.py: a file lock per hash,
so pytest-xdist workers verify a task once and the others read the verdict).

    from tests.helpers.verified import verified
    verdict = verified(task_dir, fix)       # ssebench.dataset.verdicts.Cached
    assert verdict.sound, verdict.verdict["problems"]
"""

from __future__ import annotations

from pathlib import Path

from ssebench.dataset.verdicts import Cached


def verified(task_dir: Path, fix: Path | None) -> Cached:
    """The verdict on the task in *task_dir* with *fix* (sandboxed, as ``task verify``)."""
    from ssebench.dataset.lockcmd import cached_verdict
    from ssebench.task import load_task

    cached, _ = cached_verdict(load_task(task_dir / "task.toml"), fix)
    return cached
