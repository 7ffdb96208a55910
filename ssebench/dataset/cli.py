"""``ssebench dataset lock|verify|import``: pin a dataset, check it, bring one in.

lock: every task's files, tree and fix by content hash, its verify verdict and when,
into ``ssebench.lock`` (written atomically). verify: every file that changed since,
named. import: a public benchmark's records as task folders (ssebench/dataset/adapters).
The format of the lock and the adapters' field maps: docs/datasets.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ssebench import ui

IMPORT_FORMATS = ("arvo",)


def register(sub: argparse._SubParsersAction) -> None:
    dataset = sub.add_parser(
        "dataset",
        help="lock a dataset of tasks, check it against its lock, or import one",
        description="Pin a dataset of tasks (ssebench.lock), check that nothing changed since, or "
        "turn a public benchmark's records into task folders. The formats: docs/datasets.md.",
    )
    verbs = dataset.add_subparsers(dest="dataset_command", metavar="COMMAND", required=True)
    p = verbs.add_parser(
        "lock",
        help="write ssebench.lock: every task's files by content hash and its verify verdict",
        description="Find every task in DIR... (a task folder, or folders holding task folders), "
        "verify each (with its fix beside its folder, <folder>.fix.patch, when there is one; a "
        "verdict already made on this machine for the same bytes is reused) and write the lock, "
        "atomically. Exit 0 written and every task sound, 1 written but a task is unsound "
        "(named), 2 bad input (nothing written).",
    )
    p.add_argument("dirs", nargs="+", metavar="DIR", help="a dataset folder or a task folder")
    p.add_argument(
        "-o",
        "--output",
        metavar="LOCK",
        help="the lock file (default: ssebench.lock in DIR, or the DIRs' common folder)",
    )
    p.add_argument("--no-verify", action="store_true", help="do not verify; record only verdicts already cached")
    p.add_argument("--docker", action="store_true", help="verify in the task image and record its digest")
    from ssebench.daemon.cli import add_sandbox_args

    add_sandbox_args(p)
    p.set_defaults(func=_lock)
    p = verbs.add_parser(
        "verify",
        help="name every file that changed since the lock was written",
        description="Compare every task of LOCK with its files now. Exit 0 nothing changed, 1 "
        "something did (every file named), 2 a lock that does not read or is from another dataset.",
    )
    p.add_argument("lock", nargs="?", default="ssebench.lock", metavar="LOCK", help="default: ./ssebench.lock")
    p.add_argument(
        "--docker",
        action="store_true",
        help="also name every task verified in a task image other than the one this ssebench builds "
        "(built or reused as run --docker does)",
    )
    p.set_defaults(func=_verify)
    p = verbs.add_parser(
        "import",
        help="turn a public benchmark's records into task folders",
        description="Read the records of FORMAT in SRC and write one task folder per record into "
        "DEST (with its fix beside it, <id>.fix.patch). Formats: "
        + ", ".join(IMPORT_FORMATS)
        + " (docs/datasets.md: what maps where, what cannot).",
    )
    p.add_argument("format", choices=IMPORT_FORMATS, metavar="FORMAT", help=f"one of: {', '.join(IMPORT_FORMATS)}")
    p.add_argument("src", metavar="SRC", help="the benchmark's records on disk (docs/datasets.md)")
    p.add_argument("dest", metavar="DEST", help="the dataset folder to write the tasks into")
    p.add_argument("--id", dest="ids", action="append", metavar="ID", help="import only this record (repeatable)")
    p.set_defaults(func=_import)


def _fail(message: str) -> int:
    print(f"ssebench dataset: {message}", file=sys.stderr)
    return 2


def _lock(args: argparse.Namespace) -> int:
    from ssebench.dataset import lockcmd
    from ssebench.dataset.lockfile import DatasetError

    try:
        return lockcmd.lock(args)
    except DatasetError as exc:
        return _fail(str(exc))


def _verify(args: argparse.Namespace) -> int:
    from ssebench.dataset.lock import changes
    from ssebench.dataset.lockfile import DatasetError, read

    try:
        lock = read(Path(args.lock))
        changed = changes(lock)
        if args.docker:
            from ssebench.dataset.lock import image_changes
            from ssebench.taskverify import VerifyUsageError
            from ssebench.taskverifydocker import task_image

            try:
                changed += image_changes(lock, task_image().digest)
            except VerifyUsageError as exc:
                raise DatasetError(str(exc)) from None
    except DatasetError as exc:
        return _fail(str(exc))
    if not changed:
        ui.echo(
            (f"{lock.path}: every file as locked", "ok"),
            f" ({len(lock.tasks)} task{'s' if len(lock.tasks) != 1 else ''}, locked {lock.created})",
        )
        return 0
    ui.echo((f"{lock.path}: {len(changed)} changed since it was locked", "fail"), f" ({lock.created}):")
    for line in changed:
        ui.echo(f"  {line}")
    return 1


def _import(args: argparse.Namespace) -> int:
    from ssebench.dataset.adapters import run_import
    from ssebench.dataset.lockfile import DatasetError

    try:
        return run_import(args.format, Path(args.src), Path(args.dest), args.ids)
    except DatasetError as exc:
        return _fail(str(exc))
