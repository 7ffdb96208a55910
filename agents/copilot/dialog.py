"""GitHub Copilot CLI ``-p --output-format json`` → dialog events.

Copilot prints one ``{"type", "data", "id", "timestamp"}`` object per line (``ephemeral`` ones
are progress): ``assistant.message`` (the whole text, with ``toolRequests``),
``assistant.reasoning``, ``tool.execution_start`` / ``tool.execution_complete`` paired by
``toolCallId`` (``success``, ``result.content`` or ``error.message``), ``session.error``, and a
closing ``result`` (``sessionId``, ``exitCode``, ``usage.sessionDurationMs``). Measured with
1.0.102 against a BYOK provider, the stream carries no token counts, so the dialog's stay 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ssebench.dialog import events as ev
from ssebench.dialog.convert import StreamConverter
from ssebench.dialog.events import Event


class CopilotDialog(StreamConverter):
    agent = "copilot"

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        self._names: dict[str, str] = {}

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        raw = event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if not self._started:
            self._started = True
            yield ev.init(self.agent, session=event.get("sessionId"))
        if kind == "assistant.message" and data.get("content"):
            yield ev.message(str(data["content"]))
        elif kind == "assistant.reasoning" and data.get("content"):
            yield ev.thinking(str(data["content"]))
        elif kind == "tool.execution_start":
            tool_id = str(data.get("toolCallId"))
            self._names[tool_id] = str(data.get("toolName"))
            yield ev.tool_running(tool_id, self._names[tool_id], data.get("arguments"))
        elif kind == "tool.execution_complete":
            yield self._tool_end(data)
        elif kind == "session.error":
            self.failed = str(data.get("message") or data.get("errorType") or "error")
        elif kind == "result":
            self._result(event)

    def _tool_end(self, data: dict[str, Any]) -> Event:
        ok = bool(data.get("success"))
        result = data.get("result") if ok else data.get("error")
        output = result.get("content", result.get("message")) if isinstance(result, dict) else result
        tool_id = str(data.get("toolCallId"))
        return ev.tool_finished(tool_id, self._names.get(tool_id, "?"), ok=ok, output=ev.text_of(output))

    def _result(self, event: dict[str, Any]) -> None:
        self.finished = True
        usage = event.get("usage") or {}
        if isinstance(usage.get("sessionDurationMs"), (int, float)):
            self.duration = usage["sessionDurationMs"] / 1000
        if event.get("exitCode") not in (None, 0):
            self.failed = self.failed or f"exit code {event.get('exitCode')}"
