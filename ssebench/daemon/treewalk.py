"""How a snapshot goes over the agent's tree: the full walk (which starts a file-change
watch as it goes) and the look at just the entries the watch reported (treewatch.py).

Why its own module: both must list exactly the same entries with the same rules (the
top-level ``.git`` left out; directories, regular files and symlinks only; nothing
reached through a symlink), and workspace.py decides only what an entry becomes.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator

from ssebench.daemon import safefs, treewatch
from ssebench.daemon.treewatch import TreeWatch, WatchesExhausted

stat_result = os.stat_result
# (relative path, fd of its folder, name, lstat) -> None; raises on a read error
AddEntry = Callable[[str, int, str, stat_result], None]


class SyncError(RuntimeError):
    """The agent's tree could not be read; the message names the path."""


class SyncCancelled(SyncError):
    """The daemon is stopping: the snapshot was abandoned part-way."""

    def __init__(self) -> None:
        super().__init__("the daemon is shutting down")


class Doubt(Exception):
    """What the watch reported cannot be followed entry by entry: walk the whole tree."""


class WatchHolder:
    """The watch being built by a walk; dropped (said once) when watches run out."""

    def __init__(self, watch: TreeWatch | None) -> None:
        self.watch = watch

    def drop(self, why: str) -> None:
        if self.watch is not None:
            self.watch.close()
            self.watch = None
            treewatch.unavailable(why)

    def folder(self, rel: str, dir_fd: int) -> None:
        if self.watch is not None:
            try:
                self.watch.folder(rel, dir_fd)
            except WatchesExhausted as exc:
                self.drop(exc.why)
            except OSError as exc:  # e.g. EACCES: then this walk vouches alone
                self.drop(f"cannot watch '{rel or '.'}': {exc.strerror}")

    def file(self, rel: str, dir_fd: int, name: str, st: stat_result) -> stat_result | None:
        """Watch a regular file, then its lstat again (so the watch predates what the
        snapshot saw); None when it is gone meanwhile."""
        if self.watch is None or not stat.S_ISREG(st.st_mode):
            return st
        try:
            self.watch.file(rel, dir_fd, name)
        except WatchesExhausted as exc:
            self.drop(exc.why)
        except OSError as exc:  # e.g. EACCES (a daemon not root, a file made unreadable)
            self.drop(f"cannot watch '{rel}': {exc.strerror}")
        if self.watch is None:
            return st
        return safefs.lstat_at(dir_fd, name)


def walk(root_fd: int, stop: threading.Event, watch: WatchHolder) -> Iterator[tuple[str, int, str, stat_result]]:
    """(relative path, fd of its folder, name, lstat) of everything under the tree that can
    be a source, parents first. The fd is valid while the item is being handled.

    Each folder is opened from the tree's fd with no symlink on the way and must be the
    folder the listing saw (same device and inode); one swapped meanwhile is skipped
    (its parent's watch reported the swap). Each folder is watched before it is listed.
    """
    stack: list[tuple[str, stat_result | None]] = [("", None)]
    while stack:
        rel_dir, expect = stack.pop()
        try:
            dir_fd = safefs.open_dir(root_fd, rel_dir)
        except FileNotFoundError:
            continue
        except safefs.Unsafe:
            continue  # became a symlink since it was listed: never followed
        except OSError as exc:
            raise SyncError(f"cannot read '{rel_dir or '.'}': {exc.strerror}") from None
        try:
            st_dir = os.fstat(dir_fd)
            if expect is not None and (st_dir.st_dev, st_dir.st_ino) != (expect.st_dev, expect.st_ino):
                continue  # another folder was moved here since it was listed
            watch.folder(rel_dir, dir_fd)
            try:
                entries = safefs.scandir_fd(dir_fd)
            except OSError as exc:
                raise SyncError(f"cannot read '{rel_dir or '.'}': {exc.strerror}") from None
            for name, listed in entries:
                if stop.is_set():
                    raise SyncCancelled()
                rel = f"{rel_dir}/{name}" if rel_dir else name
                if rel == ".git":
                    continue
                st = watch.file(rel, dir_fd, name, listed)
                if st is None:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    yield rel, dir_fd, name, st
                    stack.append((rel, st))
                elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    yield rel, dir_fd, name, st
        finally:
            os.close(dir_fd)


def revisit(
    root_fd: int, paths: Iterable[str], folders: Callable[[str], bool], watch: WatchHolder, add: AddEntry
) -> set[str]:
    """Look again at *paths* only (the watch's report): *add* each one that is a source
    now; the set of those gone (or no longer a source). Raises :class:`Doubt` when a path
    changed between folder and non-folder, or its folder is not one the snapshot has
    (*folders*), and SyncError as the walk does."""
    by_folder: dict[str, list[str]] = {}
    for rel in paths:
        parent, _, name = rel.rpartition("/")
        by_folder.setdefault(parent, []).append(name)
    gone: set[str] = set()
    for parent, names in sorted(by_folder.items()):
        if parent and not folders(parent):
            raise Doubt()
        try:
            dir_fd = safefs.open_dir(root_fd, parent)
        except OSError:
            raise Doubt() from None
        try:
            for name in names:
                rel = f"{parent}/{name}" if parent else name
                was_folder = folders(rel)
                st = safefs.lstat_at(dir_fd, name)
                st = None if st is None else watch.file(rel, dir_fd, name, st)
                if st is not None and stat.S_ISDIR(st.st_mode) != was_folder:
                    raise Doubt()
                if st is None or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                    if was_folder:
                        raise Doubt()
                    gone.add(rel)
                    continue
                add(rel, dir_fd, name, st)
        finally:
            os.close(dir_fd)
    return gone
