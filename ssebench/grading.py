"""``ssebench grade``: final grading, every check the task has, whatever the level.

Grading runs the checks in this process through the same runner the daemon uses (so
the order, skip rules, copies and timeouts are the same), but never through the
daemon's socket, which the agent can reach, and it ignores ``SSE_DIFFICULTY``.
Exit status: 0 every check passed, 1 a check failed, 2 the task (or tree) is unusable.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench import ui

TAIL_LINES = 40


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "grade",
        help="run every check of a task (final grading; ignores SSE_DIFFICULTY)",
        description="Run every check the task has on a tree and report; exit 0 if all pass, "
                    "1 if one fails, 2 on a bad task.",
    )
    p.add_argument("--task", required=True, metavar="FILE", help="the task file (task.toml)")
    p.add_argument("--tree", metavar="DIR", help="the tree to grade (default: the task's source)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    from ssebench.daemon.cli import add_sandbox_args

    add_sandbox_args(p)
    p.set_defaults(func=run_grade)


@dataclass
class Grade:
    task_id: str
    tree: Path
    checks: list[dict[str, Any]]  # CheckResult.to_json() plus "log_tail" for failed checks

    @property
    def passed(self) -> bool:
        return all(c["state"] == "passed" for c in self.checks)


def grade(task_file: str | Path, tree: str | Path | None = None,
          on_event: Callable[[dict[str, Any]], None] | None = None, *,
          sandbox: Any = None, limits: Any = None) -> Grade:
    """Run every check of the task on *tree*; raises TaskError / RunError / ValueError.

    *on_event* sees each runner event (check_started, check_finished...) as it happens:
    the progress display's feed. *sandbox* / *limits* (ssebench.daemon.sandbox): by
    default the bwrap sandbox (``SSE_NO_SANDBOX=1`` turns it off) and the limits the
    environment sets; raises SandboxUnavailable where namespaces are not permitted.
    """
    import asyncio

    from ssebench.daemon import procs
    from ssebench.daemon.runner import Runner
    from ssebench.difficulty import GRADING
    from ssebench.task import load_task

    task = load_task(task_file)
    root = Path(tree).resolve() if tree else task.source.resolve()
    if not root.is_dir():
        raise ValueError(f"--tree {tree}: is not a folder")
    if sandbox is None:
        from ssebench.daemon.sandbox import detect

        sandbox = detect()
    from ssebench.daemon.sandbox import hide_host_paths

    hide_host_paths(sandbox, task.dir)  # raises ValueError: a bind that would show them
    procs.enable_subreaper()
    workspace = Path(tempfile.mkdtemp(prefix="ssebench-grade-"))
    try:
        runner = Runner(task, root, workspace, heartbeat=3600, sandbox=sandbox, limits=limits, trace=False)

        async def run_all() -> list[dict[str, Any]]:
            run = await runner.prepare()
            checks: list[dict[str, Any]] = []
            async for event in runner.execute(run, GRADING.enabled):
                if on_event is not None:
                    on_event(event)
                if event["event"] == "result":
                    checks = event["checks"]
            for data in checks:
                result = run.results[_check(data["check"])]
                if data["state"] == "failed" and result.log is not None:
                    data["log_tail"] = _tail_lines(result.log.tail())
            return checks

        return Grade(task.id, root, asyncio.run(run_all()))
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def _check(name: str):  # noqa: ANN202
    from ssebench.difficulty import Check

    return Check(name)


def _tail_lines(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").splitlines()
    return "\n".join(lines[-TAIL_LINES:])


def _describe(check: dict[str, Any]) -> str:
    label = _check(check["check"]).label
    state = check["state"]
    if state == "not_run":
        return f"- {label}: not run (the build failed)"
    text = f"- {label}: {'passed' if state == 'passed' else 'FAILED'}"
    details = []
    if check["check"] == "pocs":
        passed, total = check["pocs_passed"], check["pocs_total"]
        if total == 0:
            details.append("the task has none")
        elif state == "passed":
            details.append(f"{passed} of {total}")
        else:
            details.append(f"passed {passed} of {total}; stopped at the first that still triggers the bug")
    if check["covered_by_intent"]:
        details.append("covered by the intent tests")
    if check["timed_out"]:
        details.append("timed out")
    if not check["covered_by_intent"]:
        details.append(ui.seconds(check["elapsed"]))
    return text + f" ({'; '.join(details)})"


def _summary(result: Grade) -> str:
    failed = [c for c in result.checks if c["state"] == "failed"]
    head = "every check passed" if result.passed else f"FAILED ({len(failed)} of {len(result.checks)} checks failed)"
    lines = [f"Grade of task '{result.task_id}' on {result.tree}: {head}", "", "Checks:"]
    lines += [_describe(c) for c in result.checks]
    for c in failed:
        if "log_tail" in c:
            lines += ["", f"Log ({_check(c['check']).label}), last {TAIL_LINES} lines at most:", c["log_tail"]]
    return "\n".join(lines)


def run_grade(args: argparse.Namespace) -> int:
    from ssebench.daemon.cli import sandbox_from_args
    from ssebench.daemon.runner import RunError
    from ssebench.daemon.sandbox import SandboxUnavailable
    from ssebench.task import TaskError

    try:
        sandbox, limits = sandbox_from_args(args)
        with _progress() as on_event:
            result = grade(args.task, args.tree, on_event, sandbox=sandbox, limits=limits)
    except TaskError as exc:
        print(exc, file=sys.stderr)
        return 2
    except (ValueError, RunError, SandboxUnavailable) as exc:
        print(f"ssebench grade: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"task": result.task_id, "tree": str(result.tree), "passed": result.passed,
                          "checks": result.checks}, indent=2))
    else:
        _print_summary(_summary(result))
    return 0 if result.passed else 1


@contextmanager
def _progress() -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """A live line on stderr naming the running check, on a terminal only (pipes and
    logs get nothing, so their text stays the same)."""
    if not ui.is_tty(sys.stderr):
        yield None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=ui.console(sys.stderr), transient=True) as bar:
        current = bar.add_task("grading: copying the tree", total=None)
        done: list[str] = []

        def on_event(event: dict[str, Any]) -> None:
            kind = event.get("event")
            if kind == "check_started":
                bar.update(current, description=f"grading: {_check(event['check']).label}"
                           + (f" (done: {', '.join(done)})" if done else ""))
            elif kind == "check_finished":
                state = {"passed": "passed", "failed": "FAILED"}.get(event["state"], "not run")
                done.append(f"{_check(event['check']).label} {state}")

        yield on_event


def _print_summary(text: str) -> None:
    """The summary with its verdicts coloured on a terminal; the same text elsewhere."""
    if not ui.color_enabled(sys.stdout):
        print(text)
        return
    for line in text.split("\n"):
        if line.startswith("Grade of task "):
            head, sep, verdict = line.rpartition(": ")
            ui.echo(head + sep, (verdict, "ok" if verdict == "every check passed" else "fail"))
        elif line.startswith("- ") and ": " in line:
            label, sep, rest = line.partition(": ")
            state, space, detail = rest.partition(" ")
            meaning = {"passed": "ok", "FAILED": "fail"}.get(state, "dim")
            ui.echo(label + sep, (state, meaning), space, (detail, "dim"))
        elif line.startswith("Log ("):
            ui.echo((line, "head"))
        else:
            ui.echo(line)
