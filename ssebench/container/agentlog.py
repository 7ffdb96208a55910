"""The agent's last error line, for the run summary and results.json's ``error``.

"the agent exited with status 1" alone sends the user digging through logs; the line
that says why is nearly always the CLI's own error message (Claude Code's ``result``
event, "Not logged in · Please run /login"; Codex's and opencode's ``error`` events),
which the dialog converter keeps in the ``complete`` line, or else the last line the CLI
wrote on stderr (never stdout: that is the agent's ordinary output). Only the files'
tails are read: an agent's log can be huge.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ssebench.supervise import tail_lines

TAIL_BYTES = 64 * 1024
MAX_CHARS = 300
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def last_error_line(results_dir: Path) -> str | None:
    """The agent's own last error message in RESULTS_DIR's logs, one line, or None."""
    complete = _last_complete(results_dir / "dialog.jsonl")
    if complete:
        return complete
    return _last_line(results_dir / "agent-stderr.log")


def _tail_lines(path: Path) -> list[str]:
    return tail_lines(path, None, max_bytes=TAIL_BYTES)


def _clean(text: str) -> str:
    text = " ".join(_ANSI.sub("", text).split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _last_complete(path: Path) -> str | None:
    for raw in reversed(_tail_lines(path)):
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "complete":
            error = event.get("error")
            if isinstance(error, str) and error.strip():
                return _clean(error.strip().splitlines()[0])
            return None
    return None


def _last_line(path: Path) -> str | None:
    for raw in reversed(_tail_lines(path)):
        line = _clean(raw)
        if line:
            return line
    return None
