"""How the daemon runs each check kind: one step function per kind, named by the kind's
row (``CheckKind.step`` in ssebench/checks.py) and called by the runner's sequence.

A step gets the daemon's parts, the run, the check's record (which it fills in: state,
timed out, log, counts) and the tree to run in (a fresh view, or for a kind without
``fresh_view`` the fixed tree path); it yields the heartbeats of its processes. Whether
it runs at all (skipped after a failed build, covered by another check) is the
sequence's decision, from the row's flags.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from ssebench.checks import State
from ssebench.contract import CheckHeartbeat
from ssebench.daemon.build import BuildEngine
from ssebench.daemon.checkproc import CheckExecutor, as_view
from ssebench.daemon.logs import CheckLog
from ssebench.daemon.runtypes import CallRun, CheckRun, DaemonContext, ProcessEnd
from ssebench.daemon.sandbox import TreeView
from ssebench.daemon.views import Views
from ssebench.task import Command, Intent

Tree = Path | TreeView


@dataclass(frozen=True)
class DaemonParts:
    """The parts a step may use (wired once, by the runner)."""

    ctx: DaemonContext
    executor: CheckExecutor
    builder: BuildEngine
    views: Views


async def build_step(parts: DaemonParts, run: CallRun, result: CheckRun, tree: Tree) -> AsyncIterator[CheckHeartbeat]:
    """The build, in the build mirror (build.py); the overlay probe runs meanwhile."""
    parts.views.probe_soon()
    async for event in parts.builder.build(run, result):
        yield event
    await parts.views.overlays()  # the probe's bwrap is gone before the run ends


async def command_step(parts: DaemonParts, run: CallRun, result: CheckRun, tree: Tree) -> AsyncIterator[CheckHeartbeat]:
    """A kind whose table is one command (the functional tests): run it in *tree*."""
    command = getattr(parts.ctx.task, result.check.value)
    assert isinstance(command, Command)
    async for event in parts.executor.run_check(run, result, command, tree):
        yield event


async def pocs_step(parts: DaemonParts, run: CallRun, result: CheckRun, tree: Tree) -> AsyncIterator[CheckHeartbeat]:
    """The PoCs in order, each with ``SSE_POC`` (and, in the sandbox, the one PoC file
    visible); stops at the first that still triggers. A task without PoCs passes."""
    ctx = parts.ctx
    pocs = ctx.task.pocs
    result.pocs_total = len(pocs.files) if pocs else 0
    result.pocs_passed = 0
    if pocs is None or not pocs.files:
        result.state = State.PASSED
        return
    for index, poc in enumerate(pocs.files, start=1):
        log = parts.executor.log(run, f"poc-{index}")
        result.log = log
        env = {"SSE_POC": ctx.sandbox.poc(ctx.task.dir, poc)}
        # The one PoC being run, as a file (bound through any symlink).
        files = {env["SSE_POC"]: Path(os.path.realpath(poc))} if ctx.sandbox.enabled else {}
        end = ProcessEnd()
        async for event in parts.executor.command(result.check, pocs.command, tree, log, end, env=env, files=files):
            yield event
        if not end.ok:
            result.state = State.FAILED
            result.timed_out = end.timed_out
            return
        result.pocs_passed = index
    result.state = State.PASSED


async def intent_step(parts: DaemonParts, run: CallRun, result: CheckRun, tree: Tree) -> AsyncIterator[CheckHeartbeat]:
    """``git apply -p1`` of the intent diff, then the intent command, both with the
    ``[intent] files``; one log (git's output first). A diff that does not apply fails."""
    intent = parts.ctx.task.intent
    assert intent is not None
    view = parts.ctx.task_view
    files = dict(view.intent) if view is not None else {}
    log = parts.executor.log(run, result.check.value)
    result.log = log
    if not await _apply(parts, result, intent, as_view(tree), log, files):
        result.state = State.FAILED
        return
    async for event in parts.executor.run_check(run, result, intent.command, tree, append=True, files=files):
        yield event


async def _apply(
    parts: DaemonParts, result: CheckRun, intent: Intent, view: TreeView, log: CheckLog, files: dict[str, Path]
) -> bool:
    """``git apply -p1`` the diff; git's own output is the log when it fails.

    git runs in the check's sandbox (the tree may carry a hostile ``.git/config``)
    and reads the diff from a pipe, so the diff is never visible as a file.
    """
    env = parts.executor.env(view.lower)
    # Never let git find a repository above the copy (it would apply relative to it).
    env["GIT_CEILING_DIRECTORIES"] = str(Path(env["SSE_TREE"]).parent)
    end = ProcessEnd()
    diff = await asyncio.to_thread(intent.diff.read_bytes)
    async for _ in parts.executor.supervise(
        result.check,
        ["git", "apply", "-p1", "-"],
        view.lower,
        env,
        log,
        end,
        timeout=None,
        view=view,
        stdin_data=diff,
        network=intent.command.network,
        files=files,
    ):
        pass
    return end.ok
