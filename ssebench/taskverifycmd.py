"""``ssebench task verify TASK [--fix PATCH] [--repeat N] [--json] [--docker]``: the
command line around :mod:`ssebench.taskverify` (the table, the verdict, ``--json``).

Exit status: 0 sound, 1 unsound (each problem named), 2 usage (a task that does not
load, a fix that does not apply: the loader's or git's message).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ssebench import ui
from ssebench.contract import CheckResult
from ssebench.taskverify import Expectation, TaskVerdict

HEADER = ("tree", "check", "PoC", "expected", "got", "time")


def register(verbs: argparse._SubParsersAction) -> None:
    p = verbs.add_parser(
        "verify",
        help="prove a task sound: build it and run every check on the unfixed and the fixed tree",
        description="Run every check of TASK through the daemon's runner and sandbox, with the task's "
        "own timeouts, and compare each result with what a sound task gives: on the unfixed tree "
        "the build passes, every PoC triggers (its check fails), the functional tests pass and the "
        "intent tests fail; with --fix applied every check passes. Exit 0 sound, 1 unsound (each "
        "problem named), 2 usage (a task that does not load, a fix that does not apply).",
    )
    p.add_argument("task", metavar="TASK", help="the task file (task.toml) or its folder")
    p.add_argument("--fix", metavar="PATCH", help="the reference fix: a -p1 diff against the task's source")
    p.add_argument(
        "--repeat",
        metavar="N",
        type=int,
        default=1,
        help="run each check N times on each tree and name every check whose result changed (flaky)",
    )
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object (docs/task-format.md)")
    p.add_argument(
        "--docker",
        action="store_true",
        help="verify inside the task image (ssebench's Docker image, as jobs run it) and record its digest",
    )
    from ssebench.daemon.cli import add_sandbox_args

    add_sandbox_args(p)
    p.set_defaults(func=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    from ssebench.daemon.runner import RunError
    from ssebench.daemon.sandbox import SandboxUnavailable
    from ssebench.task import TaskError, load_task
    from ssebench.taskverify import VerifyUsageError, task_file, verify

    try:
        task = load_task(task_file(args.task))
    except TaskError as exc:
        print(exc, file=sys.stderr)
        return 2
    fix = Path(args.fix) if args.fix else None
    sandbox = None
    try:
        if args.docker:
            from ssebench.taskverifydocker import verify_in_docker

            verdict = verify_in_docker(task, fix, repeat=args.repeat)
        else:
            from ssebench.daemon.cli import sandbox_from_args

            sandbox, limits = sandbox_from_args(args)
            with _progress() as on_check:
                verdict = verify(task, fix, repeat=args.repeat, sandbox=sandbox, limits=limits, on_check=on_check)
    except (VerifyUsageError, ValueError, RunError, SandboxUnavailable) as exc:
        print(f"ssebench task verify: {exc}", file=sys.stderr)
        return 2
    # This machine's verdict on these bytes, sandboxed (dataset lock reuses it).
    if args.docker or (sandbox is not None and sandbox.enabled):
        from ssebench.dataset import verdicts
        from ssebench.dataset.hashing import task_hash

        verdicts.save(task_hash(task, fix) + (":docker" if args.docker else ""), verdict.to_json())
    if args.json:
        print(json.dumps(verdict.to_json(), indent=2))
    else:
        print_verdict(verdict)
    return 0 if verdict.sound else 1


def rows(verdict: TaskVerdict) -> list[tuple[str, ...]]:
    """The table's rows (no header): one per expectation."""
    return [
        (e.tree, e.check.label, e.poc or "-", e.expected.value, _got(e), _time(e.seconds)) for e in verdict.expectations
    ]


def _got(e: Expectation) -> str:
    words = [g.value + (" (timed out)" if t else "") for g, t in zip(e.got, e.timed_out, strict=True)]
    if len(set(words)) == 1:
        return words[0] + (f" x{len(words)}" if len(words) > 1 else "")
    return ", ".join(words)


def _time(values: tuple[float, ...]) -> str:
    if len(values) == 1 or min(values) == max(values):
        return ui.seconds(values[0])
    return f"{ui.seconds(min(values))[:-2]}-{ui.seconds(max(values))}"


def lines(verdict: TaskVerdict) -> list[str]:
    """What ``task verify`` prints (no styles)."""
    fix = f"with fix {verdict.fix}" if verdict.fix is not None else "without a fix"
    runs = "1 run" if verdict.repeat == 1 else f"{verdict.repeat} runs"
    head = f"Verify of task '{verdict.task_id}' ({verdict.task_file}), {fix}, {runs} of each check"
    if verdict.image is not None:
        head += f", in image {verdict.image}"
    table = [HEADER, *rows(verdict)]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
    out = [head + ":"]
    out += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    problems, warnings = verdict.problems, verdict.warnings
    if problems:
        out.append(f"TaskVerdict: UNSOUND ({len(problems)} problem{'s' if len(problems) > 1 else ''})")
        out += [f"  - {p}" for p in problems]
    else:
        out.append("TaskVerdict: sound")
    if warnings:
        out.append("Warnings:")
        out += [f"  - {w}" for w in warnings]
    return out


def print_verdict(verdict: TaskVerdict) -> None:
    for line in lines(verdict):
        if line.startswith("TaskVerdict: "):
            word = line[len("TaskVerdict: ") :]
            ui.echo("TaskVerdict: ", (word, "ok" if verdict.sound else "fail"))
        elif line == "Warnings:":
            ui.echo((line, "warn"))
        else:
            ui.echo(line)


@contextmanager
def _progress() -> Iterator[Callable[[str, CheckResult], None] | None]:
    """A live line on stderr naming the last check that ended, on a terminal only."""
    if not ui.is_tty(sys.stderr):
        yield None
        return
    with ui.console(sys.stderr).status("verifying: building the unfixed tree") as status:

        def on_check(tree: str, result: CheckResult) -> None:
            status.update(f"verifying: {tree} tree, {result.check.label} {result.state.value}")

        yield on_check
