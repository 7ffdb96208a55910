"""The daemon's housekeeping: what a run leaves behind, cleared off the client's clock.

Two jobs, both done after the answer rather than before it: folders removed in threads
of their own (a run's views, an old run, the mirror's trash), and the sweep after a run
of the processes its checks left outside their groups. A full disk is the one moment
that waits for the removals (:meth:`Housekeeping.wait_for_removals`): two ``rmtree`` of
one folder race, and the second returns while the first still frees.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import threading
from pathlib import Path
from typing import Any

from ssebench.daemon import procs


class Housekeeping:
    """Background removals and the sweep after each run, for one daemon."""

    def __init__(self) -> None:
        self._removing: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._sweep: asyncio.Task[int] | None = None

    def remove_later(self, path: Path) -> None:
        """Rename *path* aside at once (its name is free again), remove it in a thread."""
        trash = path.with_name(f".trash-{path.name}-{secrets.token_hex(4)}")
        with contextlib.suppress(OSError):
            os.rename(path, trash)
            path = trash
        self.in_thread(shutil.rmtree, path, ignore_errors=True)

    def in_thread(self, func: Any, *args: Any, **kwargs: Any) -> None:
        """Run the removal *func* in a thread of its own (the run's answer does not wait for it)."""

        def run() -> None:
            try:
                func(*args, **kwargs)
            finally:
                with self._lock:
                    self._removing.discard(threading.current_thread())

        thread = threading.Thread(target=run, daemon=True)
        with self._lock:
            self._removing.add(thread)
        thread.start()

    def wait_for_removals(self) -> None:
        """Block until the background removals started so far have freed what they free."""
        with self._lock:
            pending = list(self._removing)
        for thread in pending:
            thread.join()

    def sweep_later(self) -> None:
        """After a run: kill what its checks left outside their groups, off the client's clock."""
        self._sweep = asyncio.get_running_loop().create_task(procs.sweep(""))

    async def swept(self) -> None:
        """Before a run: the last run's sweep is done (shielded: a client that goes away
        meanwhile does not stop it)."""
        if self._sweep is not None and not self._sweep.done():
            await asyncio.shield(self._sweep)


def disk_use(run_dir: Path) -> int:
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
