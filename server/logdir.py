"""The folder long logs are saved in (``MCP_LOG_DIR``), split from longlog.py.

The agent can write ``/tmp``, so the folder is prepared once at start-up without
following symlinks, and refused when it (or a folder above it) belongs to another
user or can be changed by others (a world-writable folder is accepted only as an
ancestor and only with the sticky bit, like ``/tmp``). A refused folder does not stop
the server: each long log then ends with the spec's save-failure line, and the reason
goes to the server's log. Folders it creates are 0755 and files 0644: the agent reads
them. Files are created with ``O_EXCL|O_NOFOLLOW`` relative to the folder's descriptor
held open since start-up, so swapping the path later cannot redirect them.

Retention (``server/limits.py``): after each saved log, and at start-up, saved logs
older than ``SSE_MCP_LOG_MAX_AGE`` and then the oldest while the folder holds more than
``SSE_MCP_LOG_MAX_SIZE`` are removed, never the file just written nor one still being
written. Only our own ``<uuid>.txt`` regular files are ever removed. When a write
fails because the disk is full, every other saved log is removed and the write is
tried once more before the save is given up.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ssebench import settings

from .limits import ServerLimits

log = logging.getLogger(__name__)

ENV_VAR = "MCP_LOG_DIR"
DEFAULT_LOG_DIR = "/tmp/mcp/logs"
_SAVED_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.txt")


class LogDir:
    """``MCP_LOG_DIR``, prepared once; ``fd`` is None when it is unusable."""

    def __init__(
        self,
        path: str,
        fd: int | None,
        problem: str | None,
        *,
        max_bytes: int = ServerLimits.log_max_bytes,
        max_age: float = ServerLimits.log_max_age,
    ) -> None:
        self.path = path
        self.fd = fd
        self.problem = problem
        self.max_bytes = max_bytes
        self.max_age = max_age
        self._lock = threading.Lock()
        self._writing: set[str] = set()  # names still being written: never removed

    @classmethod
    def prepare(cls, path: str | os.PathLike[str] | None = None, limits: ServerLimits | None = None) -> LogDir:
        raw = str(path) if path is not None else (settings.raw(ENV_VAR) or DEFAULT_LOG_DIR)
        target = os.path.abspath(raw)
        if limits is None:
            try:
                limits = ServerLimits.from_env()
            except ValueError:  # the CLI refuses bad values before this point
                limits = ServerLimits()
        bounds: dict[str, Any] = {"max_bytes": limits.log_max_bytes, "max_age": limits.log_max_age}
        try:
            fd = _open_safe_dir(target)
        except (OSError, _UnsafeDir) as exc:
            problem = f"log folder {target} is not usable, long logs will not be saved: {exc}"
            log.warning("%s", problem)
            return cls(target, None, problem, **bounds)
        folder = cls(target, fd, None, **bounds)
        folder.enforce()
        return folder

    def create(self) -> tuple[int, str]:
        """A new exclusive ``<uuid>.txt``: (descriptor, path). Raises OSError."""
        if self.fd is None:
            raise OSError(self.problem or "log folder unusable")
        name = f"{uuid.uuid4()}.txt"
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(name, flags, 0o644, dir_fd=self.fd)
        os.fchmod(fd, 0o644)  # the umask must not hide it from the agent
        with self._lock:
            self._writing.add(name)
        return fd, os.path.join(self.path, name)

    def written(self, path: str) -> None:
        """*path* is complete: apply the retention limits, keeping it."""
        name = os.path.basename(path)
        with self._lock:
            self._writing.discard(name)
        self.enforce(keep=name)

    def remove(self, path: str) -> None:
        name = os.path.basename(path)
        with self._lock:
            self._writing.discard(name)
        if self.fd is not None:
            try:
                os.unlink(name, dir_fd=self.fd)
            except FileNotFoundError:
                pass

    def enforce(self, keep: str | None = None, *, everything: bool = False) -> int:
        """Remove saved logs past the age, then the oldest past the size; bytes freed.

        *everything*: remove every saved log (the disk is full). Never *keep*, nor a
        file still being written, nor anything but our own ``<uuid>.txt`` files.
        """
        if self.fd is None:
            return 0
        me = os.geteuid()
        files: list[tuple[float, int, str]] = []
        total = 0  # every saved log counts, also those that stay whatever happens
        try:
            with self._lock, os.scandir(self.fd) as entries:
                busy = set(self._writing)
                for entry in entries:
                    if not _SAVED_NAME.fullmatch(entry.name):
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode) and st.st_uid == me:
                        total += st.st_size
                        if entry.name not in busy and entry.name != keep:
                            files.append((st.st_mtime, st.st_size, entry.name))
        except OSError as exc:
            log.warning("cannot list %s: %s", self.path, exc)
            return 0
        files.sort()
        too_old = time.time() - self.max_age
        freed = 0
        for mtime, size, name in files:
            if not (everything or mtime < too_old or total > self.max_bytes):
                break  # oldest first: the newer ones are neither too old nor over the size
            try:
                os.unlink(name, dir_fd=self.fd)
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.warning("cannot remove %s/%s: %s", self.path, name, exc)
                continue
            total -= size
            freed += size
        if freed:
            log.info("removed %d bytes of old logs from %s", freed, self.path)
        return freed

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _UnsafeDir(Exception):
    pass


def _open_safe_dir(target: str) -> int:
    """Walk from ``/`` creating what is missing, never following a symlink."""
    me = os.geteuid()
    parts = list(Path(target).parts[1:])
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    walked = "/"
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            walked = os.path.join(walked, name)
            created = False
            try:
                os.mkdir(name, 0o755, dir_fd=fd)  # 0755: the agent must reach the files
                created = True
            except FileExistsError:
                pass
            try:
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if os.path.islink(walked):
                    raise _UnsafeDir(f"{walked} is a symlink") from exc
                raise
            os.close(fd)
            fd = child
            if created:
                os.fchmod(fd, 0o755)  # whatever the umask
            st = os.fstat(fd)
            if last:
                if st.st_uid != me:
                    raise _UnsafeDir(f"{walked} is owned by uid {st.st_uid}, not {me}")
                if st.st_mode & 0o022 or stat.S_IMODE(st.st_mode) & 0o755 != 0o755:
                    os.fchmod(fd, 0o755)
            else:
                if st.st_uid not in (0, me):
                    raise _UnsafeDir(f"{walked} is owned by uid {st.st_uid}")
                if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
                    raise _UnsafeDir(f"{walked} is writable by others")
        return fd
    except BaseException:
        os.close(fd)
        raise
