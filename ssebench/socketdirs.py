"""Private folders that hold a Unix socket, and the one check of a socket path's length.

A Unix socket's path may have at most 107 bytes (``sun_path`` holds 108, the last a NUL).
A deep ``TMPDIR`` (a CI runner's, a job's scratch folder) can push a socket made under it
past that: the daemon then refuses to bind it, or, when the socket is made in a container
and reached from the host through a bind mount, the host cannot connect to it. Both the
entrypoint's private folder and a Docker run's shared socket folder are made here, by one rule.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ssebench.parsers import UNIX_SOCKET_MAX_BYTES

SHORT_TMP = "/tmp"  # where a folder goes when TMPDIR is too deep for its socket

__all__ = ["SHORT_TMP", "UNIX_SOCKET_MAX_BYTES", "private_socket_dir", "socket_too_long"]


def private_socket_dir(prefix: str, socket: str) -> Path:
    """A new 0700 folder (``mkdtemp``) in TMPDIR, or in /tmp when *socket* (its path inside
    the folder, e.g. ``"sockets/daemon.sock"``) would pass the Unix socket limit there."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    if socket_too_long(folder / socket) is None:
        return folder
    folder.rmdir()
    return Path(tempfile.mkdtemp(prefix=prefix, dir=SHORT_TMP))


def socket_too_long(path: Path) -> str | None:
    """Why *path* cannot be a Unix socket's (its length, named), or None when it can."""
    length = len(os.fsencode(path))
    if length <= UNIX_SOCKET_MAX_BYTES:
        return None
    return (
        f"its socket's path {path} is {length} bytes long, over the {UNIX_SOCKET_MAX_BYTES}-byte limit "
        "of Unix sockets (set TMPDIR to a shorter folder)"
    )
