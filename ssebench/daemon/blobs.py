"""A source's blob: the file's content compressed (or, for a sparse file, its data
ranges at their offsets), named by its sha256, with build outputs recognised on the way.

Why its own module: the snapshot (workspace.py) writes blobs and the mirror (mirror.py)
reads them back; the format lives in one place.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import zlib
from typing import BinaryIO

from ssebench.daemon.treewalk import SyncCancelled

CHUNK = 1 << 20
# Blobs are zlib-compressed (level 1: ~100 MB/s a core): sources shrink 3-10x, which
# keeps the daemon's disk near one built tree (the mirror) instead of two.
_LEVEL = 1
_NAME = re.compile(r"s?[0-9a-f]{64}")  # a blob's name (a sparse blob's starts with s)
_OUTPUT_MAGIC = (b"\x7fELF", b"!<arch>\n", b"!<thin>\n")


def in_memory(name: str) -> bytes | str:
    """A blob's name as a source entry keeps it: the sha256's 32 bytes (``b"s"`` + 32 for
    a sparse blob), ~5 MiB less than 64-character names on 100,000 files; a name that is
    no digest stays as it is."""
    if _NAME.fullmatch(name) is None:
        return name
    return b"s" + bytes.fromhex(name[1:]) if name.startswith("s") else bytes.fromhex(name)


def name_of(data: bytes | str) -> str:
    """The blob's file name from what an entry keeps (:func:`in_memory`)."""
    if isinstance(data, str):
        return data
    return "s" + data[1:].hex() if len(data) == 33 else data.hex()


def pack_dense(fd: int, dst: BinaryIO, stop: threading.Event, keep_outputs: bool) -> str | None:
    """Compress the whole file into *dst*; its sha256, or None for a build output."""
    digest = hashlib.sha256()
    packer = zlib.compressobj(_LEVEL)
    first = True
    while chunk := os.read(fd, CHUNK):
        if stop.is_set():
            raise SyncCancelled()
        if first and not keep_outputs and chunk.startswith(_OUTPUT_MAGIC):
            return None
        first = False
        digest.update(chunk)
        dst.write(packer.compress(chunk))
    dst.write(packer.flush())
    return digest.hexdigest()


def pack_sparse(
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
            chunk = os.pread(fd, min(CHUNK, length - done), offset + done)
            if not chunk:
                break
            if offset + done == 0 and not keep_outputs and chunk.startswith(_OUTPUT_MAGIC):
                return None
            digest.update(chunk)
            os.pwrite(dst.fileno(), chunk, offset + done)
            done += len(chunk)
    os.ftruncate(dst.fileno(), size)
    return "s" + digest.hexdigest()
