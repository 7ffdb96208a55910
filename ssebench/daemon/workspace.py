"""The daemon's own state between calls: a source snapshot per call and one build mirror.

Why: building every call from scratch in fresh copies made a repeat ``test_patch`` on a
real tree cost 10-60x an incremental build in place. So the daemon keeps:

- a **source store** (:class:`SourceStore`): at request time the agent's tree is read
  into a content-addressed, zlib-compressed blob store and described by a :class:`Snapshot` (path ->
  kind, mode, sha256 or link target). A file whose ``lstat`` (size, mtime, ctime,
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
import hashlib
import os
import re
import shutil
import stat
import subprocess
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass(frozen=True)
class Entry:
    """One source: kind, permission bits, sha256 (file) or target (link), and mtime."""

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
    bytes: int
    read_files: int  # how many files this sync had to read (the rest were unchanged)


def is_output_name(name: str) -> bool:
    """``x.o``, ``libx.a``, ``libx.so.1.2`` ... (not ``ld.so.conf``)."""
    return name.endswith(_OUTPUT_SUFFIXES) or _VERSIONED_SO.search(name) is not None


class SourceStore:
    """Reads the agent's tree into immutable blobs; only ever reads the tree."""

    def __init__(self, tree: Path, root: Path) -> None:
        self.tree = tree
        self.blobs = root / "blobs"
        self.blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.Lock()
        # rel path -> (lstat key, entry or None for a build output, trusted)
        self._cache: dict[str, tuple[tuple[int, ...], Entry | None, bool]] = {}
        self._retained: list[Snapshot] = []
        self._last: Manifest = {}

    def blob(self, digest: str) -> Path:
        return self.blobs / digest

    # -- sync -------------------------------------------------------------------------

    def sync(self) -> Snapshot:
        """Snapshot the tree now (blocking: call it in a thread). Raises SyncError."""
        with self._lock:
            start = time.time_ns()
            manifest: Manifest = {}
            cache: dict[str, tuple[tuple[int, ...], Entry | None, bool]] = {}
            committed: set[str] | None = None
            total = read = 0
            for rel, st in _walk(self.tree):
                path = self.tree / rel
                if stat.S_ISDIR(st.st_mode):
                    manifest[rel] = Entry(DIR, stat.S_IMODE(st.st_mode), "", st.st_mtime_ns)
                    continue
                key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)
                trusted = max(st.st_mtime_ns, st.st_ctime_ns) < start - RACY_NS
                old = self._cache.get(rel)
                if old is not None and old[0] == key and old[2]:
                    entry = old[1]
                elif stat.S_ISLNK(st.st_mode):
                    try:
                        target = os.readlink(path)
                    except FileNotFoundError:
                        continue
                    except OSError as exc:
                        raise SyncError(f"cannot read '{rel}': {exc.strerror}") from None
                    entry = Entry(LINK, 0o777, target, st.st_mtime_ns)
                elif is_output_name(rel.rsplit("/", 1)[-1]):
                    entry = None  # not even read, unless committed (below)
                else:
                    read += 1
                    entry = self._read(rel, path, st)
                    if entry is None and not os.path.exists(path):
                        continue  # vanished while we looked
                cache[rel] = (key, entry, trusted)
                if entry is None:  # a build output: only a committed one is a source
                    if committed is None:
                        committed = _committed_files(self.tree)
                    if rel in committed:
                        entry = self._read(rel, path, st, keep_outputs=True)
                        cache[rel] = (key, entry, trusted)
                    if entry is None:
                        continue
                manifest[rel] = entry
                if entry.kind == FILE:
                    total += st.st_size
            self._cache = cache
            self._last = manifest
            snapshot = Snapshot(manifest, sum(1 for e in manifest.values() if e.kind == FILE), total, read)
            self._retained.append(snapshot)
            return snapshot

    def _read(self, rel: str, path: Path, st: os.stat_result, *, keep_outputs: bool = False) -> Entry | None:
        """Copy one file into the blob store while hashing it; None for a build output."""
        digest = hashlib.sha256()
        tmp = self.blobs / f".tmp-{threading.get_ident()}-{time.monotonic_ns()}"
        try:
            with open(path, "rb") as src, open(tmp, "wb") as dst:
                first = True
                packer = zlib.compressobj(_LEVEL)
                while chunk := src.read(_CHUNK):
                    if first and not keep_outputs and chunk.startswith(_OUTPUT_MAGIC):
                        return None
                    first = False
                    digest.update(chunk)
                    dst.write(packer.compress(chunk))
                dst.write(packer.flush())
            name = digest.hexdigest()
            if (self.blobs / name).exists():
                os.unlink(tmp)
            else:
                os.rename(tmp, self.blobs / name)
        except FileNotFoundError:
            return None
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
            live = {e.data for m in [self._last, *(s.manifest for s in self._retained)]
                    for e in m.values() if e.kind == FILE}
            with os.scandir(self.blobs) as it:
                for item in it:
                    if item.name not in live and not item.name.startswith(".tmp-"):
                        with contextlib.suppress(OSError):
                            os.unlink(item.path)


def _walk(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of everything under *root* that can be a source, parents first."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            it = os.scandir(root / rel_dir if rel_dir else root)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise SyncError(f"cannot read '{rel_dir or '.'}': {exc.strerror}") from None
        with it:
            for item in it:
                rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
                if rel == ".git":
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    yield rel, st
                    stack.append(rel)
                elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    yield rel, st


def _committed_files(tree: Path) -> set[str]:
    """Paths of HEAD's tree when *tree* is the top of a git work tree (else empty).

    The agent controls the repository's config, so git runs with no system or global
    config and with fsmonitor off (the one ``ls-tree`` could be made to run a command
    with), and never looks above the tree.
    """
    if not (tree / ".git").exists() or shutil.which("git") is None:
        return set()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CEILING_DIRECTORIES": str(tree.parent),
           "HOME": os.devnull, "GIT_TERMINAL_PROMPT": "0"}
    try:
        out = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "-c", f"safe.directory={tree}", "-C", str(tree),
             "ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD"],
            env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    if out.returncode != 0:
        return set()
    return {os.fsdecode(p) for p in out.stdout.split(b"\0") if p}


class BuildMirror:
    """The one tree every build of this daemon runs in, kept between calls."""

    def __init__(self, store: SourceStore, path: Path) -> None:
        self.store = store
        self.path = path
        self.manifest: Manifest | None = None  # what the mirror holds; None: must be fresh
        self.last_build_end_ns = 0

    def invalidate(self) -> None:
        """The mirror's state is unknown (a build was killed): the next update starts fresh."""
        self.manifest = None

    def update(self, snapshot: Snapshot, stamps: dict[str, int] | None = None) -> tuple[bool, int]:
        """Bring the mirror to *snapshot*; (incremental?, entries written). Blocking.

        *stamps*: the mtime to give each changed file (else one fresh mtime for all).
        """
        if self.manifest is None or not self.path.is_dir():
            return False, self.fresh(snapshot)
        try:
            return True, self._update(self.manifest, snapshot.manifest, stamps or {})
        except OSError:  # e.g. the last build removed a folder a changed source lives in
            return False, self.fresh(snapshot)

    def _update(self, old: Manifest, new: Manifest, stamps: dict[str, int]) -> int:
        self.manifest = None  # half-updated if we fail part-way
        now = max(fs_now(self.path.parent), self.last_build_end_ns + 1)
        written = 0
        # Deleted or changed kind: deepest first, so a folder goes after its contents.
        for rel in sorted(old, reverse=True):
            if rel not in new or new[rel].kind != old[rel].kind:
                _remove(self.path / rel)
                written += 1
        for rel in sorted(new):
            entry, before = new[rel], old.get(rel)
            # Same content with a new mtime (touch, cp -p) is a change too: make must
            # re-decide what depends on it, as a fresh mirror with the agent's mtimes would.
            if (before is not None and before.kind == entry.kind and before.data == entry.data
                    and (entry.kind != FILE or before.mtime_ns == entry.mtime_ns)):
                if before.mode != entry.mode and entry.kind != LINK:
                    os.chmod(self.path / rel, entry.mode | (0o700 if entry.kind == DIR else 0))
                    written += 1
                continue
            self._write(rel, entry, stamps.get(rel, now))
            written += 1
        self.manifest = dict(new)
        return written

    def fresh(self, snapshot: Snapshot) -> int:
        """Replace the mirror by a fresh copy of *snapshot*, with the agent's mtimes."""
        if self.path.exists() or self.path.is_symlink():
            trash = self.path.with_name(f".trash-mirror-{time.monotonic_ns()}")
            os.rename(self.path, trash)
            threading.Thread(target=shutil.rmtree, args=(trash,), kwargs={"ignore_errors": True},
                             daemon=True).start()
        os.mkdir(self.path, 0o700)
        dirs: list[tuple[str, Entry]] = []
        for rel in sorted(snapshot.manifest):
            entry = snapshot.manifest[rel]
            self._write(rel, entry, entry.mtime_ns)
            if entry.kind == DIR:
                dirs.append((rel, entry))
        for rel, entry in reversed(dirs):  # folder mtimes last: writing inside changes them
            os.utime(self.path / rel, ns=(entry.mtime_ns, entry.mtime_ns))
        self.manifest = dict(snapshot.manifest)
        return len(snapshot.manifest)

    def _write(self, rel: str, entry: Entry, mtime_ns: int) -> None:
        path = self.path / rel
        if entry.kind == DIR:
            if not path.is_dir() or path.is_symlink():
                _remove(path)
                os.mkdir(path, 0o700)
            os.chmod(path, entry.mode | 0o700)
            return
        _remove(path)
        if entry.kind == LINK:
            os.symlink(entry.data, path)
            return
        unpack_blob(self.store.blob(entry.data), path)
        os.chmod(path, entry.mode)
        os.utime(path, ns=(mtime_ns, mtime_ns))


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


def unpack_blob(blob: Path, dst: Path) -> None:
    """Write the content of a (zlib-compressed) blob to *dst*, a new file."""
    unpacker = zlib.decompressobj()
    with open(blob, "rb") as src, open(dst, "xb") as out:
        while chunk := src.read(_CHUNK):
            out.write(unpacker.decompress(chunk))
        out.write(unpacker.flush())


def _remove(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def diff_paths(old: Manifest, new: Manifest) -> Iterable[str]:
    """Paths whose entry differs between two manifests (for logs and tests)."""
    return sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))
