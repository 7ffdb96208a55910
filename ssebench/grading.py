"""``ssebench grade``: final grading, every check the task has, whatever the level.

Grading runs the checks in this process through the same runner the daemon uses (so
the order, skip rules, copies and timeouts are the same), but never through the
daemon's socket, which the agent can reach, and it ignores ``SSE_DIFFICULTY``.
Exit status: 0 every check passed, 1 a check failed, 2 the task (or tree) is unusable.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ssebench import contract, phrases, ui
from ssebench.checks import Check, State
from ssebench.contract import CheckResult
from ssebench.difficulty import GRADING

if TYPE_CHECKING:
    from ssebench.runrecord import Grading
    from ssebench.task import Task

TAIL_LINES = 40
STOP_POLL_SECONDS = 0.1
T = TypeVar("T")


class GradingStopped(Exception):
    """grade() was asked to stop (its *stop* event): the checks were cancelled, nothing is left."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "grade",
        help="run every check of a task (final grading; ignores SSE_DIFFICULTY)",
        description="Run every check the task has on a tree and report; exit 0 if all pass, "
        "1 if one fails, 2 on a bad task.",
    )
    p.add_argument("--task", required=True, metavar="FILE", help="the task file (task.toml)")
    p.add_argument("--tree", metavar="DIR", help="the tree to grade (default: the task's source)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--logs",
        type=Path,
        metavar="DIR",
        help=f"save every check's whole log in DIR (new or empty) as CHECK.log; "
        f"the summary shows the last {TAIL_LINES} lines of a failed one",
    )
    from ssebench.daemon.cli import add_sandbox_args

    add_sandbox_args(p)
    p.set_defaults(func=run_grade)


@dataclass
class Grade:
    task_id: str
    tree: Path
    results: tuple[CheckResult, ...]
    log_tails: dict[Check, str] = field(default_factory=dict)  # the failed checks' log tails
    log_files: dict[Check, Path] = field(default_factory=dict)  # whole logs saved (grade --logs DIR)

    @property
    def passed(self) -> bool:
        return all(r.state is State.PASSED for r in self.results)

    @property
    def checks(self) -> list[dict[str, Any]]:
        """``--json``'s checks: the daemon's ``CHECK`` objects plus ``log_tail`` for failed ones."""
        return [
            {**r.to_json(), **({"log_tail": self.log_tails[r.check]} if r.check in self.log_tails else {})}
            for r in self.results
        ]

    def record(self) -> Grading:
        """The run record's ``grading`` (``--json``'s document, typed)."""
        from ssebench.runrecord import CheckGrade, Grading

        checks = tuple(CheckGrade.model_validate(c) for c in self.checks)
        return Grading(task=self.task_id, tree=str(self.tree), passed=self.passed, checks=checks)


def grade(
    task_file: str | Path | Task,
    tree: str | Path | None = None,
    on_event: Callable[[contract.Event], None] | None = None,
    *,
    sandbox: Any = None,
    limits: Any = None,
    stop: threading.Event | None = None,
    logs: Path | None = None,
) -> Grade:
    """Run every check of the task (a file, or a loaded Task) on *tree*; raises TaskError /
    RunError / ValueError.

    *on_event* sees each runner event (check_started, check_finished...) as it happens:
    the progress display's feed. *sandbox* / *limits* (ssebench.daemon.sandbox / .limits): by
    default the bwrap sandbox (``SSE_NO_SANDBOX=1`` turns it off) and the limits the
    environment sets; raises SandboxUnavailable where namespaces are not permitted.
    *stop*: set from another thread, the checks are cancelled and GradingStopped is raised
    once their processes and copies are gone (the entrypoint grades in a worker thread).
    *logs*: a folder (made if missing) to keep each check's whole log in, as ``CHECK.log``.
    """
    from ssebench.daemon import procs
    from ssebench.daemon.runner import Runner
    from ssebench.task import Task, load_task

    task = task_file if isinstance(task_file, Task) else load_task(task_file)
    root = Path(tree).resolve() if tree else task.source.resolve()
    if not root.is_dir():
        raise ValueError(f"--tree {tree}: is not a folder")
    if sandbox is None:
        from ssebench.daemon.sandbox_setup import detect

        sandbox = detect()
    from ssebench.daemon.hostpaths import hide_host_paths

    hide_host_paths(sandbox, task.dir)  # raises ValueError: a bind that would show them
    procs.enable_subreaper()
    from ssebench.daemon.reach import temp_base

    workspace = Path(tempfile.mkdtemp(prefix="ssebench-grade-", dir=temp_base(sandbox.check_user)))
    try:
        runner = Runner(task, root, workspace, heartbeat=3600, sandbox=sandbox, limits=limits, trace=False)
        return asyncio.run(_unless_stopped(_run_all(runner, task.id, root, on_event, logs), stop))
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


async def _unless_stopped(work: Coroutine[Any, Any, T], stop: threading.Event | None) -> T:
    """*work*, cancelled (and awaited to its end) when *stop* is set."""
    if stop is None:
        return await work
    task = asyncio.ensure_future(work)
    while not task.done():
        await asyncio.wait({task}, timeout=STOP_POLL_SECONDS)
        if stop.is_set() and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            raise GradingStopped("grading was stopped")
    return task.result()


async def _run_all(
    runner: Any, task_id: str, root: Path, on_event: Callable[[contract.Event], None] | None, logs: Path | None
) -> Grade:
    """Every check through the runner, its typed events (ssebench/contract.py) as they come;
    with *logs*, each check's whole log copied there before the workspace goes."""
    run = await runner.prepare()
    results: tuple[CheckResult, ...] = ()
    async for event in runner.execute(run, GRADING.enabled):
        if on_event is not None:
            on_event(event)
        if isinstance(event, contract.Result):
            results = event.checks
    tails = {
        r.check: _tail_lines(log.tail())
        for r in results
        if r.state is State.FAILED and (log := run.results[r.check].log) is not None
    }
    saved = {} if logs is None else await asyncio.to_thread(save_logs, run.results, logs)
    return Grade(task_id, root, results, tails, saved)


def save_logs(checks: Mapping[Check, Any], folder: Path) -> dict[Check, Path]:
    """Each check's log (stdout, then stderr, as the daemon serves it) streamed into
    ``folder/CHECK.log`` (made if missing), each written whole or not at all; the files."""
    folder = folder.absolute()
    folder.mkdir(parents=True, exist_ok=True)
    saved = {}
    for check, run in checks.items():
        if run.log is None:
            continue
        target = folder / f"{check.value}.log"
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in run.log.chunks():
                    out.write(chunk)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        saved[check] = target
    return saved


def _tail_lines(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").splitlines()
    return "\n".join(lines[-TAIL_LINES:])


def describe_check(result: CheckResult) -> str:
    """The spec's check line (ssebench/phrases.py), with grade's timings."""
    extra = []
    if result.state is not State.NOT_RUN:
        if result.timed_out:
            extra.append("timed out")
        if not result.covered_by_intent:
            extra.append(ui.seconds(result.elapsed))
    return phrases.check_line(result, extra)


def _summary(result: Grade) -> str:
    failed = [r for r in result.results if r.state is State.FAILED]
    lines = [
        f"Grade of task '{result.task_id}' on {result.tree}: {phrases.grade_verdict(result.results)}",
        "",
        "Checks:",
    ]
    lines += [describe_check(r) for r in result.results]
    for r in failed:
        if r.check in result.log_tails:
            whole = result.log_files.get(r.check)
            where = f"all of it: {whole}" if whole else "--logs DIR saves all of it"
            head = f"Log ({r.check.label}), last {TAIL_LINES} lines at most ({where}):"
            lines += ["", head, result.log_tails[r.check]]
    if result.log_files:
        folder = next(iter(result.log_files.values())).parent
        lines += ["", f"Whole logs in {folder}: {', '.join(p.name for p in result.log_files.values())}"]
    return "\n".join(lines)


def run_grade(args: argparse.Namespace) -> int:
    from ssebench.daemon.cli import sandbox_from_args
    from ssebench.daemon.runner import RunError
    from ssebench.daemon.sandbox import SandboxUnavailable
    from ssebench.task import TaskError

    if args.logs is not None and (problem := _not_empty(args.logs)):
        print(f"ssebench grade: --logs {args.logs}: {problem}", file=sys.stderr)
        return 2
    try:
        sandbox, limits = sandbox_from_args(args)
        with _progress() as on_event, _term_as_interrupt():
            result = grade(args.task, args.tree, on_event, sandbox=sandbox, limits=limits, logs=args.logs)
    except _Terminated:
        return 128 + signal.SIGTERM
    except TaskError as exc:
        print(exc, file=sys.stderr)
        return 2
    except (ValueError, RunError, SandboxUnavailable) as exc:
        print(f"ssebench grade: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {"task": result.task_id, "tree": str(result.tree), "passed": result.passed, "checks": result.checks},
                indent=2,
            )
        )
    else:
        _print_summary(_summary(result))
    return 0 if result.passed else 1


def _not_empty(folder: Path) -> str | None:
    """Why *folder* cannot take the logs (it must be new or an empty folder), or None."""
    if not folder.exists() and not folder.is_symlink():
        return None
    if not folder.is_dir():
        return "is not a folder"
    return "is not empty (give a new or empty folder)" if any(folder.iterdir()) else None


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be: the checks are cancelled, their copies removed."""


@contextmanager
def _term_as_interrupt() -> Iterator[None]:
    """SIGTERM ends grading as Ctrl-C does (its default would kill us before the workspace
    and the sandbox's /etc copy are removed: issue 31)."""

    def on_term(signum: int, frame: object) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, on_term) if threading.current_thread() is threading.main_thread() else None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


@contextmanager
def _progress() -> Iterator[Callable[[contract.Event], None] | None]:
    """A live line on stderr naming the running check, on a terminal only (pipes and
    logs get nothing, so their text stays the same)."""
    if not ui.is_tty(sys.stderr):
        yield None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=ui.console(sys.stderr),
        transient=True,
    ) as bar:
        current = bar.add_task("grading: copying the tree", total=None)
        done: list[str] = []

        def on_event(event: contract.Event) -> None:
            if isinstance(event, contract.CheckStarted):
                bar.update(
                    current,
                    description=f"grading: {event.check.label}" + (f" (done: {', '.join(done)})" if done else ""),
                )
            elif isinstance(event, contract.CheckFinished):
                done.append(f"{event.check.label} {phrases.state_word(event.result.state)}")

        yield on_event


_MEANINGS = {phrases.state_word(State.PASSED): "ok", phrases.state_word(State.FAILED): "fail"}


def _print_summary(text: str) -> None:
    """The summary with its verdicts coloured on a terminal; the same text elsewhere."""
    if not ui.color_enabled(sys.stdout):
        print(text)
        return
    for line in text.split("\n"):
        if line.startswith("Grade of task "):
            head, sep, verdict = line.rpartition(": ")
            ui.echo(head + sep, (verdict, "ok" if verdict == phrases.GRADE_PASSED else "fail"))
        elif line.startswith("- ") and ": " in line:
            label, sep, rest = line.partition(": ")
            state, space, detail = rest.partition(" ")
            meaning = _MEANINGS.get(state, "dim")
            ui.echo(label + sep, (state, meaning), space, (detail, "dim"))
        elif line.startswith("Log ("):
            ui.echo((line, "head"))
        else:
            ui.echo(line)
