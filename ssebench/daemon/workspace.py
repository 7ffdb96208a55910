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
  could hide a second change). The
  snapshot is immutable, so a queued call still tests the tree as it was when it
  arrived, whatever the agent does meanwhile.
- one **build mirror** (:class:`ssebench.daemon.mirror.BuildMirror`) where every build
  runs incrementally.
  Entries whose content, kind, mode or mtime (a touched file) differ from what the
  mirror holds are written with a fresh mtime (after the end of the last build; the
  build engine, buildgraph.py, passes one per file to keep the agent's order), new ones
  are added, deleted ones removed; unchanged files keep their mtimes. Whether a build
  may reuse the mirror at all is buildgraph.py's decision. A fresh mirror (first call, or after a
  killed build, or the clean retry) is written with the agent's own mtimes, as
  ``cp -a`` would, so generated files such as an autotools ``Makefile`` stay newer
  than their inputs.

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
import hashlib
import os
import re
import stat
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ssebench.daemon import safefs
from ssebench.daemon.committed import committed_files

FILE, LINK, DIR = "f", "l", "d"
RACY_NS = 2_000_000_000
_CHUNK = 1 << 20
# Blobs are zlib-compressed (level 1: ~100 MB/s a core): sources shrink 3-10x, which
# keeps the daemon's disk near one built tree (the mirror) instead of two.
_LEVEL = 1
_OUTPUT_SUFFIXES = (".o", ".obj", ".lo", ".a", ".la", ".so", ".gch", ".pch", ".ko")
_OUTPUT_MAGIC = (b"\x7fELF", b"!<arch>\n", b"!<thin>\n")
_VERSIONED_SO = re.compile(r"\.so(\.[0-9]+)+$")


class SyncError(RuntimeError):
    """The agent's tree could not be read; the message names the path."""


class SyncCancelled(SyncError):
    """The daemon is stopping: the snapshot was abandoned part-way."""

    def __init__(self) -> None:
        super().__init__("the daemon is shutting down")


@dataclass(frozen=True)
class SourceEntry:
    """One source: kind, permission bits, sha256 (file) or target (link), and mtime.

    A sparse file's ``data`` is ``"s"`` + the sha256 of its layout and data (see
    :func:`_read_sparse`): its blob keeps the holes, so a 5 GiB hole costs nothing.
    """

    kind: str
    mode: int
    data: str = ""
    mtime_ns: int = field(default=0, compare=False)  # used for a fresh mirror only


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


_CacheItem = tuple[tuple[int, ...], "SourceEntry | None", bool]


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
        # rel path -> (lstat key, entry or None for a build output, trusted)
        self._cache: dict[str, _CacheItem] = {}
        self._retained: list[Snapshot] = []
        self._last: Manifest = {}

    def blob(self, digest: str) -> Path:
        return self.blobs / digest

    def reset(self) -> None:
        """The blob store was removed under us (a tmp cleaner): start it afresh."""
        with self._lock:
            self.blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._cache = {}
            self._last = {}

    # -- sync -------------------------------------------------------------------------

    def sync(self) -> Snapshot:
        """Snapshot the tree now (blocking: call it in a thread). Raises SyncError."""
        with self._lock:
            sync = _Sync(self, time.time_ns())
            try:
                root = safefs.open_root(self._real_tree)
            except OSError as exc:
                raise SyncError(f"cannot read '.': {exc.strerror}") from None
            try:
                for rel, dir_fd, name, st in _walk(root, self.stop):
                    sync.add(rel, dir_fd, name, st)
            finally:
                os.close(root)
            self._cache = sync.cache
            self._last = sync.manifest
            files = sum(1 for e in sync.manifest.values() if e.kind == FILE)
            snapshot = Snapshot(sync.manifest, files, sync.total, sync.read)
            self._retained.append(snapshot)
            return snapshot

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
                    name = _read_sparse(fd, ranges, st.st_size, dst, self.stop, keep_outputs)
                else:
                    name = _read_dense(fd, dst, self.stop, keep_outputs)
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
        return SourceEntry(FILE, stat.S_IMODE(st.st_mode), name, st.st_mtime_ns)

    # -- lifetime of blobs ------------------------------------------------------------

    def release(self, snapshot: Snapshot) -> None:
        """The run of *snapshot* is over: drop blobs no live snapshot needs any more."""
        with self._lock:
            with contextlib.suppress(ValueError):
                self._retained.remove(snapshot)
            live = {
                e.data
                for m in [self._last, *(s.manifest for s in self._retained)]
                for e in m.values()
                if e.kind == FILE
            }
            with contextlib.suppress(FileNotFoundError), os.scandir(self.blobs) as it:
                for item in it:
                    if item.name not in live and not item.name.startswith(".tmp-"):
                        with contextlib.suppress(OSError):
                            os.unlink(item.path)


class _Sync:
    """One snapshot being taken: what it found so far."""

    def __init__(self, store: SourceStore, start: int) -> None:
        self.store = store
        self.start = start
        self.manifest: Manifest = {}
        self.cache: dict[str, _CacheItem] = {}
        self.committed: set[str] | None = None
        self.total = self.read = 0

    def add(self, rel: str, dir_fd: int, name: str, st: os.stat_result) -> None:
        """Take the entry *name* of the folder *dir_fd* (lstat *st* from its listing)."""
        if stat.S_ISDIR(st.st_mode):
            folder = SourceEntry(DIR, stat.S_IMODE(st.st_mode), "", st.st_mtime_ns)
            last = self.store._last.get(rel)  # the very entry when unchanged: see buildgraph.plan
            same = last is not None and last == folder and last.mtime_ns == folder.mtime_ns
            self.manifest[rel] = last if same and last is not None else folder
            return
        old = self.store._cache.get(rel)
        if old is not None and old[2] and old[0] == _key(st):
            entry = old[1]
            if entry is not None:  # unchanged and trusted (it stays so): the common case, kept lean
                self.cache[rel] = old
                self.manifest[rel] = entry
                if entry.kind == FILE:
                    self.total += st.st_size
                return
        elif stat.S_ISLNK(st.st_mode):
            try:
                target = os.readlink(name, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.EINVAL):  # gone, or no longer a link
                    return
                raise SyncError(f"cannot read '{rel}': {exc.strerror}") from None
            entry = SourceEntry(LINK, 0o777, target, st.st_mtime_ns)
        elif is_output_name(name):
            entry = None  # not even read, unless committed (below)
        else:
            found = self._read(rel, dir_fd, name, st)
            if found is None:
                return  # vanished, or not a regular file any more: skipped
            entry, st = found
        self.cache[rel] = (_key(st), entry, self._trusted(st))
        if entry is None:  # a build output: only a committed one is a source
            if self.committed is None:
                self.committed = self.store.committed(self.store.tree)
            if rel not in self.committed:
                return
            found = self._read(rel, dir_fd, name, st, keep_outputs=True)
            if found is None or found[0] is None:
                return
            entry, st = found[0], found[1]
            self.cache[rel] = (_key(st), entry, self._trusted(st))
        self.manifest[rel] = entry
        if entry.kind == FILE:
            self.total += st.st_size

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


def _key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def _read_dense(fd: int, dst: BinaryIO, stop: threading.Event, keep_outputs: bool) -> str | None:
    """Compress the whole file into *dst*; its sha256, or None for a build output."""
    digest = hashlib.sha256()
    packer = zlib.compressobj(_LEVEL)
    first = True
    while chunk := os.read(fd, _CHUNK):
        if stop.is_set():
            raise SyncCancelled()
        if first and not keep_outputs and chunk.startswith(_OUTPUT_MAGIC):
            return None
        first = False
        digest.update(chunk)
        dst.write(packer.compress(chunk))
    dst.write(packer.flush())
    return digest.hexdigest()


def _read_sparse(
    fd: int, ranges: list[tuple[int, int]], size: int, dst: BinaryIO, stop: threading.Event, keep_outputs: bool
) -> str | None:
    """Copy the data ranges of a sparse file into *dst* at their offsets (a sparse blob,
    uncompressed); the name is ``s`` + sha256 of the size, the layout and the data."""
    digest = hashlib.sha256(b"sparse\0%d\0" % size)
    for offset, length in ranges:
        digest.update(b"%d:%d\0" % (offset, length))
        done = 0
        while done < length:
            if stop.is_set():
                raise SyncCancelled()
            chunk = os.pread(fd, min(_CHUNK, length - done), offset + done)
            if not chunk:
                break
            if offset + done == 0 and not keep_outputs and chunk.startswith(_OUTPUT_MAGIC):
                return None
            digest.update(chunk)
            os.pwrite(dst.fileno(), chunk, offset + done)
            done += len(chunk)
    os.ftruncate(dst.fileno(), size)
    return "s" + digest.hexdigest()


def _walk(root_fd: int, stop: threading.Event) -> Iterator[tuple[str, int, str, os.stat_result]]:
    """(relative path, fd of its folder, name, lstat) of everything under the tree that can
    be a source, parents first. The fd is valid while the item is being handled.

    Each folder is opened from the tree's fd with no symlink on the way and must be the
    folder the listing saw (same device and inode); one swapped meanwhile is skipped.
    """
    stack: list[tuple[str, os.stat_result | None]] = [("", None)]
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
            try:
                entries = safefs.scandir_fd(dir_fd)
            except OSError as exc:
                raise SyncError(f"cannot read '{rel_dir or '.'}': {exc.strerror}") from None
            for name, st in entries:
                if stop.is_set():
                    raise SyncCancelled()
                rel = f"{rel_dir}/{name}" if rel_dir else name
                if rel == ".git":
                    continue
                if stat.S_ISDIR(st.st_mode):
                    yield rel, dir_fd, name, st
                    stack.append((rel, st))
                elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    yield rel, dir_fd, name, st
        finally:
            os.close(dir_fd)
