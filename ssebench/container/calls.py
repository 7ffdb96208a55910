"""The server's typed call log (``ssebench serve --calls-file``), read into the run record.

One :class:`~ssebench.runrecord.CallRecord` JSON line per ``test_patch`` call (server/calllog.py
writes them). Read line by line and bounded: an agent cannot make the record huge by
calling the tool without end, and a line that is not a record is skipped, not fatal.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ssebench.runrecord import CallRecord

MAX_CALLS = 10_000  # records kept; the count stays right past it (AgentFacts.calls)
MAX_LINE_BYTES = 4096  # a record is ~120 bytes


def read_calls(path: Path, limit: int = MAX_CALLS) -> tuple[tuple[CallRecord, ...], int]:
    """The first *limit* call records in *path* and how many calls it holds; none when it is missing."""
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
                calls.append(call)
    return tuple(calls), count
