"""The parts of a run page beyond the list's row: each test_patch call's text, the agent's
output, the stages' timings. All read bounded, never a whole log in memory.

A call's text is the file the server kept (``calls/<n>.txt``, the record's ``text``: the
exact reply the agent was shown); a run without one (recorded before ssebench kept them)
takes it from the dialog, the n-th test_patch result there, and says so.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ssebench.runrecord import CallRecord, RunResult
from ssebench.view import dialog
from ssebench.view.files import open_nofollow
from ssebench.view.runs import DIALOG

#: the agent's output files a run page shows the end of
OUTPUTS = ("agent-stdout.log", "agent-stderr.log")
#: how much of an output file the page shows (its end); the file itself is a click away
OUTPUT_TAIL = 64 << 10
#: how much of a call's text the page shows inline (the server keeps at most 4 MiB)
CALL_SHOWN = 256 << 10
#: how far into dialog.jsonl the page looks for test_patch results
DIALOG_SCAN = 256 << 20


@dataclass
class CallView:
    """One test_patch call as the run page shows it."""

    call: CallRecord
    text: str | None = None
    source: str | None = None  # the file it came from ("calls/1.txt"), or "dialog.jsonl"
    size: int = 0
    cut: bool = False


@dataclass
class Output:
    """The end of one of the agent's output files."""

    name: str
    size: int
    text: str
    cut: bool  # only the end is shown


def calls(folder: Path, record: RunResult | None) -> list[CallView]:
    """Every call of the record with its text, from its file or else from the dialog."""
    if record is None:
        return []
    views = [_from_file(folder, c) for c in record.calls]
    missing = [v for v in views if v.text is None]
    if missing:
        found = _dialog_results(folder / DIALOG, max(v.call.number for v in missing))
        for view in missing:
            text = found.get(view.call.number)
            if text is not None:
                view.text, view.source, view.size = _shown(text), DIALOG, len(text.encode())
                view.cut = len(text) > CALL_SHOWN
    return views


def _from_file(folder: Path, call: CallRecord) -> CallView:
    view = CallView(call)
    if call.text != f"calls/{call.number}.txt":
        return view
    try:
        with open_nofollow(folder / call.text) as stream:
            data = stream.read(CALL_SHOWN * 4 + 1)
            view.size = os.fstat(stream.fileno()).st_size
    except OSError:
        return view
    text = data.decode("utf-8", errors="replace")
    view.text, view.source, view.cut = _shown(text), call.text, view.size > len(data) or len(text) > CALL_SHOWN
    return view


def _shown(text: str) -> str:
    return text[:CALL_SHOWN]


def _dialog_results(path: Path, wanted: int) -> dict[int, str]:
    """The first WANTED test_patch results of the dialog, numbered from 1 (a bounded scan)."""
    found: dict[int, str] = {}
    try:
        stream = open_nofollow(path)
    except OSError:
        return found
    with stream:
        read = 0
        while len(found) < wanted and read < DIALOG_SCAN:
            line = stream.readline(dialog.LINE_LIMIT + 1)
            if not line:
                break
            read += len(line)
            if not line.endswith(b"\n") or b"test_patch" not in line:
                continue  # a huge line (its rest comes as the next "lines"), or not a result
            event = dialog.parse_line(0, line)
            name, status = str(event.data.get("name", "")), event.data.get("status")
            if event.kind == "tool" and "test_patch" in name and status != "running":
                output = event.data.get("output")
                found[len(found) + 1] = output if isinstance(output, str) else json.dumps(output, indent=2)
    return found


def outputs(folder: Path) -> list[Output]:
    """The end of each of the agent's output files that exists."""
    shown = []
    for name in OUTPUTS:
        try:
            with open_nofollow(folder / name) as stream:
                size = stream.seek(0, os.SEEK_END)
                stream.seek(max(0, size - OUTPUT_TAIL))
                data = stream.read(OUTPUT_TAIL)
        except OSError:
            continue
        text = data.decode("utf-8", errors="replace")
        if size > OUTPUT_TAIL:  # start at a line: the first one is cut
            text = text.split("\n", 1)[-1]
        shown.append(Output(name, size, text, size > OUTPUT_TAIL))
    return shown


def stages(record: RunResult | None) -> list[tuple[str, str, str, float | None]]:
    """Each stage of the run: name, state, detail, seconds (the record's timings)."""
    if record is None:
        return []
    return [(name, s.state, s.detail, s.seconds) for name, s in record.stages.items()]
