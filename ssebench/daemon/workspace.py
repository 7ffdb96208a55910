"""The daemon's own state between calls: a source snapshot per call and one build mirror.

Why: building every call from scratch in fresh copies made a repeat ``test_patch`` on a
real tree cost 10-60x an incremental build in place. So the daemon keeps:

- a **source store** (:class:`SourceStore`): at request time the agent's tree is read
  into a content-addressed, zlib-compressed blob store (a sparse file: a sparse blob that
  keeps its holes) and described by a :class:`Snapshot` (path -> kind, mode, sha256 or
  link target). The tree is read through folder fds that never follow a symlink
  (:mod:`ssebench.daemon.safefs`): the agent may be swapping its folders meanwhile. A file
  whose ``lstat`` (size, mtime, ctime, inode, mode) is unchanged since the last sync is
  not read again, unless it changed within :data:`RACY_NS` of that sync (its timestamp
  could hide a second change). The snapshot is immutable, so a queued call still tests
  the tree as it was when it arrived, whatever the agent does meanwhile.
- one **build mirror** (:class:`ssebench.daemon.mirror.BuildMirror`) where every build
  runs incrementally. Entries whose content, kind, mode or mtime (a touched file)
  differ from what the mirror holds are written with a fresh mtime (after the end of the
  last build; the build engine, buildgraph.py, passes one per file to keep the agent's
  order), new ones are added, deleted ones removed; unchanged files keep their mtimes.
  Whether a build may reuse the mirror at all is buildgraph.py's decision. A fresh
  mirror (first call, or after a killed build, or the clean retry) is written with the
  agent's own mtimes, as ``cp -a`` would, so generated files such as an autotools
  ``Makefile`` stay newer than their inputs.

**Sources** (what a snapshot takes) — the same rule in a git work tree and outside one:
every directory, regular file and symlink under the tree, except the top-level ``.git``
(the repository's own data) and build outputs: files named ``*.o *.obj *.lo *.a *.la
*.so *.so.* *.gch *.pch *.ko`` or whose content starts with the ELF or ``ar`` magic —
unless the tree is a git work tree whose ``HEAD`` commit has a file at that path (a
prebuilt library or test fixture the project itself ships). So neither a planted nor a
stale object of the agent's own build can reach a tested binary, while configured
files (``Makefile``, ``config.h``), which a build may need and which are often ignored
by ``.gitignore``, are taken. Sockets, FIFOs and devices are skipped. A build output in
the mirror is never a source, so deleting sources never deletes what the build made,
except inside a folder the agent deleted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ssebench.daemon import blobs, safefs, treewalk, treewatch
from ssebench.daemon.committed import committed_files
from ssebench.daemon.treewalk import Doubt, SyncCancelled, SyncError, WatchHolder

__all__ = ["SourceStore", "Snapshot", "SourceEntry", "SyncCancelled", "SyncError"]

FILE, LINK, DIR = "f", "l", "d"
RACY_NS = 2_000_000_000
_OUTPUT_SUFFIXES = (".o", ".obj", ".lo", ".a", ".la", ".so", ".gch", ".pch", ".ko")
_VERSIONED_SO = re.compile(r"\.so(\.[0-9]+)+$")


@dataclass(frozen=True, slots=True)  # slots: 100,000 of them cost ~10 MiB less
class SourceEntry:
    """One source: kind, permission bits, sha256 (file) or target (link), and mtime.

    A sparse file's blob name is ``"s"`` + the sha256 of its layout and data (see
    :func:`_read_sparse`): its blob keeps the holes, so a 5 GiB hole costs nothing.
    ``key``: the ``lstat`` it was taken with (:func:`_key`; a folder's is empty), so the
    stat cache is the manifest itself (a second dict was ~15 MiB on 100,000 files).
    """

    kind: str
    mode: int
    data: str | bytes = ""  # a file's: its blob's name as blobs.in_memory keeps it
    mtime_ns: int = field(default=0, compare=False)
    key: bytes = field(default=b"", compare=False)


Manifest = dict[str, SourceEntry]


@dataclass(frozen=True)
class Snapshot:
    """The tree as it was at request time: paths (``/``-separated, relative) to entries."""

    manifest: Manifest
    files: int
    bytes: int  # apparent size (a sparse file counts its holes)
    read_files: int  # how many files this sync had to read (the rest were unchanged)


def is_output_name(name: str) -> bool:
    """``x.o``, ``libx.a``, ``libx.so.1.2`` ... (not ``ld.so.conf``)."""
    return name.endswith(_OUTPUT_SUFFIXES) or _VERSIONED_SO.search(name) is not None


# The lstat key packed: ~70 bytes a file where a tuple of five ints took ~250 (the daemon's
# RSS on 100,000 files). An output's key not trusted (_Sync._trusted) ends in _RACY.
_KEY = struct.Struct("<qqqQQ")  # size, mtime, ctime, inode, mode
_RACY = b"?"
_MODES: dict[int, int] = {}  # one int object per permission bits, shared by all entries


class SourceStore:
    """Reads the agent's tree into immutable blobs; only ever reads the tree.

    The tree is read through folder fds, never through a symlink (:mod:`safefs`): the
    agent may swap a folder for a symlink to the task folder while we read. An entry
    that changed kind between the listing and the read is skipped this time.
    *committed* lists HEAD's files (see :func:`committed_files`); it runs git, so the
    runner passes one that runs it in the check sandbox.
    """

    def __init__(self, tree: Path, root: Path, committed: Callable[[Path], set[str]] | None = None) -> None:
        self.tree = tree
        # Resolved once: a symlink put in the tree's path later is refused, not followed.
        self._real_tree = os.path.realpath(tree)
        self.root = root
        self.blobs = root / "blobs"
        self.blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.committed = committed if committed is not None else committed_files
        self.stop = threading.Event()  # set at shutdown: a sync in progress gives up
        self._lock = threading.Lock()
        self._outputs: dict[str, bytes] = {}  # build outputs that are no source: rel -> key
        self._racy: set[str] = set()  # sources whose key is not trusted (read again)
        self._retained: list[Snapshot] = []
        self._last: Manifest = {}
        self._files = self._bytes = 0  # of _last
        self.walks = 0  # full walks taken (tests, benchmarks)
        self.watch = True  # start a file-change watch with each full walk (benchmarks turn it off)
        self._watch: treewatch.TreeWatch | None = None  # vouches for _last (see sync)
        self._watch_root: tuple[int, int] = (0, 0)  # (st_dev, st_ino) of the tree it watches
        self._recheck: set[str] = set()  # build outputs: looked at again every call
        self._written: set[str] = set()  # files written while watched (mmap): the same

    @property
    def watching(self) -> bool:
        """Does a file-change watch vouch for the last snapshot (tests, benchmarks)?"""
        return self._watch is not None

    def blob(self, data: str | bytes) -> Path:
        return self.blobs / blobs.name_of(data)

    def reset(self) -> None:
        """The blob store was removed under us (a tmp cleaner): start it afresh."""
        with self._lock:
            self.blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._outputs, self._racy = {}, set()
            self._last = {}
            self._unwatch()

    # -- sync -------------------------------------------------------------------------

    def sync(self) -> Snapshot:
        """Snapshot the tree now (blocking: call it in a thread). Raises SyncError.

        With a watch from the last full walk (treewatch.py) only what it reported is
        looked at again, plus the build outputs (whether one is a source follows git's
        HEAD) and files ever written (an ``mmap`` write is no event); otherwise, or on
        any doubt, the whole tree is walked and a new watch started.
        """
        with self._lock:
            sync = _Sync(self, time.time_ns())
            try:
                root = safefs.open_root(self._real_tree)
            except OSError as exc:
                self._unwatch()
                raise SyncError(f"cannot read '.': {exc.strerror}") from None
            try:
                if not self._revisit(sync, root):
                    sync = _Sync(self, sync.start)
                    self._walk(sync, root)
            except BaseException:
                self._unwatch()  # what the watch reported was taken and not used
                raise
            finally:
                os.close(root)
            self._recheck = sync.outputs | (self._recheck - sync.seen)
            self._outputs, self._racy, self._last = sync.output_keys, sync.racy, sync.manifest
            self._files, self._bytes = sync.files, sync.total
            snapshot = Snapshot(sync.manifest, sync.files, sync.total, sync.read)
            self._retained.append(snapshot)
            return snapshot

    def _walk(self, sync: _Sync, root: int) -> None:
        """The whole tree, with a new watch started before each part of it is seen."""
        self._unwatch()
        self._recheck = set()
        self.walks += 1
        holder = WatchHolder(treewatch.start() if self.watch else None)
        st = os.fstat(root)
        try:
            for rel, dir_fd, name, st_entry in treewalk.walk(root, self.stop, holder):
                sync.add(rel, dir_fd, name, st_entry)
        except BaseException:
            if holder.watch is not None:
                holder.watch.close()
            raise
        if holder.watch is not None:
            self._watch, self._watch_root = holder.watch, (st.st_dev, st.st_ino)

    def _revisit(self, sync: _Sync, root: int) -> bool:
        """Update the last snapshot with what the watch reported; False: walk instead."""
        watch = self._watch
        if watch is None or self.stop.is_set():
            return False
        st = os.fstat(root)
        reported = watch.changes()
        if reported is None or (st.st_dev, st.st_ino) != self._watch_root:
            return False  # the tree's folder itself was replaced: a full walk
        paths = reported | self._recheck | watch.written | self._written
        last = self._last
        if not paths:  # nothing changed: the very manifest (buildgraph.plan's fast path)
            sync.manifest, sync.output_keys, sync.racy = last, self._outputs, self._racy
            sync.files, sync.total = self._files, self._bytes
            return True
        sync.manifest, sync.output_keys, sync.racy = dict(last), dict(self._outputs), self._racy - paths
        for rel in paths:
            entry = sync.manifest.pop(rel, None)
            sync.output_keys.pop(rel, None)
            if entry is not None and entry.kind == FILE and entry.key:
                sync.files -= 1
                sync.total -= _KEY.unpack_from(entry.key)[0]
        sync.files += self._files
        sync.total += self._bytes
        sync.seen = paths
        holder = WatchHolder(watch)
        try:
            treewalk.revisit(root, paths, lambda rel: _is_dir(last, rel), holder, sync.add)
        except Doubt:
            holder.watch = None
        if holder.watch is None:  # doubt, or no watch left for a new file: walk
            self._unwatch()
            return False
        if all(sync.manifest.get(rel) is last.get(rel) for rel in paths):
            sync.manifest = last  # what it looked at is the same: the very manifest again
        return True

    def _unwatch(self) -> None:
        if self._watch is not None:
            self._written |= self._watch.written
            self._watch.close()
            self._watch = None

    def read_file(self, rel: str, fd: int, st: os.stat_result, *, keep_outputs: bool = False) -> SourceEntry | None:
        """Copy the open file *fd* into the blob store while hashing it; None for a build
        output. Holes are kept (never read)."""
        ranges = list(safefs.data_ranges(fd, st.st_size))
        sparse = bool(st.st_size) and ranges != [(0, st.st_size)]
        os.lseek(fd, 0, os.SEEK_SET)  # the probe above moved the offset
        tmp = self.blobs / f".tmp-{threading.get_ident()}-{time.monotonic_ns()}"
        try:
            with open(tmp, "xb") as dst:
                if sparse:
                    name = blobs.pack_sparse(fd, ranges, st.st_size, dst, self.stop, keep_outputs)
                else:
                    name = blobs.pack_dense(fd, dst, self.stop, keep_outputs)
            if name is None:
                return None
            if (self.blobs / name).exists():
                os.unlink(tmp)
            else:
                os.rename(tmp, self.blobs / name)
        except OSError as exc:
            raise SyncError(f"cannot read '{rel}': {exc.strerror}") from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return SourceEntry(FILE, _mode(st), blobs.in_memory(name), st.st_mtime_ns, _key(st))

    # -- lifetime of blobs ------------------------------------------------------------

    def release(self, snapshot: Snapshot) -> None:
        """The run of *snapshot* is over: drop blobs no live snapshot needs any more."""
        with self._lock:
            with contextlib.suppress(ValueError):
                self._retained.remove(snapshot)
            if snapshot.manifest is self._last:
                return  # every blob it needs is still live (a call with no change)
            live = {
                e.data
                for m in [self._last, *(s.manifest for s in self._retained)]
                for e in m.values()
                if e.kind == FILE
            }
            with contextlib.suppress(FileNotFoundError), os.scandir(self.blobs) as it:
                for item in it:
                    if not item.name.startswith(".tmp-") and blobs.in_memory(item.name) not in live:
                        with contextlib.suppress(OSError):
                            os.unlink(item.path)


class _Sync:
    """One snapshot being taken: what it found so far."""

    def __init__(self, store: SourceStore, start: int) -> None:
        self.store = store
        self.start = start
        self.manifest: Manifest = {}
        self.output_keys: dict[str, bytes] = {}  # see SourceStore._outputs
        self.racy: set[str] = set()  # see SourceStore._racy
        self.committed: set[str] | None = None
        self.total = self.read = self.files = 0
        self.outputs: set[str] = set()  # build outputs met: looked at again every call
        self.seen: set[str] = set()  # the paths this sync looked at

    def add(self, rel: str, dir_fd: int, name: str, st: os.stat_result) -> None:
        """Take the entry *name* of the folder *dir_fd* (lstat *st* from its listing)."""
        if stat.S_ISDIR(st.st_mode):
            folder = SourceEntry(DIR, _mode(st), "", st.st_mtime_ns)
            last = self.store._last.get(rel)  # the very entry when unchanged: see buildgraph.plan
            same = last is not None and last == folder and last.mtime_ns == folder.mtime_ns
            self.manifest[rel] = last if same and last is not None else folder
            return
        key = _key(st)
        last = self.store._last.get(rel)
        if last is not None and last.key == key and rel not in self.store._racy:
            self.manifest[rel] = last  # unchanged and trusted (it stays so): the common case, lean
            if last.kind == FILE:
                self.total += st.st_size
                self.files += 1
            return
        if self.store._outputs.get(rel) == key:  # a build output, unchanged and trusted
            entry: SourceEntry | None = None
        elif stat.S_ISLNK(st.st_mode):
            try:
                target = os.readlink(name, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.EINVAL):  # gone, or no longer a link
                    return
                raise SyncError(f"cannot read '{rel}': {exc.strerror}") from None
            entry = SourceEntry(LINK, 0o777, target, st.st_mtime_ns, key)
        elif is_output_name(name):
            entry = None  # not even read, unless committed (below)
        else:
            found = self._read(rel, dir_fd, name, st)
            if found is None:
                return  # vanished, or not a regular file any more: skipped
            entry, st = found
        if entry is None:  # a build output: only a committed one is a source
            self.outputs.add(rel)
            self.output_keys[rel] = _key(st) if self._trusted(st) else _key(st) + _RACY
            if self.committed is None:
                self.committed = self.store.committed(self.store.tree)
            if rel not in self.committed:
                return
            found = self._read(rel, dir_fd, name, st, keep_outputs=True)
            if found is None or found[0] is None:
                return
            del self.output_keys[rel]
            entry, st = found[0], found[1]
        self._place(rel, entry, st)

    def _place(self, rel: str, entry: SourceEntry, st: os.stat_result) -> None:
        """Put a source just read (or a link) in the manifest: the last snapshot's very
        entry when it is the same (a racy file read again: buildgraph.plan's fast path)."""
        last = self.store._last.get(rel)
        same = last is not None and last == entry and last.mtime_ns == entry.mtime_ns and last.key == entry.key
        self.manifest[rel] = last if same and last is not None else entry
        if not self._trusted(st):
            self.racy.add(rel)
        if entry.kind == FILE:
            self.total += st.st_size
            self.files += 1

    def _read(
        self, rel: str, dir_fd: int, name: str, st: os.stat_result, keep_outputs: bool = False
    ) -> tuple[SourceEntry | None, os.stat_result] | None:
        """(entry, fstat) of the file, opened without following a symlink; None if gone."""
        try:
            opened = safefs.open_file(dir_fd, name, st)
        except OSError as exc:
            raise SyncError(f"cannot read '{rel}': {exc.strerror}") from None
        if opened is None:
            return None
        fd, st = opened
        self.read += 1
        try:
            return self.store.read_file(rel, fd, st, keep_outputs=keep_outputs), st
        finally:
            os.close(fd)

    def _trusted(self, st: os.stat_result) -> bool:
        return max(st.st_mtime_ns, st.st_ctime_ns) < self.start - RACY_NS


def _is_dir(manifest: Manifest, rel: str) -> bool:
    entry = manifest.get(rel)
    return entry is not None and entry.kind == DIR


def _mode(st: os.stat_result) -> int:
    mode = stat.S_IMODE(st.st_mode)
    return _MODES.setdefault(mode, mode)


def _key(st: os.stat_result) -> bytes:
    return _KEY.pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)
