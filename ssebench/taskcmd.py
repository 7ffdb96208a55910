"""``ssebench task check FILE`` and ``ssebench task new DIR``: write a task without guessing.

``check`` runs the daemon's own loader (so it accepts exactly what the daemon accepts) and
then prints, level by level, which checks ``test_patch`` runs for the agent and which it
withholds: the question a task author has to answer before trusting a result. ``new``
writes a small complete task (a C program with one bug, a PoC that triggers it, functional
tests) that passes ``check`` and that ``ssebench grade`` runs, to be edited into a real one.
The skeleton's files are strings here, not package data, so a plain wheel install has them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ssebench import ui
from ssebench.tasknew import new as _new
from ssebench.tasknew import skeleton as skeleton


def register(sub: argparse._SubParsersAction) -> None:
    task = sub.add_parser(
        "task",
        help="check or verify a task file, or start a new task from a skeleton",
        description="Check a task file (task.toml), prove it sound (verify) or write a new task skeleton. "
        "The format: docs/task-format.md.",
    )
    verbs = task.add_subparsers(dest="task_command", metavar="COMMAND", required=True)
    p = verbs.add_parser(
        "check",
        help="validate a task file and show what each difficulty level shows",
        description="Validate FILE with the daemon's loader and print which checks "
        "test_patch runs and withholds at each difficulty level. "
        "Exit 0 valid, 2 not (one line naming the file, key and fault).",
    )
    p.add_argument("file", metavar="FILE", help="the task file (task.toml)")
    p.set_defaults(func=_check)
    p = verbs.add_parser(
        "new",
        help="write a task skeleton into DIR (new or empty)",
        description="Write a small complete task into DIR: task.toml, a C program "
        "with one bug (src/), a PoC and functional tests. DIR must be "
        "new or empty.",
    )
    p.add_argument("dir", metavar="DIR", help="the folder to create (or an empty one)")
    p.add_argument("--id", help="the task id (default: DIR's name, cleaned to [A-Za-z0-9._-])")
    p.set_defaults(func=_new)
    from ssebench import taskverifycmd

    taskverifycmd.register(verbs)


# -- check ----------------------------------------------------------------------------------


def _rel(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def _timeout(seconds: float) -> str:
    return f"timeout {seconds:g} s"


def _network(command: object) -> str:
    # The per-check ``network`` key (sandbox): shown only where a task turns it on.
    return ", network on" if getattr(command, "network", False) else ""


def describe(task) -> list[str]:
    """The lines ``task check`` prints for a valid task (no styles); each kind's words
    are its row's (ssebench/checks.py)."""
    from ssebench.checks import CHECK_ORDER, KINDS, task_checks
    from ssebench.difficulty import DEFAULT_LEVEL, LEVELS

    lines = [
        f"{task.file}: valid task '{task.id}'",
        f"  source: {task.source}",
        f"  description (shown to the agent): {task.description or '(none)'}",
    ]
    lines += [f"  {kind.label}: {_table_line(task, kind)}" for kind in KINDS]
    has = set(task_checks(task))
    lines += ["", "What test_patch runs for the agent at each difficulty level (SSE_DIFFICULTY):"]
    for number, level in LEVELS.items():
        runs = [c for c in level.allowed if c in has]
        withheld = [c for c in level.withheld if c in has]
        names = []
        for check in runs:
            kind, name = check.kind, check.label
            if kind.empty_note is not None and not _files(getattr(task, kind.name)):
                name += f" ({kind.empty_note})"
            elif kind.covered_by is not None and kind.covered_by in runs:
                name += f" (only when the {kind.covered_by.label} fail)"
            names.append(name)
        default = " (default)" if number == DEFAULT_LEVEL else ""
        text = f"  {number} {level.name}{default}: runs {', '.join(names) if names else 'nothing'}"
        if withheld:
            text += f"; withheld: {', '.join(c.label for c in withheld)}"
        lines.append(text)
    every = [c.label for c in CHECK_ORDER if c in has]
    lines.append(f"Final grading (ssebench grade) runs every check the task has: {', '.join(every)}.")
    return lines + ["", *task_dir_lines(task)]


def _files(table: object) -> tuple[Path, ...]:
    """The files of a kind's table (the PoCs'); none for a kind the task lacks."""
    files: tuple[Path, ...] = getattr(table, "files", ())
    return files


def _table_line(task, kind) -> str:
    """What ``task check`` says about *kind*'s table: its row's ``task_line`` filled in,
    or its ``none_line`` when the task has no such table."""
    from ssebench.task import Command

    table = getattr(task, kind.name)
    if table is None:
        return str(kind.none_line)
    command = table if isinstance(table, Command) else table.command
    files = _files(table)
    diff = getattr(table, "diff", None)
    return str(kind.task_line).format(
        run=command.run,
        timeout=_timeout(command.timeout),
        network=_network(command),
        count=len(files),
        files=", ".join(_rel(f, task.dir) for f in files) or "(empty list)",
        diff=_rel(diff, task.dir) if diff is not None else "",
    )


SHOWN_SUPPORT = 20  # support files named one by one; the rest are counted


def task_dir_lines(task) -> list[str]:
    """What checks see at ``SSE_TASK_DIR``: the support files, the hidden parts and the
    step each is shown in, and what is left out (task-format.md, "Support files")."""
    from ssebench.taskfiles import INTENT_STEP, NEVER, POC_RUN, hidden_parts, left_out, support_files

    files = sorted((e for e in support_files(task) if not e.is_dir), key=lambda e: e.rel.parts)
    names = [f"{e.rel} -> {os.readlink(task.dir / e.rel)}" if e.is_link else str(e.rel) for e in files]
    shown = ", ".join(names[:SHOWN_SUPPORT]) or "none"
    if len(names) > SHOWN_SUPPORT:
        shown += f", and {len(names) - SHOWN_SUPPORT} more ({len(names)} files in all)"
    lines = [
        "What checks see at SSE_TASK_DIR (in the sandbox; with --no-sandbox it is the task folder, nothing hidden):",
        f"  support files (read-only, every check): {shown}",
    ]
    parts = hidden_parts(task)
    never = [
        f"{_shown(task, p.path)} ({'the task file' if p.key == 'the task file' else _never_why(p.key)})"
        for p in parts
        if p.step == NEVER
    ]
    lines.append(f"  hidden from every check: {', '.join(never)}")
    pocs = [_shown(task, p.path) for p in parts if p.step == POC_RUN]
    if pocs:
        lines.append(f"  hidden except in its own PoC run: {', '.join(pocs)}")
    intent = [_shown(task, p.path) for p in parts if p.step == INTENT_STEP]
    if intent:
        lines.append(f"  hidden except in the intent step (intent.files): {', '.join(intent)}")
    out = left_out(task)
    if out:
        lines.append(f"  not there: {', '.join(out)}")
    return lines


def _never_why(key: str) -> str:
    return "applied by the daemon from a pipe, never a file" if key == "intent.diff" else key


def _shown(task, path: Path) -> str:
    """*path* relative to the task folder (folders end with ``/``); a PoC outside it by
    its absolute path and where the PoC run sees it."""
    from ssebench.daemon.sandbox import TASK_PATH, poc_path

    rel = os.path.relpath(path, task.dir)
    if rel.split(os.sep)[0] == "..":
        inside = os.path.relpath(poc_path(task.dir, path), TASK_PATH)
        return f"{path} (seen as {inside})"
    return rel + ("/" if path.is_dir() else "")


def _check(args: argparse.Namespace) -> int:
    from ssebench.task import TaskError, load_task

    try:
        task = load_task(args.file)
    except TaskError as exc:
        print(exc, file=sys.stderr)
        return 2
    lines = describe(task)
    ui.echo((lines[0], "ok"))
    for line in lines[1:]:
        ui.echo(line)
    for warning in exposed(task):
        ui.echo(("ssebench task check: warning:", "warn"), f" {warning}", stream=sys.stderr)
    return 0


def exposed(task) -> list[str]:
    """Hidden parts that sit inside the source tree, where the agent can read them."""
    hidden = [("the task file", task.file)]
    if task.pocs is not None:
        hidden += [(f"pocs.files[{i}]", f) for i, f in enumerate(task.pocs.files)]
    if task.intent is not None:
        hidden.append(("intent.diff", task.intent.diff))
    if task.intent is not None:
        hidden += [(f"intent.files[{i}]", f) for i, f in enumerate(task.intent.files)]
    source = task.source.resolve()
    return [
        f"{what} ({path}) is inside the source tree {task.source}: the agent can read it"
        for what, path in hidden
        if path.resolve().is_relative_to(source)
    ] + _support_warnings(task)


def _support_warnings(task) -> list[str]:
    """Support files that are likely mistakes: a diff (the reference fix?) that every
    check, the agent's own build included, can read; a symlink that leads out of the
    task folder (in the sandbox it leads nowhere)."""
    from ssebench.taskfiles import support_files

    out = []
    for entry in support_files(task):
        path = task.dir / entry.rel
        if entry.is_link:
            target = os.readlink(path)
            if os.path.isabs(target) or os.path.normpath(entry.rel.parent / target).split(os.sep)[0] == "..":
                out.append(
                    f"support file {entry.rel} is a symlink to {target}, outside the task folder: "
                    "in the sandbox it leads nowhere (copy it in instead)"
                )
        elif not entry.is_dir and _is_diff(path):
            out.append(
                f"support file {entry.rel} is a diff: every check can read it, the agent's own "
                "build and tests included; keep a reference fix out of the task folder"
            )
    return out


def _is_diff(path: Path) -> bool:
    if path.suffix in (".patch", ".diff"):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.startswith(b"diff --git ") or b"\ndiff --git " in head
