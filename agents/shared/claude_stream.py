"""Claude Code's ``--output-format stream-json`` → dialog events; Qwen Code prints the same shape.

The CLI prints whole messages, one JSON object a line: ``system``/``init`` (session, model,
tools), ``assistant`` messages whose content blocks are ``text``, ``thinking`` and
``tool_use``, ``user`` messages carrying ``tool_result`` blocks (paired to the call by
``tool_use_id``), and a closing ``result`` with the turn count, duration, token usage and
(Claude Code only) ``total_cost_usd``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter


class ClaudeStreamJson(StreamConverter):
    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._names: dict[str, str] = {}  # tool_use id -> tool name

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            yield ev.init(
                self.agent,
                session=event.get("session_id"),
                model=event.get("model"),
                tools=[t for t in event.get("tools", []) if isinstance(t, str)],
            )
        elif kind == "assistant":
            yield from self._assistant(event.get("message") or {})
        elif kind == "user":
            yield from self._user(event.get("message") or {})
        elif kind == "result":
            self._result(event)

    def _assistant(self, message: dict) -> Iterator[Event]:
        for block in _blocks(message):
            btype = block.get("type")
            if btype == "text" and block.get("text"):
                yield ev.message(block["text"])
            elif btype == "thinking" and block.get("thinking"):
                yield ev.thinking(block["thinking"])
            elif btype == "tool_use":
                tool_id = str(block.get("id"))
                self._names[tool_id] = str(block.get("name"))
                yield ev.tool_running(tool_id, self._names[tool_id], block.get("input"))

    def _user(self, message: dict) -> Iterator[Event]:
        content = message.get("content")
        if isinstance(content, str):
            return  # a plain user turn: the prompt, which the pipeline logs itself
        for block in _blocks(message):
            if block.get("type") != "tool_result":
                continue
            tool_id = str(block.get("tool_use_id"))
            yield ev.tool_finished(
                tool_id,
                self._names.get(tool_id, "?"),
                ok=not block.get("is_error", False),
                output=ev.text_of(block.get("content")),
            )

    def _result(self, event: dict) -> None:
        self.finished = True
        if event.get("is_error") or event.get("subtype") != "success":
            self.failed = str(event.get("result") or event.get("subtype") or "error")
        if isinstance(event.get("duration_ms"), (int, float)):
            self.duration = event["duration_ms"] / 1000
        usage = event.get("usage") or {}
        self.add_tokens(
            input=(usage.get("input_tokens") or 0) + (usage.get("cache_creation_input_tokens") or 0),
            output=usage.get("output_tokens") or 0,
            cached=usage.get("cache_read_input_tokens") or 0,
        )
        self.add_cost(event.get("total_cost_usd"))  # the session's total, in the one result


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict)]
