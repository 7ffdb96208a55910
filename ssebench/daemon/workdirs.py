"""The daemon's workspace: every folder it keeps, and keeping them in order.

The workspace holds the source store and the build mirror (``engine/``: see
workspace.py and mirror.py), the fixed tree path where the build and the copied views
are, the copy of the task's support files (``task/``) and one folder per run (its logs,
its overlay folders). This part makes and snapshots runs, keeps old runs' logs within
their budget, frees a full disk before a failure is answered, and makes the whole
workspace again when a tmp cleaner removed it under a running daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import shutil
import sys
from pathlib import Path

from ssebench.checks import Check
from ssebench.daemon import safefs, stale, taskview
from ssebench.daemon.committed import committed_files
from ssebench.daemon.housekeeping import Housekeeping, disk_use
from ssebench.daemon.mirror import BuildMirror
from ssebench.daemon.reach import unreachable
from ssebench.daemon.runtypes import MIN_FREE, CallRun, DaemonContext, RunError
from ssebench.daemon.sandbox import TASK_PATH
from ssebench.daemon.workspace import Snapshot, SourceStore, SyncCancelled, SyncError

_NO_SNAPSHOT = Snapshot({}, 0, 0, 0)


class Workspace:
    """The folders of one daemon under *root*, for the agent's *tree*."""

    def __init__(
        self, ctx: DaemonContext, tree: Path, root: Path, housekeeping: Housekeeping, *, log_budget: int
    ) -> None:
        self.ctx = ctx
        self.tree = tree
        self.root = root
        self.log_budget = log_budget
        self.housekeeping = housekeeping
        self.runs: dict[str, CallRun] = {}  # in start order: the last is the newest
        self._counter = itertools.count(1)
        sandbox = ctx.sandbox
        engine = root / "engine"
        engine.mkdir(mode=0o700, exist_ok=True)
        # Checks may run as another uid (the daemon is root): bwrap, started as that uid,
        # must reach the trees it binds; nothing here is listable or readable by it.
        sandbox.share(root)
        sandbox.share(engine)
        check_reachable(root, sandbox.check_user)
        sandbox.hide("the task folder", ctx.task.dir)
        sandbox.hide("the daemon's workspace", root)
        # git reads the agent's .git in the check sandbox (it can be made to run a program).
        self.store = SourceStore(tree, engine, committed=lambda top: committed_files(top, sandbox))
        self.mirror = BuildMirror(self.store, engine / "mirror", owner=sandbox.check_user)
        # What checks see at SSE_TASK_DIR in the sandbox: a copy of the support files, made
        # now (a snapshot); without the sandbox SSE_TASK_DIR is the task folder itself.
        self.make_task_view()

    @property
    def tree_path(self) -> Path:
        return self.ctx.tree_path

    # -- runs -----------------------------------------------------------------------

    async def prepare(self) -> CallRun:
        """Create a run and snapshot the agent's sources for it (the tree is only read)."""
        run_id = f"r-{next(self._counter)}-{secrets.token_hex(4)}"
        run_dir = self.root / run_id
        self.ensure()
        os.mkdir(run_dir, 0o700)
        os.mkdir(run_dir / "logs", 0o700)
        self.ctx.sandbox.share(run_dir)  # its overlay folders are bound; its logs stay 0700
        run = CallRun(run_id, run_dir, None)
        sync = asyncio.get_running_loop().run_in_executor(None, self.store.sync)
        try:
            run.snapshot = await asyncio.shield(sync)
        except SyncCancelled:
            self.housekeeping.remove_later(run.dir)
            raise RunError("the daemon is shutting down") from None
        except SyncError as exc:
            self.housekeeping.remove_later(run.dir)
            raise RunError(f"could not copy the source tree: {exc}") from None
        except BaseException:
            # Cancelled: the sync still finishes in its thread; then free what it kept.
            sync.add_done_callback(self._release_synced)
            self.housekeeping.remove_later(run.dir)
            raise
        return run

    def _release_synced(self, sync: asyncio.Future[Snapshot]) -> None:
        """A cancelled prepare's sync ended in its thread: free the blobs it kept."""
        if not sync.cancelled() and sync.exception() is None:
            self.store.release(sync.result())

    def discard(self, run: CallRun) -> None:
        """Drop a prepared run that will never execute (its client went away)."""
        self.release(run)
        self.housekeeping.remove_later(run.dir)

    def begin(self, run: CallRun) -> None:
        """*run* starts executing: it is the newest run, and the old ones are pruned."""
        self.runs[run.id] = run
        self.prune()

    def end(self, run: CallRun) -> None:
        """After a run: no view is left, and the blobs only this run needed are freed."""
        self.discard_view()
        self.release(run)

    def release(self, run: CallRun) -> None:
        if run.snapshot is not None:
            snapshot, run.snapshot = run.snapshot, None
            self.housekeeping.in_thread(self.store.release, snapshot)

    def prune(self) -> None:
        """Keep old runs' logs within ``log_budget`` bytes in all, by size, not count.

        Called as a run starts. The old runs are kept newest first while the total of
        their logs stays within the budget; the newest old run (whose log the server
        may still be fetching) always stays. On a full disk every other old run goes.
        """
        runs = list(self.runs.values())  # in start order: the last is the one starting now
        total = 0
        for age, run in enumerate(reversed(runs)):
            total += disk_use(run.dir)
            if age >= 2 and (total > self.log_budget or self.low_on_space()):
                del self.runs[run.id]
                self.housekeeping.remove_later(run.dir)

    # -- views at the fixed tree path -------------------------------------------------

    def overlay_dirs(self, run: CallRun, check: Check) -> tuple[Path, Path]:
        """The upper and work folders of *check*'s overlay: in the run's folder, gone with it."""
        return run.dir / f"view-{check.value}", run.dir / f"work-{check.value}"

    def discard_view(self, run: CallRun | None = None, check: Check | None = None) -> None:
        """Throw away the view at the fixed tree path (never the mirror itself), and the
        overlay folders of *check*."""
        if self.tree_path.exists() and self.mirror.path.exists():
            self.housekeeping.remove_later(self.tree_path)
        if run is not None and check is not None:
            upper, work = self.overlay_dirs(run, check)
            # overlayfs leaves a mode-000 folder in its work folder: make it removable.
            with contextlib.suppress(OSError):  # never through a symlink a check left
                safefs.chmod_path(work / "work", 0o700)
            for folder in (upper, work):
                if folder.exists():
                    self.housekeeping.remove_later(folder)

    # -- a full disk ------------------------------------------------------------------

    def low_on_space(self) -> bool:
        """Is the workspace's filesystem full (under ``MIN_FREE`` bytes or no inode left)?"""
        try:
            st = os.statvfs(self.root)
        except OSError:
            return False
        return st.f_bavail * st.f_frsize < MIN_FREE or (st.f_files > 0 and st.f_favail == 0)

    async def reclaim(self, failed: CallRun | None, *, exclusive: bool) -> None:
        """After a run failed on a full disk: free the disk so that the next run works.

        Done before the failure is answered, not in the background: the failed run,
        what waits in the trash (and the removals under way), then old runs oldest first
        while the disk is still full. *exclusive*: no run is executing nor can start (the
        caller holds the queue), so the newest old run may go too and, if the disk is still full, the
        build mirror (the next build starts from a fresh copy; after a build that ran
        out of space its objects cannot be trusted anyway). Last, the source blobs no
        snapshot needs.
        """
        doomed: list[Path] = []
        if failed is not None:
            self.runs.pop(failed.id, None)
            self.release(failed)
            doomed.append(failed.dir)
        for folder in (self.root, self.mirror.path.parent):
            doomed += folder.glob(".trash-*")  # being removed in the background: now, and wait
        older = list(self.runs.values())  # oldest first
        if not exclusive:
            older = older[:-1]  # the newest may be executing

        def drop_runs() -> None:
            for path in doomed:
                shutil.rmtree(path, ignore_errors=True)
            self.housekeeping.wait_for_removals()  # a folder also being removed is gone only now
            for old in older:
                if not self.low_on_space():
                    break
                self.runs.pop(old.id, None)
                shutil.rmtree(old.dir, ignore_errors=True)

        await asyncio.shield(asyncio.to_thread(drop_runs))
        if exclusive:
            self.mirror.invalidate()
            if self.low_on_space() and self.mirror.path.is_dir():
                self.discard_view()
                trash = self.mirror.path.with_name(f".trash-mirror-{secrets.token_hex(4)}")
                os.rename(self.mirror.path, trash)  # at once: a next build never sees half of it
                await asyncio.shield(asyncio.to_thread(shutil.rmtree, trash, ignore_errors=True))
        with contextlib.suppress(OSError):  # blobs of failed syncs and of ended runs
            await asyncio.shield(asyncio.to_thread(self.store.release, _NO_SNAPSHOT))

    # -- the workspace made again -------------------------------------------------------

    def make_task_view(self) -> None:
        """Copy the support files for the checks (sandbox only): at start, and again when
        the workspace was removed under us."""
        if not self.ctx.sandbox.enabled:
            return
        folder = self.root / "task"
        try:
            self.ctx.task_view = taskview.build(self.ctx.task, folder, TASK_PATH, leave_out=(self.root, self.tree))
            # Checks that run as another uid read the copies (bound read-only).
            self.ctx.sandbox.share(folder)
            self.ctx.sandbox.give(folder)
        except (taskview.TaskViewError, OSError) as exc:
            raise RunError(str(exc)) from None

    def ensure(self) -> None:
        """A tmp cleaner may have removed the workspace (or its engine) under us: make it
        again, with a fresh blob store and mirror, so this call is answered normally."""
        engine = self.mirror.path.parent
        if os.path.isdir(self.store.blobs) and not os.path.islink(engine):
            return
        print(f"ssebench daemon: the workspace {self.root} was removed; recreating it", file=sys.stderr, flush=True)
        try:
            stale.recreate_workspace(self.root)
            with contextlib.suppress(FileExistsError):
                os.mkdir(engine, 0o700)
            self.ctx.sandbox.share(self.root)
            self.ctx.sandbox.share(engine)
            self.store.reset()
            view = self.ctx.task_view
            if view is not None and not view.root.is_dir():
                shutil.rmtree(self.root / "task", ignore_errors=True)
                self.make_task_view()
        except OSError as exc:  # the agent gets one line without the host path; stderr has it
            print(f"ssebench daemon: cannot recreate {self.root}: {exc}", file=sys.stderr, flush=True)
            raise RunError(
                f"the daemon's workspace was removed and cannot be made again: {exc.strerror or exc}"
            ) from None
        self.mirror.invalidate()  # the build engine starts clean (and drops its graph)
        self.runs.clear()  # their logs went with it


def check_reachable(workspace: Path, user: tuple[int, int] | None) -> None:
    """Checks that run as another uid (the daemon is root) need every folder above the
    workspace searchable by that uid: bwrap, as that uid, opens the trees it binds."""
    folder = unreachable(Path(os.path.realpath(workspace)).parent, user)
    if folder is not None:
        assert user is not None
        raise RunError(
            f"checks run as uid {user[0]} and cannot reach the workspace {workspace}: "
            f"{folder} is not searchable by that uid (put the workspace elsewhere, "
            f"e.g. TMPDIR=/tmp)"
        )
