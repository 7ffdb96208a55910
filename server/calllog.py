"""One log line per ``test_patch`` call: when, at which level, how it ended, how long it took.

The tool records how the call ended (:func:`record`: the typed results the agent was
shown, or :func:`record_internal_failure`), and the summary is told from those states
by ssebench/phrases.py, so the server's log never says more about withheld checks than
the agent was told and never carries a check's log; nothing re-reads the result text.
Kept as FastMCP middleware so ``app.py`` stays the tool.

With a calls file (``ssebench serve --calls-file FILE``) each call is also one typed
:class:`ssebench.runrecord.CallRecord` JSON line there, which the entrypoint reads into
the run record: nothing has to parse the log's text lines again. The exact result text
the agent was shown goes beside it, ``calls/<n>.txt`` (the record's ``text``), so a run
page can show every call whatever the agent's client logs: the reply as sent, nothing
more, each file at most :data:`TEXT_LIMIT` bytes and all of them at most
:data:`TEXTS_BUDGET` (an agent calling without end cannot fill the disk).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp.server.middleware import Middleware, MiddlewareContext

from ssebench import phrases
from ssebench.checks import State
from ssebench.contract import CheckResult
from ssebench.difficulty import Level
from ssebench.runrecord import CallOutcome, CallRecord

from .longlog import MAX_TEXT_BYTES

log = logging.getLogger("ssebench.server.calls")

UNEXPECTED = "unexpected reply"  # the tool returned without recording how it ended
TEXTS_DIR = "calls"  # beside the calls file: calls/<n>.txt
TEXT_LIMIT = MAX_TEXT_BYTES  # the long-log rule's bound on the text a result carries
TEXTS_BUDGET = 256 << 20  # all texts of one server together


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


def outcome(level: Level, ending: _Ending) -> CallOutcome:
    """The record's word for how a call ended (CallRecord.outcome)."""
    if ending.internal:
        return "internal_failure"
    if ending.results is None:
        return "error"
    if not level.enabled or not ending.results:
        return "no_checks"
    return "failed" if any(r.state is State.FAILED for r in ending.results) else "passed"


def result_text(result: Any) -> str | None:
    """The text blocks of a tool result, as the agent's client joins them; None without any."""
    blocks = getattr(result, "content", None) or ()
    texts = [block.text for block in blocks if isinstance(getattr(block, "text", None), str)]
    return "\n".join(texts) if texts else None


class CallsFile:
    """Appends one CallRecord JSON line per call to a file (a few hundred bytes, one write),
    and keeps each call's result text in ``calls/<n>.txt`` beside it."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self.texts = path.parent / TEXTS_DIR
        self.budget = TEXTS_BUDGET

    def add(self, call: CallRecord) -> None:
        os.write(self.fd, (call.model_dump_json() + "\n").encode("utf-8"))

    def add_text(self, number: int, text: str) -> str | None:
        """Write call NUMBER's result text (blocking: run it in a thread); its path relative
        to the calls file's folder, or None when the budget is spent or the write failed."""
        data = text.encode("utf-8")
        if len(data) > TEXT_LIMIT:  # cut on a character boundary
            data = data[:TEXT_LIMIT].decode("utf-8", errors="ignore").encode("utf-8")
        if len(data) > self.budget:
            return None
        name = f"{TEXTS_DIR}/{number}.txt"
        try:
            self.texts.mkdir(mode=0o755, exist_ok=True)
            fd = os.open(self.texts / f"{number}.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
        except OSError as exc:
            log.warning("test_patch call %d: its text cannot be kept in %s (%s)", number, self.texts, exc)
            return None
        self.budget -= len(data)
        return name


class CallLog(Middleware):
    """Logs each tools/call of ``test_patch`` once, when it ends (or is cancelled)."""

    def __init__(self, level: Level, tool: str = "test_patch", calls: CallsFile | None = None) -> None:
        self.level = level
        self.tool = tool
        self.calls = calls
        self._numbers = itertools.count(1)

    def _record(self, number: int, ended: str, how: CallOutcome, took: float, text: str | None = None) -> None:
        if self.calls is not None:
            call = CallRecord(
                number=number, level=self.level.number, ended=ended, outcome=how, seconds=round(took, 3), text=text
            )
            self.calls.add(call)

    async def _keep_text(self, number: int, result: Any) -> str | None:
        """The result's text kept beside the calls file (written off the event loop), its path."""
        text = result_text(result) if self.calls is not None else None
        if text is None or self.calls is None:
            return None
        return await asyncio.to_thread(self.calls.add_text, number, text)

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
            how: CallOutcome = "cancelled" if type(exc).__name__ in ("CancelledError", "Cancelled") else "error"
            log.info("%s: %s after %.1f s", where, how, took)
            self._record(number, how, how, took)
            raise
        finally:
            _current.reset(token)
        took = max(0.0, time.monotonic() - started)
        ended = summary(self.level, ending)
        log.info("%s: %s in %.1f s", where, ended, took)
        kept = None
        try:
            kept = await self._keep_text(number, result)
        finally:  # cancelled while the text is written: the call is still recorded
            self._record(number, ended, outcome(self.level, ending), took, kept)
        return result
