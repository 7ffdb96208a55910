"""Where the daemon's Unix socket lives, and how to claim it safely.

The MCP server imports :func:`resolve_socket_path` for its ``--daemon-socket``
default, so both sides agree on one rule: ``--socket``, else ``SSE_DAEMON_SOCKET``,
else ``$XDG_RUNTIME_DIR/ssebench/daemon.sock``, else ``/tmp/ssebench-<uid>/daemon.sock``.
The default folders are created 0700 and must be ours and not symlinks: anyone who
could swap them could impersonate the daemon.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
from collections.abc import Mapping
from pathlib import Path

from ssebench import settings

ENV_VAR = "SSE_DAEMON_SOCKET"
SOCKET_NAME = "daemon.sock"
MAX_PATH_BYTES = 107  # sun_path is 108 bytes on Linux, NUL included


class SocketError(RuntimeError):
    """The socket path cannot be used; ``str(err)`` is the message for the user."""


def default_socket_path(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user default (no folder is created here)."""
    runtime = settings.raw("XDG_RUNTIME_DIR", environ)
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "ssebench" / SOCKET_NAME
    return Path(f"/tmp/ssebench-{os.getuid()}") / SOCKET_NAME


def resolve_socket_path(
    explicit: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """The socket path: *explicit*, else ``SSE_DAEMON_SOCKET``, else the default."""
    if explicit:
        return Path(explicit)
    named = settings.raw(ENV_VAR, environ)
    if named:
        return Path(named)
    return default_socket_path(environ)


def resolve_client_socket(
    explicit: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """The socket path for a client of the daemon (``ssebench serve``), under the daemon's rule.

    For the default path the folder is claimed as the daemon claims it (created 0700 if
    missing, refused if a symlink, not ours or open to others; :class:`SocketError`):
    otherwise another user could create it first and answer in the daemon's place.
    """
    path = resolve_socket_path(explicit, environ)
    if not explicit and not settings.raw(ENV_VAR, environ):
        try:
            ensure_private_dir(path.parent)
        except OSError as exc:
            raise SocketError(f"{path.parent}: {exc.strerror or exc}") from None
    return path


def ensure_private_dir(path: Path) -> None:
    """Create *path* 0700 if missing; refuse it if it is a symlink, not ours, or open to others."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise SocketError(f"{path}: is a symlink; refusing to put the daemon socket there")
    if not stat.S_ISDIR(st.st_mode):
        raise SocketError(f"{path}: is not a folder")
    if st.st_uid != os.getuid():
        raise SocketError(f"{path}: is owned by uid {st.st_uid}, not by us (uid {os.getuid()})")
    if st.st_mode & 0o077:
        raise SocketError(f"{path}: is accessible by other users (mode {stat.S_IMODE(st.st_mode):o}); expected 0700")


def _is_live(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(str(path))
        return True
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            return False
        raise
    finally:
        probe.close()


def bind_socket(path: Path, mode: int = 0o600, *, default_dir: bool) -> socket.socket:
    """Bind a listening Unix socket at *path* with *mode*.

    A stale socket (nothing accepts on it) is replaced; a live one or a file that is
    not a socket is refused. The socket is bound under a restrictive umask so it is
    never reachable by others, not even for a moment.
    """
    if len(os.fsencode(path)) > MAX_PATH_BYTES:
        raise SocketError(f"{path}: too long for a Unix socket path (at most {MAX_PATH_BYTES} bytes)")
    if default_dir:
        ensure_private_dir(path.parent)
    elif not path.parent.is_dir():
        raise SocketError(f"{path}: the folder {path.parent} does not exist")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISSOCK(st.st_mode):
            raise SocketError(f"{path}: exists and is not a socket; refusing to replace it")
        if _is_live(path):
            raise SocketError(f"{path}: another daemon is already listening on this socket")
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise SocketError(f"{path}: cannot bind the socket: {exc.strerror or exc}") from None
    finally:
        os.umask(old_umask)
    os.chmod(path, mode)
    sock.listen(128)
    return sock


def socket_inode(path: Path) -> int:
    """The inode of the socket file just bound, to recognise it at shutdown."""
    return os.lstat(path).st_ino


def remove_socket(path: Path, inode: int) -> None:
    """Remove the socket file if it is still the one we bound (not a successor's)."""
    try:
        if os.lstat(path).st_ino == inode:
            os.unlink(path)
    except OSError:
        pass
