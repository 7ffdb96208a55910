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


def cached_verdict(task: Task, fix: Path | None, *, sandbox: Any = None, limits: Any = None, docker: bool = False):
    """This machine's verdict on *task* with *fix*: cached by content hash, else made now
    (and cached); returns ``(Cached, was it cached)``. Raises VerifyUsageError, RunError."""
    from ssebench.taskverify import verify

    def run() -> dict[str, Any]:
        if docker:
            from ssebench.taskverifydocker import verify_in_docker

            return verify_in_docker(task, fix).to_json()
        return verify(task, fix, sandbox=sandbox, limits=limits).to_json()

    return verdicts.verified(task_hash(task, fix) + (":docker" if docker else ""), run)


def lock(args: argparse.Namespace) -> int:
    from ssebench.daemon.cli import sandbox_from_args
    from ssebench.daemon.runner import RunError
    from ssebench.daemon.sandbox import SandboxUnavailable
    from ssebench.taskverify import VerifyUsageError

    dirs = [Path(d) for d in args.dirs]
    tasks = discover(dirs)
    out = Path(args.output) if args.output else default_path(dirs)
    if out.is_dir():
        raise DatasetError(f"-o {out}: is a folder; give the lock file's path")
    sandbox = limits = None
    if not args.no_verify and not args.docker:
        try:
            sandbox, limits = sandbox_from_args(args)
        except (ValueError, SandboxUnavailable) as exc:
            raise DatasetError(str(exc)) from None
    records: list[LockedTask] = []
    for task in tasks:
        fix = fix_beside(task)
        if args.no_verify:
            cached, hit = verdicts.load(task_hash(task, fix)), True
        else:
            try:
                cached, hit = cached_verdict(task, fix, sandbox=sandbox, limits=limits, docker=args.docker)
            except (VerifyUsageError, RunError, ValueError) as exc:
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
