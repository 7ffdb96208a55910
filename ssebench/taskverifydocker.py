"""``task verify --docker``: verify inside the task image, as ``jobs run --backend docker``
runs a task, and record the image's digest. Not available yet: the task image's sandbox
setup for a verify run is not wired (see the report of issue 33); a clear refusal."""

from __future__ import annotations

from pathlib import Path

from ssebench.task import Task
from ssebench.taskverify import TaskVerdict, VerifyUsageError


def verify_in_docker(task: Task, fix: Path | None, *, repeat: int = 1) -> TaskVerdict:
    raise VerifyUsageError(
        "--docker: verifying inside the task image is not available yet; verify on the host "
        "(the same runner and sandbox as test_patch) without --docker"
    )
