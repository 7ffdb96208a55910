"""A check's log on disk: its stdout and stderr files read as one text.

Why its own module: the daemon streams logs to the server and never holds a whole log
in memory, so how a log is measured, cut into chunks and tailed lives in one place.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_CHUNK = 1 << 20


@dataclass(frozen=True)
class CheckLog:
    """A check's log: stdout, a blank line, then stderr (the timeout note is in stderr)."""

    stdout: Path
    stderr: Path

    def _separator(self, out_size: int) -> bytes:
        if out_size == 0:
            return b"\n"
        with open(self.stdout, "rb") as f:
            f.seek(out_size - 1)
            return b"\n" if f.read(1) == b"\n" else b"\n\n"

    def size(self) -> int:
        out = self.stdout.stat().st_size
        return out + len(self._separator(out)) + self.stderr.stat().st_size

    def chunks(self) -> Iterator[bytes]:
        """The log in pieces of at most 1 MiB; never the whole log in memory."""
        out_size = self.stdout.stat().st_size
        with open(self.stdout, "rb") as f:
            remaining = out_size  # stop at the size we measured, whatever is appended
            while remaining > 0 and (data := f.read(min(_CHUNK, remaining))):
                remaining -= len(data)
                yield data
        yield self._separator(out_size)
        with open(self.stderr, "rb") as f:
            while data := f.read(_CHUNK):
                yield data

    def tail(self, max_bytes: int = 64 * 1024) -> bytes:
        """The last *max_bytes* of the log, read from the ends of the files."""
        out_size = self.stdout.stat().st_size
        sep = self._separator(out_size)
        with open(self.stderr, "rb") as f:
            f.seek(0, os.SEEK_END)
            err_size = f.tell()
            f.seek(max(0, err_size - max_bytes))
            err = f.read()
        want = max_bytes - len(err)
        if want <= 0:
            return err
        head = sep[-want:] if want < len(sep) else sep
        want -= len(head)
        out = b""
        if want > 0 and out_size:
            with open(self.stdout, "rb") as f:
                f.seek(max(0, out_size - want))
                out = f.read(min(want, out_size))
        return out + head + err

    def share_to(self, dst: CheckLog) -> None:
        """*dst* holds this log: hard links (a build's log never changes once the build
        ended), else copies. Blocking."""
        for a, b in ((self.stdout, dst.stdout), (self.stderr, dst.stderr)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(b)
            try:
                os.link(a, b)
            except OSError:
                shutil.copyfile(a, b)

    def read_text(self) -> str:
        """The whole log as text: for tests and small logs only."""
        return b"".join(self.chunks()).decode("utf-8", "replace")


def note(log: CheckLog, text: str) -> None:
    """Append a line of ssebench's own to the end of the log (its stderr part)."""
    note = text.encode()
    with open(log.stderr, "ab+") as f:
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                note = b"\n" + note
        f.write(note)
