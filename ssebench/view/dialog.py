"""Paged reading of dialog.jsonl by byte offsets: never the whole file, never a whole huge line.

A page starts at a line boundary (an offset inside a line moves to the next line start),
holds at most :data:`PAGE_EVENTS` lines and about :data:`PAGE_BYTES` bytes, and says
where the next page starts, so a 50 MB dialog opens as fast as a small one and the live
view asks only for what was appended since. A line longer than :data:`LINE_LIMIT` is not
parsed: its start is shown as text and the rest skipped without being held.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

PAGE_EVENTS = 200
PAGE_BYTES = 1 << 20
LINE_LIMIT = 1 << 20
#: how much of a long text (a tool's output, a huge line) a page shows
SHOW_LIMIT = 64 << 10
KINDS = ("init", "prompt", "message", "thinking", "tool", "complete")


@dataclass
class Event:
    """One dialog line as the page shows it (``kind`` ``bad`` for what is not an event)."""

    offset: int
    size: int
    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None

    def text(self, key: str) -> str:
        """A field as text, cut to :data:`SHOW_LIMIT` characters with a note of the rest."""
        value = self.data.get(key)
        text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
        return cut(text)


@dataclass
class Page:
    offset: int
    next_offset: int
    size: int
    events: list[Event]

    @property
    def at_end(self) -> bool:
        return self.next_offset >= self.size


def cut(text: str, limit: int = SHOW_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… {len(text) - limit:,} more characters (open the file to see all)"


def read_page(path: Path, offset: int = 0, events: int = PAGE_EVENTS, budget: int = PAGE_BYTES) -> Page:
    """The page of PATH starting at the first line boundary at or after OFFSET (blocking)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as stream:
        size = os.fstat(fd).st_size
        position = _line_start(stream, max(0, min(offset, size)))
        start, found = position, list[Event]()
        while len(found) < events and position - start < budget and position < size:
            event = _read_event(stream, position)
            if event is None:  # a last line still being written: the next page starts there
                break
            found.append(event)
            position += event.size
        return Page(start, position, size, found)


def last_page_offset(path: Path, budget: int = PAGE_BYTES) -> int:
    """Where the page holding the file's end starts (about BUDGET bytes before it)."""
    try:
        return max(0, os.stat(path).st_size - budget)
    except OSError:
        return 0


def _line_start(stream: BinaryIO, offset: int) -> int:
    """OFFSET if a line starts there, else the start of the next line."""
    if offset == 0:
        return 0
    stream.seek(offset - 1)
    if stream.read(1) == b"\n":
        return offset
    while True:
        chunk = stream.read(64 << 10)
        if not chunk:
            return stream.tell()
        newline = chunk.find(b"\n")
        if newline >= 0:
            return stream.tell() - len(chunk) + newline + 1


def _read_event(stream: BinaryIO, offset: int) -> Event | None:
    """The line at OFFSET as an Event; None if it has no newline yet (being written)."""
    stream.seek(offset)
    line = stream.readline(LINE_LIMIT + 1)
    if not line.endswith(b"\n"):
        if len(line) <= LINE_LIMIT:
            return None
        return _huge_line(stream, offset, line)
    return parse_line(offset, line)


def _huge_line(stream: BinaryIO, offset: int, head: bytes) -> Event | None:
    size = len(head)
    while True:
        chunk = stream.readline(1 << 20)
        size += len(chunk)
        if not chunk:
            return None  # still being written
        if chunk.endswith(b"\n"):
            break
    shown = head[:SHOW_LIMIT].decode("utf-8", errors="replace")
    problem = f"a line of {size:,} bytes, over the {LINE_LIMIT >> 20} MiB a page reads; its start:"
    return Event(offset, size, "bad", {"raw": shown}, problem)


def parse_line(offset: int, line: bytes) -> Event:
    """One complete line: an event of a known kind, or ``bad`` naming why not."""
    text = line.decode("utf-8", errors="replace")
    problems = ["not valid UTF-8 (shown with replacement characters)"] if "\ufffd" in text else []
    try:
        data = json.loads(text)
    except ValueError as exc:
        return Event(offset, len(line), "bad", {"raw": cut(text.rstrip("\n"))}, f"not JSON ({exc})")
    if not isinstance(data, dict):
        return Event(offset, len(line), "bad", {"raw": cut(text.rstrip("\n"))}, "not a JSON object")
    kind = data.get("type")
    if kind not in KINDS:
        problems.append(f"unknown type {kind!r}")
        return Event(offset, len(line), "bad", {"raw": cut(text.rstrip("\n"))}, "; ".join(problems))
    return Event(offset, len(line), str(kind), data, "; ".join(problems) or None)
