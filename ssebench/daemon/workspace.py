"""The daemon's own state between calls: a source snapshot per call and one build mirror.

Why: building every call from scratch in fresh copies made a repeat ``test_patch`` on a
real tree cost 10-60x an incremental build in place. So the daemon keeps:

- a **source store** (:class:`SourceStore`): at request time the agent's tree is read
  into a content-addressed, zlib-compressed blob store (a sparse file: a sparse blob that
  keeps its holes) and described by a :class:`Snapshot` (path -> kind, mode, sha256 or
  link target). The tree is read through folder fds that never follow a symlink
  (:mod:`ssebench.daemon.safefs`): the agent may be swapping its folders meanwhile. A file whose ``lstat`` (size, mtime, ctime,
  inode, mode) is unchanged since the last sync is not read again, unless it changed
  within :data:`RACY_NS` of that sync (its timestamp could hide a second change). The
  snapshot is immutable, so a queued call still tests the tree as it was when it
  arrived, whatever the agent does meanwhile.
- one **build mirror** (:class:`BuildMirror`) where every build runs incrementally.
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
import shutil
import signal
import stat
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ssebench.daemon import procs, safefs
from ssebench.daemon.sandbox import TREE_PATH, Sandbox, TreeView

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
class Entry:
    """One source: kind, permission bits, sha256 (file) or target (link), and mtime.

    A sparse file's ``data`` is ``"s"`` + the sha256 of its layout and data (see
    :func:`_read_sparse`): its blob keeps the holes, so a 5 GiB hole costs nothing.
    """

    kind: str
    mode: int
    data: str = ""
    mtime_ns: int = field(default=0, compare=False)  # used for a fresh mirror only


Manifest = dict[str, Entry]


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


_CacheItem = tuple[tuple[int, ...], "Entry | None", bool]


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

    def read_file(self, rel: str, fd: int, st: os.stat_result, *, keep_outputs: bool = False) -> Entry | None:
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
        return Entry(FILE, stat.S_IMODE(st.st_mode), name, st.st_mtime_ns)

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
            self.manifest[rel] = Entry(DIR, stat.S_IMODE(st.st_mode), "", st.st_mtime_ns)
            return
        old = self.store._cache.get(rel)
        if old is not None and old[0] == _key(st) and old[2]:
            entry = old[1]
        elif stat.S_ISLNK(st.st_mode):
            try:
                target = os.readlink(name, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.EINVAL):  # gone, or no longer a link
                    return
                raise SyncError(f"cannot read '{rel}': {exc.strerror}") from None
            entry = Entry(LINK, 0o777, target, st.st_mtime_ns)
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
            entry, st = found
            self.cache[rel] = (_key(st), entry, self._trusted(st))
        self.manifest[rel] = entry
        if entry.kind == FILE:
            self.total += st.st_size

    def _read(
        self, rel: str, dir_fd: int, name: str, st: os.stat_result, keep_outputs: bool = False
    ) -> tuple[Entry | None, os.stat_result] | None:
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


_MAX_LISTING = 64 << 20  # most bytes of ``git ls-tree`` output read (a hostile repo could
# make it endless)


def committed_files(tree: Path, sandbox: Sandbox | None = None) -> set[str]:
    """Paths of HEAD's tree when *tree* is the top of a git work tree (else empty).

    The agent controls the repository (config, includes, hooks, fsmonitor, alternates,
    a partial clone's promisor remote), so git may be made to run the agent's program:
    with a *sandbox* git runs in it, seeing the tree read-only at ``/sse/tree``; without
    one it runs with no system or global config, fsmonitor off, every transport protocol
    refused (so no promisor fetch, ``ext::`` or remote helper can run), never looking
    above the tree.
    """
    if not os.path.isdir(tree / ".git") and not os.path.isfile(tree / ".git") or shutil.which("git") is None:
        return set()
    inside = sandbox is not None and sandbox.enabled
    top = TREE_PATH if inside else str(tree)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CEILING_DIRECTORIES": str(Path(top).parent),
        "HOME": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ALLOW_PROTOCOL": "",
        "GIT_PROTOCOL_FROM_USER": "0",
        "GIT_NO_LAZY_FETCH": "1",
        "GIT_ASKPASS": "/bin/false",
        "GIT_SSH_COMMAND": "/bin/false",
        "GIT_OPTIONAL_LOCKS": "0",
        "LC_ALL": "C",
    }
    argv = [
        "git",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        f"safe.directory={top}",
        "-c",
        "protocol.allow=never",
        "-C",
        top,
        "ls-tree",
        "-r",
        "-z",
        "--name-only",
        "--full-tree",
        "HEAD",
    ]
    if not inside:
        out = _bounded_output(argv, env)
        return set() if out is None else {os.fsdecode(p) for p in out.split(b"\0") if p}
    assert sandbox is not None
    # As the checks run: their uid (never root outside) and their seccomp filter. A tree
    # that uid cannot reach lists nothing: its committed build outputs are not sources.
    launch = sandbox.launch()
    try:
        argv = sandbox.wrap(argv, TreeView(Path(tree), read_only=True), launch=launch)
        if launch.user is not None:  # the guard drops to it (and reaches a bwrap that uid cannot)
            from ssebench.daemon import guard

            argv = guard.wrap(argv, user=launch.user)
        out = _bounded_output(argv, env, pass_fds=launch.pass_fds)
    finally:
        launch.close()
    return set() if out is None else {os.fsdecode(p) for p in out.split(b"\0") if p}


def _bounded_output(
    argv: list[str], env: dict[str, str], timeout: float = 120.0, *, pass_fds: tuple[int, ...] = ()
) -> bytes | None:
    """stdout of *argv* if it exits 0 within *timeout* and _MAX_LISTING bytes; else None.
    Its whole process group is killed in any case."""
    try:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except OSError:
        return None
    timer = threading.Timer(timeout, _kill_group, (proc.pid,))
    timer.start()
    with procs.managed(proc.pid):
        try:
            assert proc.stdout is not None
            data = proc.stdout.read(_MAX_LISTING + 1)
            code = proc.wait() if len(data) <= _MAX_LISTING else None
        finally:
            timer.cancel()
            _kill_group(proc.pid)
            proc.stdout.close()  # type: ignore[union-attr]
            proc.wait()
    return data if code == 0 else None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


class BuildMirror:
    """The one tree every build of this daemon runs in, kept between calls.

    A build (agent code) may have left symlinks to host paths anywhere in it, so every
    write, delete, chmod and utime here goes through folder fds opened without
    following symlinks (:mod:`safefs`); a path that leads through a symlink makes the
    update start a fresh mirror instead. *owner*: who new entries belong to (None: us).
    """

    def __init__(self, store: SourceStore, path: Path, owner: safefs.Owner = None) -> None:
        self.store = store
        self.path = path
        self.owner = owner
        self.manifest: Manifest | None = None  # what the mirror holds; None: must be fresh
        self.last_build_end_ns = 0

    def invalidate(self) -> None:
        """The mirror's state is unknown (a build was killed): the next update starts fresh."""
        self.manifest = None

    def update(self, snapshot: Snapshot, stamps: dict[str, int] | None = None) -> tuple[bool, int]:
        """Bring the mirror to *snapshot*; (incremental?, entries written). Blocking.

        *stamps*: the mtime to give each changed file (else one fresh mtime for all).
        """
        st = _lstat(self.path)
        if self.manifest is None or st is None or not stat.S_ISDIR(st.st_mode):
            return False, self.fresh(snapshot)
        try:
            return True, self._update(self.manifest, snapshot.manifest, stamps or {})
        except OSError:  # e.g. the last build removed a folder or left a symlink on the way
            return False, self.fresh(snapshot)

    def _open(self) -> safefs.DirFds:
        return safefs.DirFds(os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC))

    def _update(self, old: Manifest, new: Manifest, stamps: dict[str, int]) -> int:
        self.manifest = None  # half-updated if we fail part-way
        now = max(fs_now(self.path.parent), self.last_build_end_ns + 1)
        written = 0
        with self._open() as dirs:
            # Deleted or changed kind: deepest first, so a folder goes after its contents.
            for rel in sorted(old, reverse=True):
                if rel not in new or new[rel].kind != old[rel].kind:
                    self._remove(dirs, rel)
                    written += 1
            for rel in sorted(new):
                entry, before = new[rel], old.get(rel)
                # Same content with a new mtime (touch, cp -p) is a change too: make must
                # re-decide what depends on it, as a fresh mirror with the agent's mtimes would.
                if (
                    before is not None
                    and before.kind == entry.kind
                    and before.data == entry.data
                    and (entry.kind != FILE or before.mtime_ns == entry.mtime_ns)
                ):
                    if before.mode != entry.mode and entry.kind != LINK:
                        safefs.chmod_at(*dirs.parent(rel), entry.mode | (0o700 if entry.kind == DIR else 0))
                        written += 1
                    continue
                self._write(dirs, rel, entry, stamps.get(rel, now))
                written += 1
        self.manifest = dict(new)
        return written

    def fresh(self, snapshot: Snapshot) -> int:
        """Replace the mirror by a fresh copy of *snapshot*, with the agent's mtimes."""
        if _lstat(self.path) is not None:
            trash = self.path.with_name(f".trash-mirror-{time.monotonic_ns()}")
            os.rename(self.path, trash)
            threading.Thread(target=shutil.rmtree, args=(trash,), kwargs={"ignore_errors": True}, daemon=True).start()
        os.mkdir(self.path, 0o700)
        if self.owner is not None:
            os.chown(self.path, *self.owner, follow_symlinks=False)
        dirs_done: list[tuple[str, Entry]] = []
        with self._open() as dirs:
            for rel in sorted(snapshot.manifest):
                entry = snapshot.manifest[rel]
                self._write(dirs, rel, entry, entry.mtime_ns)
                if entry.kind == DIR:
                    dirs_done.append((rel, entry))
            for rel, entry in reversed(dirs_done):  # folder mtimes last: writing inside changes them
                safefs.utime_at(*dirs.parent(rel), entry.mtime_ns)
        self.manifest = dict(snapshot.manifest)
        return len(snapshot.manifest)

    def _remove(self, dirs: safefs.DirFds, rel: str) -> None:
        try:
            dir_fd, name = dirs.parent(rel)
        except FileNotFoundError:
            return  # its folder is gone already
        dirs.forget(rel)
        safefs.remove_at(dir_fd, name)

    def _write(self, dirs: safefs.DirFds, rel: str, entry: Entry, mtime_ns: int) -> None:
        dir_fd, name = dirs.parent(rel)
        if entry.kind == DIR:
            st = safefs.lstat_at(dir_fd, name)
            if st is None or not stat.S_ISDIR(st.st_mode):
                safefs.remove_at(dir_fd, name)
                safefs.mkdir_at(dir_fd, name, 0o700, self.owner)
            safefs.chmod_at(dir_fd, name, entry.mode | 0o700)
            return
        dirs.forget(rel)
        safefs.remove_at(dir_fd, name)
        if entry.kind == LINK:
            safefs.symlink_at(entry.data, dir_fd, name, self.owner)
            return
        out = safefs.create_file(dir_fd, name, self.owner)
        try:
            unpack_blob(self.store.blob(entry.data), out)
            os.fchmod(out, entry.mode)
            os.utime(out, ns=(mtime_ns, mtime_ns))
        finally:
            os.close(out)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def fs_now(folder: Path) -> int:
    """The filesystem's own "now" (the coarse clock a compiler's output gets), in ns.

    A source written with a finer, later clock could look newer than the object built
    from it a moment after, and be rebuilt again on the next call.
    """
    stamp = folder / f".now-{threading.get_ident()}"
    with open(stamp, "wb"):
        pass
    try:
        return os.lstat(stamp).st_mtime_ns
    finally:
        os.unlink(stamp)


def unpack_blob(blob: Path, out: int) -> None:
    """Write the content of a blob to the new, empty file *out* (an fd). A sparse blob
    (name ``s...``) is copied range by range at the same offsets: holes stay holes."""
    with open(blob, "rb") as src:
        if blob.name.startswith("s"):
            size = os.fstat(src.fileno()).st_size
            for offset, length in safefs.data_ranges(src.fileno(), size):
                done = 0
                while done < length:
                    chunk = os.pread(src.fileno(), min(_CHUNK, length - done), offset + done)
                    if not chunk:
                        break
                    os.pwrite(out, chunk, offset + done)
                    done += len(chunk)
            os.ftruncate(out, size)
            return
        unpacker = zlib.decompressobj()
        while chunk := src.read(_CHUNK):
            _write_all(out, unpacker.decompress(chunk))
        _write_all(out, unpacker.flush())


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def diff_paths(old: Manifest, new: Manifest) -> Iterable[str]:
    """Paths whose entry differs between two manifests (for logs and tests)."""
    return sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))
