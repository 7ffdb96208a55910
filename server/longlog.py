"""The long-log rule: a log over 10,000 words goes to a file, the agent gets its tail.

A check may print gigabytes, so the log is never held whole: it streams from the
daemon straight into ``<uuid>.txt`` in ``MCP_LOG_DIR`` while its words are counted
(only up to the limit), and the tail is found by reading that file backwards.

Words are runs of non-whitespace bytes (ASCII whitespace, as ``bytes.split``); lines
end with ``\\n`` (a final newline does not start another line). The tail is the
shorter of the last 100 lines and the last 10,000 words; both are suffixes of the
log, so the shorter is the one that starts later.

The folder the logs are saved in, its safety and retention: :mod:`.logdir`.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from ssebench.difficulty import Check

from .logdir import LogDir
from .report import LogSection

log = logging.getLogger(__name__)

MAX_WORDS = 10_000
MAX_LINES = 100
# Guard for logs with few words but huge lines (one 1 GiB line is one word): no more
# than this many bytes of log text are ever held in memory or put in the result; a
# log above it is treated as long and its tail cut to its last MAX_TEXT_BYTES.
MAX_TEXT_BYTES = 4 * 1024 * 1024
_BLOCK = 1 << 16
_WORD_START = re.compile(rb"(?<!\S)\S")
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
        view = view[os.write(fd, view) :]


def capture(fill: Callable[[Callable[[bytes], None]], None], log_dir: LogDir, check: Check) -> LogSection:
    """Run ``fill(feed)`` (which calls ``feed`` with each chunk of the log) through the rule."""
    cap = LogCapture(log_dir, check)
    try:
        fill(cap.feed)
        return cap.finish()
    except BaseException:
        cap.discard()
        raise
