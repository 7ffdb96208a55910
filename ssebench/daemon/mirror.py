"""The one build mirror (see workspace.py): the tree every build runs in, kept between
calls and brought to each snapshot, incrementally or fresh, through folder fds."""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
import zlib
from pathlib import Path

from ssebench.daemon import safefs
from ssebench.daemon.blobs import CHUNK as _CHUNK
from ssebench.daemon.workspace import DIR, FILE, LINK, Manifest, Snapshot, SourceEntry, SourceStore


class BuildMirror:
    """The one tree every build of this daemon runs in, kept between calls.

    A build (agent code) may have left symlinks to host paths anywhere in it, so every
    write, delete, chmod and utime here goes through folder fds opened without
    following symlinks (:mod:`safefs`); a path that leads through a symlink makes the
    update start a fresh mirror instead. *owner*: who new entries belong to (None: us);
    the checks' uid, so that the build may change every entry, fresh or updated, with no
    walk of the whole mirror to give it to them afterwards.
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
        self.manifest = new  # a snapshot's manifest is never changed: shared, not copied
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
        dirs_done: list[tuple[str, SourceEntry]] = []
        with self._open() as dirs:
            for rel in sorted(snapshot.manifest):
                entry = snapshot.manifest[rel]
                self._write(dirs, rel, entry, entry.mtime_ns)
                if entry.kind == DIR:
                    dirs_done.append((rel, entry))
            for rel, entry in reversed(dirs_done):  # folder mtimes last: writing inside changes them
                safefs.utime_at(*dirs.parent(rel), entry.mtime_ns)
        self.manifest = snapshot.manifest
        return len(snapshot.manifest)

    def _remove(self, dirs: safefs.DirFds, rel: str) -> None:
        try:
            dir_fd, name = dirs.parent(rel)
        except FileNotFoundError:
            return  # its folder is gone already
        dirs.forget(rel)
        safefs.remove_at(dir_fd, name)

    def _write(self, dirs: safefs.DirFds, rel: str, entry: SourceEntry, mtime_ns: int) -> None:
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
            assert isinstance(entry.data, str)
            safefs.symlink_at(entry.data, dir_fd, name, self.owner)
            return
        out = safefs.create_file(dir_fd, name)
        try:
            unpack_blob(self.store.blob(entry.data), out)
            os.fchmod(out, entry.mode)
            if self.owner is not None:  # after the mode: the chown drops set-id bits (Sandbox.give's did)
                os.fchown(out, *self.owner)
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
