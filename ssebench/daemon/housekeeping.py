"""The runner's housekeeping: its workspace (made again when a tmp cleaner removed it),
old runs' logs within their budget, a full disk, and trees removed in the background.

:class:`Housekeeping` is the base of :class:`ssebench.daemon.runner.Runner`: it declares
the state the runner's parts share (set in ``Runner.__init__``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from ssebench.checks import Check
from ssebench.daemon import buildgraph, procs, safefs, stale, taskview, tracefile
from ssebench.daemon.limits import Limits
from ssebench.daemon.mirror import BuildMirror
from ssebench.daemon.runtypes import MIN_FREE, Run, RunError
from ssebench.daemon.sandbox import TASK_PATH, Sandbox
from ssebench.daemon.taskview import TaskView
from ssebench.daemon.workspace import Snapshot, SourceStore
from ssebench.task import Task


class Housekeeping:
    """The runner's state, and keeping its workspace and old runs in order."""

    task: Task
    sandbox: Sandbox
    limits: Limits
    tree: Path
    workspace: Path
    heartbeat: float
    log_budget: int
    base_env: dict[str, str]
    store: SourceStore
    mirror: BuildMirror
    tree_path: Path
    task_view: TaskView | None
    trace: bool
    tracing: str
    last_build: str
    build_counts: collections.Counter[str]
    last_record: tracefile.Record | None
    _runs: dict[str, Run]
    _running: set[subprocess.Popen[bytes]]
    _closing: bool
    _pending_sweep: asyncio.Task[int] | None
    _overlay: asyncio.Future[bool] | None
    _strace: str | None
    _strace_probed: bool
    _graph: buildgraph.Graph | None

    def _make_task_view(self) -> None:
        """Copy the support files for the checks (sandbox only): at start, and again when
        the workspace was removed under us."""
        if not self.sandbox.enabled:
            return
        folder = self.workspace / "task"
        try:
            self.task_view = taskview.build(self.task, folder, TASK_PATH, leave_out=(self.workspace, self.tree))
            # Checks that run as another uid read the copies (bound read-only).
            self.sandbox.share(folder)
            self.sandbox.give(folder)
        except (taskview.TaskViewError, OSError) as exc:
            raise RunError(str(exc)) from None

    def _ensure_workspace(self) -> None:
        """A tmp cleaner may have removed the workspace (or its engine) under us: make it
        again, with a fresh blob store and mirror, so this call is answered normally."""
        engine = self.mirror.path.parent
        if os.path.isdir(self.store.blobs) and not os.path.islink(engine):
            return
        print(
            f"ssebench daemon: the workspace {self.workspace} was removed; recreating it", file=sys.stderr, flush=True
        )
        try:
            stale.recreate_workspace(self.workspace)
            with contextlib.suppress(FileExistsError):
                os.mkdir(engine, 0o700)
            self.sandbox.share(self.workspace)
            self.sandbox.share(engine)
            self.store.reset()
            if self.task_view is not None and not self.task_view.root.is_dir():
                shutil.rmtree(self.workspace / "task", ignore_errors=True)
                self._make_task_view()
        except OSError as exc:  # the agent gets one line without the host path; stderr has it
            print(f"ssebench daemon: cannot recreate {self.workspace}: {exc}", file=sys.stderr, flush=True)
            raise RunError(
                f"the daemon's workspace was removed and cannot be made again: {exc.strerror or exc}"
            ) from None
        self.mirror.invalidate()
        self._graph = None
        self._runs.clear()  # their logs went with it

    def kill_running(self) -> None:
        """Stop for shutdown: kill the running command's group; no new check starts."""
        self._closing = True
        self.store.stop.set()  # a snapshot in progress gives up at its next entry
        for proc in list(self._running):
            procs.kill_group(proc.pid)

    def _prune(self) -> None:
        """Keep old runs' logs within ``log_budget`` bytes in all, by size, not count.

        Called as a run starts. The old runs are kept newest first while the total of
        their logs stays within the budget; the newest old run (whose log the server
        may still be fetching) always stays. On a full disk every other old run goes.
        """
        runs = list(self._runs.values())  # in start order: the last is the one starting now
        total = 0
        for age, run in enumerate(reversed(runs)):
            total += _disk_use(run.dir)
            if age >= 2 and (total > self.log_budget or self.low_on_space()):
                del self._runs[run.id]
                self._remove_later(run.dir)

    def low_on_space(self) -> bool:
        """Is the workspace's filesystem full (under ``MIN_FREE`` bytes or no inode left)?"""
        try:
            st = os.statvfs(self.workspace)
        except OSError:
            return False
        return st.f_bavail * st.f_frsize < MIN_FREE or (st.f_files > 0 and st.f_favail == 0)

    async def reclaim(self, failed: Run | None, *, exclusive: bool) -> None:
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
            self._runs.pop(failed.id, None)
            self._release(failed)
            doomed.append(failed.dir)
        for folder in (self.workspace, self.mirror.path.parent):
            doomed += folder.glob(".trash-*")  # being removed in the background: now, and wait
        older = list(self._runs.values())  # oldest first
        if not exclusive:
            older = older[:-1]  # the newest may be executing

        def drop_runs() -> None:
            for path in doomed:
                shutil.rmtree(path, ignore_errors=True)
            _wait_for_removals()  # a folder also being removed in the background is gone only now
            for old in older:
                if not self.low_on_space():
                    break
                self._runs.pop(old.id, None)
                shutil.rmtree(old.dir, ignore_errors=True)

        await asyncio.shield(asyncio.to_thread(drop_runs))
        if exclusive:
            self.mirror.invalidate()
            if self.low_on_space() and self.mirror.path.is_dir():
                self._discard_view()
                trash = self.mirror.path.with_name(f".trash-mirror-{secrets.token_hex(4)}")
                os.rename(self.mirror.path, trash)  # at once: a next build never sees half of it
                await asyncio.shield(asyncio.to_thread(shutil.rmtree, trash, ignore_errors=True))
        with contextlib.suppress(OSError):  # blobs of failed syncs and of ended runs
            await asyncio.shield(asyncio.to_thread(self.store.release, _NO_SNAPSHOT))

    def _remove_trees_later(self, run: Run) -> None:
        """After a run: no view is left, and the blobs only this run needed are freed."""
        self._discard_view()
        self._release(run)

    def _release(self, run: Run) -> None:
        if run.snapshot is not None:
            snapshot, run.snapshot = run.snapshot, None
            _in_thread(self.store.release, snapshot)

    def _remove_later(self, path: Path) -> None:
        trash = path.with_name(f".trash-{path.name}-{secrets.token_hex(4)}")
        with contextlib.suppress(OSError):
            os.rename(path, trash)
            path = trash
        _in_thread(shutil.rmtree, path, ignore_errors=True)

    def _discard_view(self, run: Run | None = None, check: Check | None = None) -> None:
        """Throw away the view at the fixed tree path (never the mirror itself), and the
        overlay folders of *check*."""
        if self.tree_path.exists() and self.mirror.path.exists():
            self._remove_later(self.tree_path)
        if run is not None and check is not None:
            # overlayfs leaves a mode-000 folder in its work folder: make it removable.
            with contextlib.suppress(OSError):  # never through a symlink a check left
                safefs.chmod_path(run.dir / f"work-{check.value}" / "work", 0o700)
            for name in (f"view-{check.value}", f"work-{check.value}"):
                if (run.dir / name).exists():
                    self._remove_later(run.dir / name)


_NO_SNAPSHOT = Snapshot({}, 0, 0, 0)


def _disk_use(run_dir: Path) -> int:
    """Disk bytes a finished run holds: its folder, its logs folder and the logs (blocks,
    so a run of tiny logs still counts for what it costs, and many of them add up)."""
    total = 0
    for folder in (run_dir, run_dir / "logs"):
        with contextlib.suppress(OSError):
            total += os.lstat(folder).st_blocks * 512
    with contextlib.suppress(OSError), os.scandir(run_dir / "logs") as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                total += entry.stat(follow_symlinks=False).st_blocks * 512
    return total


def check_reachable(workspace: Path, user: tuple[int, int] | None) -> None:
    """Checks that run as another uid (the daemon is root) need every folder above the
    workspace searchable by that uid: bwrap, as that uid, opens the trees it binds."""
    if user is None:
        return
    for folder in Path(os.path.realpath(workspace)).parents:
        st = os.stat(folder)
        if not (
            st.st_mode & 0o001
            or (st.st_uid == user[0] and st.st_mode & 0o100)
            or (st.st_gid == user[1] and st.st_mode & 0o010)
        ):
            raise RunError(
                f"checks run as uid {user[0]} and cannot reach the workspace {workspace}: "
                f"{folder} is not searchable by that uid (put the workspace elsewhere, "
                f"e.g. TMPDIR=/tmp)"
            )


# The removals under way in the background: a full disk is answered only once they are
# done, since two rmtree of one folder race (the second returns while the first still frees).
_removing: set[threading.Thread] = set()
_removing_lock = threading.Lock()


def _in_thread(func: Any, *args: Any, **kwargs: Any) -> None:
    """Run the removal *func* in a thread of its own (the run's answer does not wait for it)."""

    def run() -> None:
        try:
            func(*args, **kwargs)
        finally:
            with _removing_lock:
                _removing.discard(threading.current_thread())

    thread = threading.Thread(target=run, daemon=True)
    with _removing_lock:
        _removing.add(thread)
    thread.start()


def _wait_for_removals() -> None:
    """Block until the background removals started so far have freed what they free."""
    with _removing_lock:
        pending = list(_removing)
    for thread in pending:
        thread.join()
