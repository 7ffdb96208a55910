"""Cline CLI ``--json`` → dialog events.

Cline prints one JSON object per line: ``hook_event`` lines (``agent_start`` carries the
``taskId``), ``agent_event`` lines whose ``event`` is ``content_start``/``content_end`` of a
``text``, ``reasoning`` or ``tool`` block (a tool's ``toolCallId``, ``toolName``, ``input``, then
its ``output``: the MCP result, ``content`` and ``isError``), ``usage`` per model call,
``error`` and ``done``, and a closing ``run_result`` (``finishReason``, ``durationMs``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ssebench.dialog import events as ev
from ssebench.dialog.convert import StreamConverter
from ssebench.dialog.events import Event


class ClineDialog(StreamConverter):
    agent = "cline"

    def __init__(self) -> None:
        super().__init__()
        self._started = False

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        if not self._started:
            self._started = True
            yield ev.init(self.agent, session=event.get("taskId"))
        if kind == "agent_event" and isinstance(event.get("event"), dict):
            yield from self._agent_event(event["event"])
        elif kind == "run_result":
            self._result(event)

    def _agent_event(self, event: dict[str, Any]) -> Iterator[Event]:
        kind = event.get("type")
        content = event.get("contentType")
        if kind == "content_start" and content == "tool":
            yield ev.tool_running(str(event.get("toolCallId")), str(event.get("toolName")), event.get("input"))
        elif kind == "content_end" and content == "tool":
            yield self._tool_end(event)
        elif kind == "content_end" and content == "text" and event.get("text"):
            yield ev.message(str(event["text"]))
        elif kind == "content_end" and content in ("reasoning", "thinking") and event.get("text"):
            yield ev.thinking(str(event["text"]))
        elif kind == "usage":
            self.add_tokens(
                input=event.get("inputTokens") or 0,
                output=event.get("outputTokens") or 0,
                cached=event.get("cacheReadTokens") or 0,
            )
        elif kind == "error":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            self.failed = str(message or event.get("message") or "error")

    def _tool_end(self, event: dict[str, Any]) -> Event:
        output = event.get("output")
        error = event.get("error")
        ok = error is None and not (isinstance(output, dict) and output.get("isError"))
        if isinstance(output, dict) and "content" in output:
            text = ev.text_of(output["content"])
        else:
            text = ev.text_of(output if output is not None else error)
        return ev.tool_finished(str(event.get("toolCallId")), str(event.get("toolName")), ok=ok, output=text)

    def _result(self, event: dict[str, Any]) -> None:
        self.finished = True
        if isinstance(event.get("durationMs"), (int, float)):
            self.duration = event["durationMs"] / 1000
        reason = event.get("finishReason")
        if reason not in (None, "completed"):
            error = event.get("error")
            self.failed = str((error.get("message") if isinstance(error, dict) else error) or reason)
