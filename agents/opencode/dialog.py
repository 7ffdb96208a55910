"""opencode ``run --format json`` → dialog events.

opencode prints parts as they complete: ``step_start``, ``text``, ``reasoning``,
``tool_use`` (only once the call has ended: ``part.state.status`` ``completed`` or
``error``, keyed by ``part.callID``), ``step_finish`` with the step's tokens, and
``error``. It has no init or final event: the session id comes from the first line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ssebench.dialog import events as ev
from ssebench.dialog.convert import StreamConverter
from ssebench.dialog.events import Event


class OpencodeDialog(StreamConverter):
    agent = "opencode"

    def __init__(self) -> None:
        super().__init__()
        self._started = False

    def feed(self, event: dict) -> Iterator[Event]:
        if not self._started:
            self._started = True
            yield ev.init(self.agent, session=event.get("sessionID"))
        kind = event.get("type")
        raw_part = event.get("part")
        part: dict[str, Any] = raw_part if isinstance(raw_part, dict) else {}
        if kind == "text" and part.get("text"):
            yield ev.message(str(part["text"]))
        elif kind == "reasoning" and part.get("text"):
            yield ev.thinking(str(part["text"]))
        elif kind == "tool_use":
            yield from self._tool(part)
        elif kind == "step_finish":
            self._step_finish(part)
        elif kind == "error":
            self.failed = _error_text(event.get("error") or {})

    def _tool(self, part: dict[str, Any]) -> Iterator[Event]:
        """A call: running, or (opencode reports it once it ended) running then finished."""
        state = part.get("state") or {}
        tool_id = str(part.get("callID") or part.get("id"))
        name = str(part.get("tool"))
        status = state.get("status")
        yield ev.tool_running(tool_id, name, state.get("input"))
        if status not in ("pending", "running"):
            ok = status == "completed"
            output = state.get("output") if ok else state.get("error")
            yield ev.tool_finished(tool_id, name, ok=ok, output=ev.text_of(output))

    def _step_finish(self, part: dict[str, Any]) -> None:
        """A step's tokens (cache writes count as input, reasoning as output); ``stop``: the end."""
        tokens = part.get("tokens") or {}
        cache = tokens.get("cache") or {}
        self.add_tokens(
            input=(tokens.get("input") or 0) + (cache.get("write") or 0),
            output=(tokens.get("output") or 0) + (tokens.get("reasoning") or 0),
            cached=cache.get("read") or 0,
        )
        if part.get("reason") == "stop":
            self.finished = True


def _error_text(error: object) -> str:
    """The message of an ``error`` event: its data's message, else its name, else itself."""
    data = error.get("data") if isinstance(error, dict) else None
    return str((data or {}).get("message") or (error.get("name") if isinstance(error, dict) else error) or "error")
