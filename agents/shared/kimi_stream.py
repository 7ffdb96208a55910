"""Kimi CLI's ``--output-format stream-json`` → dialog events; Kimi Code, its successor, prints the same.

Both print OpenAI-style chat messages, one JSON object a line: ``role: "assistant"`` with its
``content`` and ``tool_calls`` (each call's ``function.arguments`` a JSON text), then
``role: "tool"`` with the ``tool_call_id`` it answers and its ``content``. Where they differ, each
reads only what its CLI prints: Kimi CLI's ``content`` may be a list of typed parts (``text``,
``think``), where Kimi Code's is a string; Kimi Code adds ``role: "meta"`` lines, the last of
which, ``session.resume_hint``, ends the session. Neither carries token counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter


class KimiStreamJson(StreamConverter):
    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._started = False
        self._names: dict[str, str] = {}  # tool call id -> tool name

    def feed(self, event: dict) -> Iterator[Event]:
        if not self._started:
            self._started = True
            yield ev.init(self.agent)
        role = event.get("role")
        if role == "assistant":
            yield from self._assistant(event)
        elif role == "tool":
            tool_id = str(event.get("tool_call_id"))
            name = self._names.get(tool_id, "tool")
            yield ev.tool_finished(tool_id, name, ok=True, output=ev.text_of(event.get("content")))
        elif role == "meta" and event.get("type") == "session.resume_hint":
            self.finished = True

    def _assistant(self, event: dict[str, Any]) -> Iterator[Event]:
        if event.get("reasoning_content"):
            yield ev.thinking(str(event["reasoning_content"]))
        content = event.get("content")
        if isinstance(content, list):
            yield from _parts(content)
        elif content:
            yield ev.message(ev.text_of(content))
        for call in event.get("tool_calls") or []:
            function = call.get("function") or {}
            tool_id, name = str(call.get("id")), str(function.get("name") or "tool")
            self._names[tool_id] = name
            yield ev.tool_running(tool_id, name, ev.arguments_of(function.get("arguments")))


def _parts(content: list[Any]) -> Iterator[Event]:
    """Kimi CLI's typed content parts: each ``think`` a thinking event, each ``text`` a message."""
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "think" and part.get("think"):
            yield ev.thinking(str(part["think"]))
        elif part.get("type") == "text" and part.get("text"):
            yield ev.message(str(part["text"]))
