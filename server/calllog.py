"""One log line per ``test_patch`` call: when, at which level, how it ended, how long it took.

The summary is cut from the result text the agent received (headline and ``Checks:``
lines), so the server's log never says more about withheld checks than the agent was told,
and never carries a check's log. Kept as FastMCP middleware so ``app.py`` stays the tool.
"""

from __future__ import annotations

import itertools
import logging
import time
from typing import Any

from fastmcp.server.middleware import Middleware, MiddlewareContext

from ssebench.difficulty import Level

log = logging.getLogger("ssebench.server.calls")

_PREFIX = "test_patch result: "


def summary(text: str) -> str:
    """``FAILED [build: FAILED, functional tests: not run]`` from a result text."""
    lines = text.splitlines()
    head = lines[0] if lines else ""
    if not head.startswith(_PREFIX):
        return "internal failure" if "internal testing failure" in head else "unexpected reply"
    verdict = head[len(_PREFIX):]
    if verdict.startswith("FAILED"):
        verdict = "FAILED"
    checks = []
    for line in lines[1:]:
        if line.startswith("- ") and ": " in line:
            label, _, rest = line[2:].partition(": ")
            checks.append(f"{label}: {rest.split(' (', 1)[0]}")
        elif checks and not line.strip():
            break
    return verdict.rstrip(".") + (f" [{', '.join(checks)}]" if checks else "")


def _text(result: Any) -> str:
    for block in getattr(result, "content", None) or ():
        if getattr(block, "type", None) == "text":
            return str(block.text)
    return ""


class CallLog(Middleware):
    """Logs each tools/call of ``test_patch`` once, when it ends (or is cancelled)."""

    def __init__(self, level: Level, tool: str = "test_patch") -> None:
        self.level = level
        self.tool = tool
        self._numbers = itertools.count(1)

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        if getattr(context.message, "name", None) != self.tool:
            return await call_next(context)
        number = next(self._numbers)
        started = time.monotonic()
        where = f"test_patch call {number} (level {self.level.number})"
        try:
            result = await call_next(context)
        except BaseException as exc:
            took = max(0.0, time.monotonic() - started)
            outcome = "cancelled" if type(exc).__name__ in ("CancelledError", "Cancelled") else "error"
            log.info("%s: %s after %.1f s", where, outcome, took)
            raise
        took = max(0.0, time.monotonic() - started)
        log.info("%s: %s in %.1f s", where, summary(_text(result)), took)
        return result
