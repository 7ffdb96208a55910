"""Gemini CLI ``--output-format stream-json`` → dialog events.

Gemini prints ``init`` (session_id, model), ``message`` (role user/assistant,
assistant text arriving as ``delta`` chunks that are merged here into one message),
``tool_use`` / ``tool_result`` paired by ``tool_id``, ``error`` and a closing
``result`` with ``stats`` (tokens, duration).
"""

from __future__ import annotations

from collections.abc import Iterator

from ssebench.dialog import events as ev
from ssebench.dialog.convert import StreamConverter
from ssebench.dialog.events import Event


class GeminiDialog(StreamConverter):
    agent = "gemini"

    def __init__(self) -> None:
        super().__init__()
        self._names: dict[str, str] = {}
        self._text: list[str] = []  # assistant deltas not yet written

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            self._text.append(str(event.get("content", "")))
            if not event.get("delta"):
                yield from self._flush()
            return
        yield from self._flush()
        if kind == "init":
            yield ev.init(self.agent, session=event.get("session_id"), model=event.get("model"))
        elif kind == "message" and event.get("role") == "user":
            yield ev.prompt(str(event.get("content", "")))
        elif kind == "tool_use":
            tool_id = str(event.get("tool_id"))
            self._names[tool_id] = str(event.get("tool_name"))
            yield ev.tool_running(tool_id, self._names[tool_id], event.get("parameters"))
        elif kind == "tool_result":
            tool_id = str(event.get("tool_id"))
            ok = event.get("status") == "success"
            error = event.get("error")
            output = event.get("output")
            if output is None and isinstance(error, dict):
                output = error.get("message")
            yield ev.tool_finished(tool_id, self._names.get(tool_id, "?"), ok=ok, output=ev.text_of(output))
        elif kind == "error" and event.get("severity") == "error":
            self.failed = str(event.get("message", "error"))
        elif kind == "result":
            self._result(event)

    def finish(self) -> Iterator[Event]:
        yield from self._flush()

    def _flush(self) -> Iterator[Event]:
        if self._text:
            text = "".join(self._text)
            self._text = []
            if text:
                yield ev.message(text)

    def _result(self, event: dict) -> None:
        self.finished = True
        if event.get("status") not in (None, "success"):
            error = event.get("error")
            self.failed = str(error.get("message") if isinstance(error, dict) else error or "error")
        stats = event.get("stats") or {}
        if isinstance(stats.get("duration_ms"), (int, float)):
            self.duration = stats["duration_ms"] / 1000
        cached = stats.get("cached") or 0
        inputs = stats.get("input_tokens") or 0
        self.add_tokens(input=max(inputs - cached, 0), output=stats.get("output_tokens") or 0, cached=cached)
