"""The server's typed call log (``ssebench serve --calls-file``), read into the run record.

One :class:`~ssebench.runrecord.CallRecord` JSON line per ``test_patch`` call (server/calllog.py
writes them). Read line by line and bounded: an agent cannot make the record huge by
calling the tool without end, and a line that is not a record is skipped, not fatal.
Each call's result text (``calls/<n>.txt`` beside the calls file) is copied into the results
folder under the same name, so the record's ``text`` names a file of the run folder.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from pydantic import ValidationError

from ssebench.runrecord import CallRecord

MAX_CALLS = 10_000  # records kept; the count stays right past it (AgentFacts.calls)
MAX_LINE_BYTES = 4096  # a record is ~120 bytes


def read_calls(path: Path, limit: int = MAX_CALLS, texts_to: Path | None = None) -> tuple[tuple[CallRecord, ...], int]:
    """The first *limit* call records in *path* and how many calls it holds; none when it is missing.

    *texts_to*: the results folder the calls' texts are copied to (a record whose text cannot be
    copied says it has none); without it a record keeps no text."""
    calls: list[CallRecord] = []
    count = 0
    try:
        stream = open(path, "rb")
    except OSError:
        return (), 0
    with stream:
        while line := stream.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES:  # not a record: skip the rest of it, bounded reads
                while line and not line.endswith(b"\n"):
                    line = stream.readline(MAX_LINE_BYTES)
                continue
            try:
                call = CallRecord.model_validate_json(line)
            except ValidationError:
                continue
            count += 1
            if len(calls) < limit:
                text = _move_text(call, path.parent, texts_to) if texts_to is not None else None
                calls.append(call.model_copy(update={"text": text}))
    return tuple(calls), count


def _move_text(call: CallRecord, source: Path, results: Path) -> str | None:
    """The call's text file copied from SOURCE to RESULTS (same relative name), or None."""
    name = f"calls/{call.number}.txt"
    if call.text != name:
        return None
    try:
        fd = os.open(source / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as stream:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            (results / "calls").mkdir(mode=0o755, exist_ok=True)
            with open(results / name, "xb") as out:
                shutil.copyfileobj(stream, out)
    except OSError:
        return None
    return name
