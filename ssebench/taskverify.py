"""``ssebench task verify``: prove a task sound on this machine before anyone runs it.

A task is sound when, on its unfixed tree, the build passes, every PoC triggers the bug
(its check fails), the functional tests pass and the intent tests fail; and, with the
reference fix applied, every check passes. Each expectation is one check result of the
real :class:`~ssebench.daemon.runner.Runner` (as ``ssebench grade`` drives it, in this
process, every check, sandboxed, with the task's own timeouts): there is no second way
of running a check.

The PoC step stops at the first PoC that still triggers, so on the unfixed tree one run
of it shows only the first PoC. Each PoC is therefore run on its own: one run of the
real PoC step per PoC, on the same runner (the task it runs with names that one PoC in
``[pocs] files``; every PoC stays hidden from the checks, since the view of the task
folder was made from the whole task). The build before each of those runs is the
daemon's incremental one: the tree did not change, so nothing is rebuilt. ``repeat``
runs everything again in a fresh workspace (a clean build each time), and a check whose
result changed between runs is flaky.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.checks import CHECK_ORDER, Check, State
from ssebench.contract import CheckResult, Result
from ssebench.task import Task

UNFIXED, FIXED = "unfixed", "fixed"
Key = tuple[str, Check, str | None]  # (tree, check, PoC file): one expectation

# What an expectation that is not met means: (tree, check) -> the problem, in words.
PROBLEMS = {
    (UNFIXED, Check.BUILD): "the build fails on the unfixed tree",
    (UNFIXED, Check.POCS): "PoC {poc} does not trigger the bug on the unfixed tree (its check passes)",
    (UNFIXED, Check.FUNCTIONAL): "the functional tests fail on the unfixed tree, without any change",
    (UNFIXED, Check.INTENT): "the intent tests pass on the unfixed tree: they do not test the fix",
    (FIXED, Check.BUILD): "the build fails with the fix applied",
    (FIXED, Check.POCS): "PoC {poc} still triggers the bug with the fix applied",
    (FIXED, Check.FUNCTIONAL): "the functional tests fail with the fix applied",
    (FIXED, Check.INTENT): "the intent tests fail with the fix applied",
}
# Expectations that only warn when they are not met.
WARN_ONLY = {(UNFIXED, Check.INTENT)}


class VerifyUsageError(ValueError):
    """Bad input (a fix that does not apply, a PoC missing...): one line, exit status 2."""


@dataclass(frozen=True)
class Expectation:
    """One expected check result on one tree, with what each run gave."""

    tree: str  # UNFIXED or FIXED
    check: Check
    poc: str | None  # the PoC file (relative to the task folder), for a PoC's own run
    expected: State
    got: tuple[State, ...]  # one per run
    seconds: tuple[float, ...]
    timed_out: tuple[bool, ...]

    @property
    def met(self) -> bool:
        return all(g is self.expected for g in self.got)

    @property
    def flaky(self) -> bool:
        return len(set(self.got)) > 1

    @property
    def warn_only(self) -> bool:
        return (self.tree, self.check) in WARN_ONLY

    @property
    def subject(self) -> str:
        return f"PoC {self.poc}" if self.poc is not None else self.check.label

    def problem(self) -> str:
        """What it means that this expectation is not met."""
        if State.NOT_RUN in self.got:
            return f"{self.subject} did not run on the {self.tree} tree (the build failed)"
        text = PROBLEMS[(self.tree, self.check)].format(poc=self.poc)
        if any(self.timed_out):
            text += f" (timed out after {max(self.seconds):g} s)"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "tree": self.tree,
            "check": self.check.value,
            "poc": self.poc,
            "expected": self.expected.value,
            "got": [g.value for g in self.got],
            "seconds": list(self.seconds),
            "timed_out": list(self.timed_out),
            "met": self.met,
            "flaky": self.flaky,
        }


@dataclass(frozen=True)
class TaskVerdict:
    """The result of ``task verify``: every expectation, its problems and warnings."""

    task_id: str
    task_file: Path
    fix: Path | None
    repeat: int
    expectations: tuple[Expectation, ...]
    image: str | None = None  # the task image's digest, when verified in Docker

    @property
    def problems(self) -> list[str]:
        out = [e.problem() for e in self.expectations if not e.met and not e.warn_only and not e.flaky]
        out += [
            f"flaky: {e.subject} on the {e.tree} tree gave {', '.join(g.value for g in e.got)} in {len(e.got)} runs"
            for e in self.expectations
            if e.flaky
        ]
        return out

    @property
    def warnings(self) -> list[str]:
        out = [e.problem() for e in self.expectations if not e.met and e.warn_only and not e.flaky]
        if not any(e.check is Check.POCS for e in self.expectations):
            out.append("the task has no PoCs: nothing shows that the bug is there, or that a fix removes it")
        if self.fix is None:
            out.append("no --fix given: only the unfixed tree was verified")
        return out

    @property
    def sound(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task_id,
            "file": str(self.task_file),
            "fix": str(self.fix) if self.fix is not None else None,
            "repeat": self.repeat,
            "sound": self.sound,
            "expectations": [e.to_json() for e in self.expectations],
            "problems": self.problems,
            "warnings": self.warnings,
            "image": self.image,
        }


def task_file(path: str | Path) -> Path:
    """TASK as given: a task file, or a folder holding ``task.toml``."""
    p = Path(path)
    return p / "task.toml" if p.is_dir() else p


def fixed_tree(task: Task, patch: Path, dst: Path) -> Path:
    """A copy of the task's source at *dst* with *patch* applied (``git apply -p1``).

    Raises VerifyUsageError with git's own message when the patch does not apply."""
    if not patch.is_file():
        raise VerifyUsageError(f"--fix {patch}: no such file")
    shutil.copytree(task.source, dst, symlinks=True)
    # Not a repository of its own: git must not look above the copy for one.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(dst.parent)}
    done = subprocess.run(
        ["git", "apply", "-p1", str(patch.resolve())],
        cwd=dst,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        message = " ".join(done.stderr.split()) or f"git apply exited {done.returncode}"
        raise VerifyUsageError(f"--fix {patch}: does not apply to {task.source}: {message}")
    return dst


def one_poc(task: Task, poc: Path) -> Task:
    """*task* with *poc* as its only PoC: the PoC step then runs that PoC alone."""
    assert task.pocs is not None
    return dataclasses.replace(task, pocs=dataclasses.replace(task.pocs, files=(poc,)))


def verify(
    task: Task,
    fix: Path | None = None,
    *,
    repeat: int = 1,
    sandbox: Any = None,
    limits: Any = None,
    on_check: Callable[[str, CheckResult], None] | None = None,
) -> TaskVerdict:
    """Run every expectation *repeat* times on each tree; raises VerifyUsageError, RunError.

    *on_check* sees each check result as it ends (the progress line)."""
    from ssebench.daemon import procs
    from ssebench.daemon.hostpaths import hide_host_paths

    if repeat < 1:
        raise VerifyUsageError(f"--repeat must be at least 1, got {repeat}")
    if sandbox is None:
        from ssebench.daemon.sandbox_setup import detect

        sandbox = detect()
    hide_host_paths(sandbox, task.dir)
    procs.enable_subreaper()
    from ssebench.daemon.reach import temp_base

    base = temp_base(sandbox.check_user)  # the checks' uid must reach the workspaces (as grade's)
    holder = Path(tempfile.mkdtemp(prefix="ssebench-verify-", dir=base))
    try:
        trees = {UNFIXED: task.source.resolve()}
        if fix is not None:
            trees[FIXED] = fixed_tree(task, fix, holder / "fixed")
        runs: dict[Key, list[CheckResult]] = {}
        for _ in range(repeat):
            for label, root in trees.items():
                # Its own temporary folder, as grade's: the checks' uid must reach it.
                workspace = Path(tempfile.mkdtemp(prefix=f"ssebench-verify-{label}-", dir=base))
                try:
                    got = asyncio.run(_one_tree(task, root, workspace, sandbox, limits, label, on_check))
                finally:
                    shutil.rmtree(workspace, ignore_errors=True)
                for key, result in got.items():
                    runs.setdefault(key, []).append(result)
    finally:
        shutil.rmtree(holder, ignore_errors=True)
    return TaskVerdict(task.id, task.file, fix, repeat, tuple(_expectations(task, runs)))


def _expectations(task: Task, runs: dict[Key, list[CheckResult]]) -> Iterable[Expectation]:
    """In table order: the unfixed tree first; on each, the checks in run order, the PoCs
    in the task's order (as they were run)."""
    order = sorted(runs, key=lambda k: (k[0] != UNFIXED, CHECK_ORDER.index(k[1])))
    for tree, check, poc in order:
        results = runs[(tree, check, poc)]
        expected = State.PASSED if tree == FIXED or check in (Check.BUILD, Check.FUNCTIONAL) else State.FAILED
        yield Expectation(
            tree,
            check,
            poc,
            expected,
            tuple(r.state for r in results),
            tuple(r.elapsed for r in results),
            tuple(r.timed_out for r in results),
        )


async def _one_tree(
    task: Task,
    root: Path,
    workspace: Path,
    sandbox: Any,
    limits: Any,
    label: str,
    on_check: Callable[[str, CheckResult], None] | None,
) -> dict[Key, CheckResult]:
    """Every expectation of one tree, through one runner: the build and the functional
    tests, then the intent tests, then each PoC on its own (module docstring)."""
    from ssebench.daemon.runner import Runner

    runner = Runner(task, root, workspace, heartbeat=3600, sandbox=sandbox, limits=limits)
    got: dict[Key, CheckResult] = {}

    async def run(checks: set[Check], poc: str | None = None) -> None:
        call = await runner.prepare()
        async for event in runner.execute(call, checks):
            if not isinstance(event, Result):
                continue
            for result in event.checks:
                key = (label, result.check, poc if result.check is Check.POCS else None)
                if result.check in checks and key not in got:  # the first build is the build's
                    got[key] = result
                    if on_check is not None:
                        on_check(label, result)

    await run({Check.BUILD, Check.FUNCTIONAL} if task.functional is not None else {Check.BUILD})
    if task.intent is not None:
        await run({Check.INTENT})
    for poc in task.pocs.files if task.pocs is not None else ():
        runner.ctx.task = one_poc(task, poc)
        try:
            await run({Check.POCS}, os.path.relpath(poc, task.dir))
        finally:
            runner.ctx.task = task
    return got
