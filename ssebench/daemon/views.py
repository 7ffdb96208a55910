"""Fresh views of the built mirror: each check after the build runs in its own, so no
check sees another's side effects and only builds change the mirror.

A view is a copy-on-write overlay over the mirror (in the sandbox, where the workspace
is not itself on overlayfs: probed once, while the first build runs), else a ``cp -a``
copy (reflinks where the filesystem has them) at the fixed tree path. Either way it is
discarded after its check.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from ssebench.checks import Check
from ssebench.contract import CheckHeartbeat
from ssebench.daemon.checkproc import CheckExecutor
from ssebench.daemon.runtypes import CallRun, DaemonContext, ProcessEnd, RunError
from ssebench.daemon.sandbox import TreeView
from ssebench.daemon.sandbox_setup import overlay_supported
from ssebench.daemon.workdirs import Workspace


class Views:
    """Makes and discards the views of one daemon's mirror."""

    def __init__(self, ctx: DaemonContext, workspace: Workspace, executor: CheckExecutor) -> None:
        self.ctx = ctx
        self.workspace = workspace
        self.executor = executor
        self._overlay: asyncio.Future[bool] | None = None  # views are overlays? (probed once)

    def probe_soon(self) -> None:
        """Start the overlay probe (once) in a thread: while the build runs, not when the
        first view is due."""
        if self._overlay is None:
            self._overlay = asyncio.get_running_loop().run_in_executor(
                None, overlay_supported, self.workspace.mirror.path.parent, self.ctx.sandbox
            )

    async def overlays(self) -> bool:
        """Are views copy-on-write overlays? Probed once (sandboxes only; not where the
        workspace is itself on overlayfs, as in Docker); else views are copies. Also the
        wait for the probe: its bwrap must be gone before a run ends (the sweep after a
        run kills every child the daemon did not start through procs)."""
        self.probe_soon()
        assert self._overlay is not None
        return await asyncio.shield(self._overlay)

    async def make(self, run: CallRun, check: Check) -> Path | TreeView:
        """*check*'s view: an overlay over the mirror (its folders in the run's folder), or
        the fixed tree path where :meth:`fill` copies the mirror."""
        if not await self.overlays():
            return self.ctx.tree_path
        upper, work = self.workspace.overlay_dirs(run, check)
        upper.mkdir(mode=0o700)
        work.mkdir(mode=0o700)
        self.ctx.sandbox.give(upper)
        self.ctx.sandbox.give(work)
        return TreeView.overlay(self.workspace.mirror.path, upper, work)

    async def fill(self, view: Path | TreeView, run: CallRun, check: Check) -> AsyncIterator[CheckHeartbeat]:
        """A copy view: ``cp -a`` of the mirror, with heartbeats (an overlay needs nothing)."""
        if isinstance(view, TreeView):
            return
        self.workspace.discard_view()
        log = self.executor.log(run, f"copy-{check.value}")
        end = ProcessEnd()
        src, dst = self.workspace.mirror.path, self.ctx.tree_path
        argv = ["cp", "-a", "--reflink=auto", "--", str(src), str(dst)]
        env = self.executor.env(dst)
        async for event in self.executor.supervise(check, argv, self.workspace.root, env, log, end, timeout=None):
            yield event
        if not end.ok:
            detail = log.stderr.read_text("utf-8", "replace").strip().splitlines()
            raise RunError("could not copy the source tree: " + (detail[-1] if detail else "cp failed"))

    def discard(self, run: CallRun, check: Check) -> None:
        self.workspace.discard_view(run, check)
