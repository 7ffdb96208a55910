"""The long-log rule: a log over 10,000 words goes to a file, the agent gets its tail.

A check may print gigabytes, so the log is never held whole: it streams from the
daemon straight into ``<uuid>.txt`` in ``MCP_LOG_DIR`` while its words are counted
(only up to the limit), and the tail is found by reading that file backwards.

Words are runs of non-whitespace bytes (ASCII whitespace, as ``bytes.split``); lines
end with ``\\n`` (a final newline does not start another line). The tail is the
shorter of the last 100 lines and the last 10,000 words; both are suffixes of the
log, so the shorter is the one that starts later.

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

import errno
import logging
import os
import re
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ssebench.difficulty import Check

from .limits import ServerLimits
from .report import LogSection

log = logging.getLogger(__name__)

ENV_VAR = "MCP_LOG_DIR"
DEFAULT_LOG_DIR = "/tmp/mcp/logs"
MAX_WORDS = 10_000
MAX_LINES = 100
# Guard for logs with few words but huge lines (one 1 GiB line is one word): no more
# than this many bytes of log text are ever held in memory or put in the result; a
# log above it is treated as long and its tail cut to its last MAX_TEXT_BYTES.
MAX_TEXT_BYTES = 4 * 1024 * 1024
_BLOCK = 1 << 16
_WORD_START = re.compile(rb"(?<!\S)\S")
_SAVED_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.txt")
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


# ---------------------------------------------------------------- the tail rule


def tail_start(
    f: BinaryIO, size: int, *, max_lines: int = MAX_LINES, max_words: int = MAX_WORDS, block: int = _BLOCK
) -> int:
    """Offset where the tail of the first ``size`` bytes of ``f`` starts.

    Reads backwards in blocks and stops as soon as both limits are found, so only
    the tail (plus one block) is ever read.
    """
    line_start: int | None = None
    word_start: int | None = None
    newlines = 0
    words = 0
    end = size
    while end > 0 and (line_start is None or word_start is None):
        begin = max(0, end - block)
        # One byte before the block tells whether its first byte starts a word.
        read_from = max(0, begin - 1)
        f.seek(read_from)
        buf = f.read(end - read_from)
        skip = begin - read_from
        if line_start is None:
            # Scan newlines right to left; the very last byte's newline ends the last line.
            pos = len(buf)
            while True:
                nl = buf.rfind(b"\n", skip, pos)
                if nl < 0:
                    break
                pos = nl
                if read_from + nl == size - 1:
                    continue
                newlines += 1
                if newlines == max_lines:
                    line_start = read_from + nl + 1
                    break
        if word_start is None:
            starts = [m.start() for m in _WORD_START.finditer(buf) if m.start() >= skip]
            if words + len(starts) >= max_words:
                word_start = read_from + starts[len(starts) - (max_words - words)]
            words += len(starts)
        end = begin
    return max(line_start or 0, word_start or 0)


def count_words_upto(data: bytes, limit: int, ends_in_word: bool) -> tuple[int, bool]:
    """Words starting in ``data`` (stops counting past ``limit``), and whether it ends mid-word.

    ``ends_in_word``: the previous chunk ended inside a word, which then continues here.
    """
    count = 0
    for m in _WORD_START.finditer(data):
        if m.start() == 0 and ends_in_word:
            continue
        count += 1
        if count > limit:
            break
    return count, not data[-1:].isspace()


# ---------------------------------------------------------------- the folder


class LogDir:
    """``MCP_LOG_DIR``, prepared once; ``fd`` is None when it is unusable."""

    def __init__(self, path: str, fd: int | None, problem: str | None, *,
                 max_bytes: int = ServerLimits.log_max_bytes, max_age: float = ServerLimits.log_max_age) -> None:
        self.path = path
        self.fd = fd
        self.problem = problem
        self.max_bytes = max_bytes
        self.max_age = max_age
        self._lock = threading.Lock()
        self._writing: set[str] = set()  # names still being written: never removed

    @classmethod
    def prepare(cls, path: str | os.PathLike[str] | None = None, limits: ServerLimits | None = None) -> LogDir:
        raw = str(path) if path is not None else (os.environ.get(ENV_VAR) or DEFAULT_LOG_DIR)
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


# ---------------------------------------------------------------- capture


@dataclass
class _Sink:
    file: BinaryIO
    path: str | None  # None: an anonymous temporary file (saving failed)
    start: int = 0  # offset in the log of the file's first byte


class LogCapture:
    """Receives a log in chunks, counting words up to the limit, and yields its :class:`LogSection`.

    Blocking: it is meant to run in a worker thread, with the download that feeds it,
    so a gigabyte of log costs the event loop nothing.
    """

    def __init__(self, log_dir: LogDir, check: Check) -> None:
        self.log_dir = log_dir
        self.check = check
        self.size = 0
        self.words = 0
        self._ends_in_word = False
        self._sink: _Sink | None = self._open_sink()

    def _open_sink(self) -> _Sink:
        try:
            fd, path = self.log_dir.create()
            return _Sink(os.fdopen(fd, "w+b", buffering=0), path)
        except OSError as exc:
            if self.log_dir.fd is not None:  # a folder problem was logged at start-up
                log.warning("cannot create a log file in %s: %s", self.log_dir.path, exc)
            return _Sink(tempfile.TemporaryFile(), None)

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self.words <= MAX_WORDS:
            n, self._ends_in_word = count_words_upto(chunk, MAX_WORDS - self.words, self._ends_in_word)
            self.words += n
        self.size += len(chunk)
        assert self._sink is not None
        try:
            self._write(chunk)
        except OSError as exc:
            if self._sink.path is None:
                raise
            # Saving failed part-way (disk full?): the log goes on in an anonymous
            # temporary file, which starts with the last MAX_TEXT_BYTES of the partial
            # file (so the tail is whole), and the partial file is dropped.
            log.warning("writing %s failed: %s", self._sink.path, exc)
            fallback = tempfile.TemporaryFile()
            prior = self.size - len(chunk)
            kept = _copy_tail(self._sink.file.fileno(), prior, fallback)
            self.discard()
            self._sink = _Sink(fallback, None, start=prior - kept)
            self._sink.file.write(chunk)

    def _write(self, chunk: bytes) -> None:
        """Write *chunk*; when the disk is full, free it of the other saved logs and retry once."""
        assert self._sink is not None
        sink = self._sink
        if sink.path is None:
            sink.file.write(chunk)
            return
        # The saved file is unbuffered: after a failed write we know what it holds.
        fd = sink.file.fileno()
        try:
            _write_all(fd, chunk)
            return
        except OSError as exc:
            if exc.errno not in _NO_SPACE:
                raise
            log.warning("%s: %s; removing the other saved logs", self.log_dir.path, exc)
        os.ftruncate(fd, self.size - len(chunk))  # what a partial write added goes
        os.lseek(fd, 0, os.SEEK_END)
        if not self.log_dir.enforce(keep=os.path.basename(sink.path), everything=True):
            raise OSError(errno.ENOSPC, "no space left on the device, and no old log to remove")
        _write_all(fd, chunk)

    def discard(self) -> None:
        """Drop everything (on error or cancellation): no partial file stays behind."""
        if self._sink is not None:
            self._sink.file.close()
            if self._sink.path is not None:
                self.log_dir.remove(self._sink.path)
            self._sink = None

    def finish(self) -> LogSection:
        sink = self._sink
        assert sink is not None
        sink.file.flush()
        long = self.words > MAX_WORDS or self.size > MAX_TEXT_BYTES
        if not long:
            sink.file.seek(0)
            text = sink.file.read().decode("utf-8", "replace")
            self.discard()
            return LogSection(self.check, text)
        held = self.size - sink.start
        start = tail_start(sink.file, held)
        start = max(start, held - MAX_TEXT_BYTES)
        sink.file.seek(start)
        text = sink.file.read(held - start).decode("utf-8", "replace")
        path = sink.path
        sink.file.close()
        self._sink = None  # the saved file stays
        if path is not None:
            self.log_dir.written(path)
        return LogSection(self.check, text, truncated=True, saved_path=path)


def _copy_tail(fd: int, size: int, into: BinaryIO) -> int:
    """Copy the last MAX_TEXT_BYTES of the first *size* bytes of *fd* into *into*; bytes copied."""
    want = min(MAX_TEXT_BYTES, size)
    offset = size - want
    try:
        while offset < size:
            data = os.pread(fd, min(_BLOCK * 16, size - offset), offset)
            if not data:
                break
            into.write(data)
            offset += len(data)
    except OSError:
        into.seek(0)
        into.truncate()
        return 0
    if offset < size:  # the file held less than we thought: start afresh
        into.seek(0)
        into.truncate()
        return 0
    return want


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def capture(fill: Callable[[Callable[[bytes], None]], None], log_dir: LogDir, check: Check) -> LogSection:
    """Run ``fill(feed)`` (which calls ``feed`` with each chunk of the log) through the rule."""
    cap = LogCapture(log_dir, check)
    try:
        fill(cap.feed)
        return cap.finish()
    except BaseException:
        cap.discard()
        raise
