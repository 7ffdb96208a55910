"""Write ``dialog.jsonl``: one JSON object a line, numbered and time-stamped.

Each line is flushed as soon as it is written so ``ssebench dialog show --follow``
(and a web UI tailing the file) sees the session live. The file is created
exclusively and never through a symlink: the results folder may sit where the agent
can write.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from ssebench.dialog.events import Event


def timestamp() -> str:
    """UTC time in ISO 8601 with milliseconds, e.g. ``2026-11-30T03:45:12.345Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# Characters some readers (Python's str.splitlines, editors) take for line breaks: JSON
# allows them raw inside strings, so escape them to keep one event on one line for all.
_LINE_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _one_line(text: str) -> str:
    for char, escaped in _LINE_BREAKS.items():
        text = text.replace(char, escaped)
    return text


class DialogWriter:
    """Append events with ``seq`` (from 1) and ``ts``; safe to call from several threads."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._seq = 0
        self._lock = threading.Lock()

    @classmethod
    def create(cls, path: Path) -> DialogWriter:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o644)
        return cls(os.fdopen(fd, "w", encoding="utf-8"))

    @property
    def count(self) -> int:
        return self._seq

    def write(self, event: Event) -> Event:
        with self._lock:
            self._seq += 1
            line = {"seq": self._seq, "ts": timestamp(), **event}
            self._stream.write(_one_line(json.dumps(line, ensure_ascii=False)) + "\n")
            self._stream.flush()
            return line

    def close(self) -> None:
        with self._lock:
            self._stream.close()
