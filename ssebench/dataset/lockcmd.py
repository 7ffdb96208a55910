"""``ssebench dataset lock``: verify every task (or reuse this machine's verdict for the
same bytes) and write ``ssebench.lock`` whole, after every task was read."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ssebench import ui
from ssebench.dataset import verdicts
from ssebench.dataset.hashing import task_hash
from ssebench.dataset.lock import discover, fix_beside, locked_task
from ssebench.dataset.lockfile import DatasetError, LockedTask, default_path, write
from ssebench.task import Task


def cached_verdict(task: Task, fix: Path | None, *, sandbox: Any = None, limits: Any = None, image: Any = None):
    """This machine's verdict on *task* with *fix* (in the task *image*, a TaskImage, when
    given): cached by content hash (and image), else made now (and cached); returns
    ``(Cached, was it cached)``. Raises VerifyUsageError, RunError, DockerVerifyError."""
    from ssebench.taskverify import verify

    def run() -> dict[str, Any]:
        if image is not None:
            from ssebench.taskverifydocker import verify_in_docker

            return verify_in_docker(task, fix, image=image).to_json()
        return verify(task, fix, sandbox=sandbox, limits=limits).to_json()

    return verdicts.verified(_key(task, fix, image), run)


def _key(task: Task, fix: Path | None, image: Any) -> str:
    """The cache's key: the bytes, and the image's digest for a verdict made in it."""
    from ssebench.taskverifydocker import cache_key

    key = task_hash(task, fix)
    return cache_key(key, image.digest) if image is not None else key


def lock(args: argparse.Namespace) -> int:
    from ssebench.daemon.cli import sandbox_from_args
    from ssebench.daemon.runner import RunError
    from ssebench.daemon.sandbox import SandboxUnavailable
    from ssebench.taskverify import VerifyUsageError
    from ssebench.taskverifydocker import DockerVerifyError

    dirs = [Path(d) for d in args.dirs]
    tasks = discover(dirs)
    out = Path(args.output) if args.output else default_path(dirs)
    if out.is_dir():
        raise DatasetError(f"-o {out}: is a folder; give the lock file's path")
    sandbox = limits = image = None
    try:
        if args.docker:  # one image for the whole dataset: the one run --docker builds
            from ssebench.taskverifydocker import task_image

            image = task_image()
        elif not args.no_verify:
            sandbox, limits = sandbox_from_args(args)
    except (ValueError, SandboxUnavailable) as exc:  # VerifyUsageError too
        raise DatasetError(str(exc)) from None
    records: list[LockedTask] = []
    for task in tasks:
        fix = fix_beside(task)
        if args.no_verify:
            cached, hit = verdicts.load(_key(task, fix, image)), True
        else:
            try:
                cached, hit = cached_verdict(task, fix, sandbox=sandbox, limits=limits, image=image)
            except (VerifyUsageError, RunError, ValueError, DockerVerifyError) as exc:
                raise DatasetError(f"{task.file}: verify: {exc}") from None
        record = locked_task(task, out.parent, cached)
        records.append(record)
        _line(record, hit)
    try:
        lock_hash = write(out, verdicts.now(), records)
    except OSError as exc:
        raise DatasetError(f"{out}: cannot write the lock: {exc.strerror or exc}") from None
    unsound = [r.id for r in records if r.verify["verdict"] == "unsound"]
    ui.echo((f"Wrote {out}", "ok"), f": {len(records)} task{'s' if len(records) != 1 else ''}, {lock_hash}")
    if unsound:
        ui.echo((f"Unsound: {', '.join(unsound)}", "fail"), " (ssebench task verify names each problem)")
        return 1
    return 0


def _line(record: LockedTask, hit: bool) -> None:
    verdict = record.verify["verdict"]
    when = f" at {record.verify['at']}{' (cached)' if hit else ''}" if record.verify.get("at") else ""
    files = len(record.files) + len(record.source_files or {})
    meaning = {"sound": "ok", "unsound": "fail"}.get(verdict, "warn")
    ui.echo(f"  {record.id}: ", (verdict, meaning), f"{when}, {files} files, {record.hash}")
