"""Codex ``exec --json`` → dialog events.

Codex prints thread events: ``thread.started`` (the session), ``item.started`` /
``item.updated`` / ``item.completed`` carrying one item each (``agent_message``,
``reasoning``, ``mcp_tool_call``, ``command_execution``, ``file_change``,
``web_search``, ``todo_list``, ``error``), ``turn.completed`` with token usage,
``turn.failed`` and ``error``. It reports no duration: the pipeline measures it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from ssebench.dialog import events as ev
from ssebench.dialog.convert import StreamConverter
from ssebench.dialog.events import Event


class CodexDialog(StreamConverter):
    agent = "codex"

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        if kind == "thread.started":
            yield ev.init(self.agent, session=event.get("thread_id"))
        elif kind in ("item.started", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                yield from self._item(item, done=kind == "item.completed")
        elif kind == "turn.completed":
            usage = event.get("usage") or {}
            cached = usage.get("cached_input_tokens") or 0
            self.add_tokens(
                input=(usage.get("input_tokens") or 0) - cached, output=usage.get("output_tokens") or 0, cached=cached
            )
            self.finished = True
        elif kind == "turn.failed":
            self.failed = _message(event.get("error")) or "turn failed"
        elif kind == "error":
            self.failed = _message(event) or "error"

    def _item(self, item: dict, *, done: bool) -> Iterator[Event]:
        itype = item.get("type")
        item_id = str(item.get("id"))
        if itype == "agent_message" and done:
            yield ev.message(str(item.get("text", "")))
        elif itype == "reasoning" and done:
            yield ev.thinking(str(item.get("text", "")))
        elif itype == "mcp_tool_call":
            yield _mcp_call(item, item_id, done)
        elif itype == "command_execution":
            yield _command(item, item_id, done)
        elif itype == "file_change" and done:
            changes = item.get("changes") or []
            summary = "\n".join(f"{c.get('kind')} {c.get('path')}" for c in changes if isinstance(c, dict))
            yield ev.tool_finished(item_id, "file_change", ok=item.get("status") != "failed", output=summary)
        elif itype == "web_search" and done:
            yield ev.tool_finished(item_id, "web_search", ok=True, output=str(item.get("query", "")))
        elif itype == "error":
            pass  # Codex's non-fatal warnings: they stay in the raw stream only
        elif itype not in ("agent_message", "reasoning", "todo_list", "file_change", "web_search", "error") and done:
            yield ev.tool_finished(item_id, str(itype), ok=True, output=json.dumps(item, ensure_ascii=False))


def _mcp_call(item: dict, item_id: str, done: bool) -> Event:
    """An MCP tool call starting, or ended (its error's message, else its content)."""
    name = f"{item.get('server')}.{item.get('tool')}" if item.get("server") else str(item.get("tool"))
    if not done:
        return ev.tool_running(item_id, name, item.get("arguments"))
    ok = item.get("status") == "completed" and not item.get("error")
    content = ev.text_of((item.get("result") or {}).get("content"))
    output = content if ok else _message(item.get("error")) or content
    return ev.tool_finished(item_id, name, ok=ok, output=output)


def _command(item: dict, item_id: str, done: bool) -> Event:
    """A shell command starting, or ended (exit 0 or none: ok)."""
    if not done:
        return ev.tool_running(item_id, "shell", {"command": item.get("command")})
    ok = item.get("status") == "completed" and item.get("exit_code") in (0, None)
    return ev.tool_finished(item_id, "shell", ok=ok, output=str(item.get("aggregated_output") or ""))


def _message(error: object) -> str | None:
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return None
