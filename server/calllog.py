"""One log line per ``test_patch`` call: when, at which level, how it ended, how long it took.

The tool records how the call ended (:func:`record`: the typed results the agent was
shown, or :func:`record_internal_failure`), and the summary is told from those states
by ssebench/phrases.py, so the server's log never says more about withheld checks than
the agent was told and never carries a check's log; nothing re-reads the result text.
Kept as FastMCP middleware so ``app.py`` stays the tool.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from fastmcp.server.middleware import Middleware, MiddlewareContext

from ssebench import phrases
from ssebench.contract import CheckResult
from ssebench.difficulty import Level

log = logging.getLogger("ssebench.server.calls")

UNEXPECTED = "unexpected reply"  # the tool returned without recording how it ended


@dataclass
class _Ending:
    """Filled in by the tool during one call (the context holds it, the tool writes it)."""

    results: tuple[CheckResult, ...] | None = None
    internal: bool = False


_current: ContextVar[_Ending | None] = ContextVar("ssebench_test_patch_call", default=None)


def record(results: Sequence[CheckResult]) -> None:
    """The call ends with the result text of *results*; a no-op outside a logged call."""
    ending = _current.get()
    if ending is not None:
        ending.results, ending.internal = tuple(results), False


def record_internal_failure() -> None:
    """The call ends with the spec's internal-failure text."""
    ending = _current.get()
    if ending is not None:
        ending.results, ending.internal = None, True


def summary(level: Level, ending: _Ending) -> str:
    """``FAILED [build: FAILED, functional tests: not run]``, ``internal failure``..."""
    if ending.internal:
        return phrases.INTERNAL_SUMMARY
    if ending.results is None:
        return UNEXPECTED
    return phrases.summary(level, ending.results)


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
        ending = _Ending()
        token = _current.set(ending)
        try:
            result = await call_next(context)
        except BaseException as exc:
            took = max(0.0, time.monotonic() - started)
            outcome = "cancelled" if type(exc).__name__ in ("CancelledError", "Cancelled") else "error"
            log.info("%s: %s after %.1f s", where, outcome, took)
            raise
        finally:
            _current.reset(token)
        took = max(0.0, time.monotonic() - started)
        log.info("%s: %s in %.1f s", where, summary(self.level, ending), took)
        return result
