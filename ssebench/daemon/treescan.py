"""The ``lstat`` of everything in the build mirror, before and after a build: what the
build created, removed or changed (buildgraph.verify, repair.py).

Why a compact form: the scans of a 100,000-file mirror were a dict of a path and a packed
``lstat`` per entry (~170 bytes a path, twice during a build, plus the sets that compared
them): ~50 MiB of the daemon's peak, and many small objects that left the memory they
took fragmented. Here a scan keeps one ``bytes`` per folder (each entry's ``lstat`` and
name, ~45 bytes an entry), and two folders' listings are unpacked only when they differ.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path

# folder (relative, "" for the top) -> its entries packed: (mode, size, mtime, ino, ctime,
# length of the name) then the name, entry after entry, in the listing's order
Scan = dict[str, bytes]
_ENTRY = struct.Struct("<QqqQqH")


def scan(root: Path) -> Scan:
    """lstat of everything under *root*, by folder. Blocking. A folder that cannot be
    listed (or an entry that cannot be ``lstat``-ed) is left out."""
    out: Scan = {}
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        packed, subfolders = b"", list[str]()
        with contextlib.suppress(OSError):
            packed, subfolders = _listing(root, rel_dir)
        stack += (f"{rel_dir}/{name}" if rel_dir else name for name in subfolders)
        out[rel_dir] = packed
    return out


def refresh(found: Scan, root: Path, folders: set[str]) -> Scan:
    """*found* with the listings of *folders* taken again: :func:`scan` of *root* when
    nothing changed since *found* but entries in those folders. Blocking.

    Why: the mirror's scan before an incremental build was a walk of the whole mirror
    (~0.3 s on 100,000 files), although between the last build's scan and this one only
    the mirror's update wrote in it, in the folders of the changed files. Where the set
    of subfolders of a listing differs (a folder made or removed) this is a whole scan.
    """
    out = dict(found)
    for rel_dir in folders:
        try:
            packed, subfolders = _listing(root, rel_dir)
        except OSError:
            return scan(root)
        if rel_dir not in found or set(subfolders) != _subfolders(found[rel_dir]):
            return scan(root)
        out[rel_dir] = packed
    return out


def _listing(root: Path, rel_dir: str) -> tuple[bytes, list[str]]:
    """One folder's entries packed, and the names of its subfolders (an entry that
    cannot be ``lstat``-ed is left out; a folder that cannot be listed raises)."""
    parts: list[bytes] = []
    subfolders: list[str] = []
    with os.scandir(root / rel_dir if rel_dir else root) as it:
        for item in it:
            with contextlib.suppress(OSError):
                st = item.stat(follow_symlinks=False)
                raw = os.fsencode(item.name)
                parts += _ENTRY.pack(st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, len(raw)), raw
                if stat.S_ISDIR(st.st_mode):
                    subfolders.append(item.name)
    return b"".join(parts), subfolders


def _subfolders(packed: bytes) -> set[str]:
    return {name for name, head in _entries(packed) if stat.S_ISDIR(_ENTRY.unpack(head)[0])}


def parents(paths: set[str]) -> set[str]:
    """The folders whose listings change when *paths* are rewritten in place: each one's
    folder (a new entry) and that folder's own folder (its mtime changed)."""
    out: set[str] = set()
    for rel in paths:
        folder = rel.rpartition("/")[0]
        out |= {folder, folder.rpartition("/")[0]} if folder else {""}
    return out


def _entries(packed: bytes) -> Iterator[tuple[str, bytes]]:
    """(name, packed lstat) of each entry of one folder's listing."""
    offset = 0
    while offset < len(packed):
        end = offset + _ENTRY.size
        size = _ENTRY.unpack_from(packed, offset)[5]
        yield os.fsdecode(packed[end : end + size]), packed[offset:end]
        offset = end + size


def has(found: Scan, rel: str) -> bool:
    """Was *rel* there when *found* was taken?"""
    folder, _, name = rel.rpartition("/")
    packed = found.get(folder)
    return packed is not None and any(n == name for n, _ in _entries(packed))


def written(before: Scan, after: Scan) -> set[str]:
    """Paths the build created, removed or changed (folders only when created/removed)."""
    out: set[str] = set()
    for folder in before.keys() | after.keys():
        a, b = before.get(folder, b""), after.get(folder, b"")
        if a == b:
            continue  # the common case: nothing in this folder moved
        old, new = dict(_entries(a)), dict(_entries(b))
        for name in old.keys() | new.keys():
            x, y = old.get(name), new.get(name)
            if x is None or y is None or (x != y and not stat.S_ISDIR(_ENTRY.unpack(y)[0])):
                out.add(f"{folder}/{name}" if folder else name)
    return out


__all__ = ["Scan", "has", "parents", "refresh", "scan", "written"]
