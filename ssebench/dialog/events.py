"""The dialog log's event vocabulary (docs/dialog-protocol.md), written once.

Converters build events with these helpers; only the writer adds ``seq`` and ``ts``,
so every converter produces the same shapes and nothing else invents fields.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]

EVENT_TYPES = ("init", "prompt", "message", "thinking", "tool", "complete")
TOOL_STATES = ("running", "success", "error")
COMPLETE_STATES = ("success", "error", "timeout", "interrupted")


def init(agent: str, *, session: str | None = None, model: str | None = None, tools: list[str] | None = None) -> Event:
    event: Event = {"type": "init", "agent": agent}
    if session:
        event["session"] = str(session)
    if model:
        event["model"] = str(model)
    if tools is not None:
        event["tools"] = [str(t) for t in tools]
    return event


def prompt(text: str) -> Event:
    return {"type": "prompt", "text": _str(text)}


def message(text: str) -> Event:
    return {"type": "message", "role": "assistant", "text": _str(text)}


def thinking(text: str) -> Event:
    return {"type": "thinking", "text": _str(text)}


def tool_running(tool_id: str, name: str, arguments: Any = None) -> Event:
    return {
        "type": "tool",
        "id": str(tool_id),
        "name": str(name),
        "status": "running",
        "input": arguments if arguments is not None else {},
    }


def tool_finished(tool_id: str, name: str, *, ok: bool, output: str) -> Event:
    return {
        "type": "tool",
        "id": str(tool_id),
        "name": str(name),
        "status": "success" if ok else "error",
        "output": _str(output),
    }


def complete(
    status: str,
    *,
    turns: int,
    duration: float,
    tokens: dict[str, int],
    exit_code: int | None = None,
    error: str | None = None,
) -> Event:
    event: Event = {
        "type": "complete",
        "status": status,
        "turns": turns,
        "duration": round(duration, 3),
        "tokens": dict(tokens),
    }
    if exit_code is not None:
        event["exit_code"] = exit_code
    if error:
        event["error"] = error
    return event


def _str(value: Any) -> str:
    return value if isinstance(value, str) else text_of(value)


def text_of(content: Any) -> str:
    """The text of an MCP/Anthropic-style content value (string or list of blocks).

    Non-text blocks are named rather than dropped, so a reader sees that an image
    or resource was returned.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                else:
                    parts.append(f"[{block.get('type', 'content')}]")
        return "\n".join(parts)
    return str(content)


def arguments_of(raw: Any) -> Any:
    """A tool call's arguments as a stream gives them: OpenAI-style streams carry a JSON text,
    decoded when it is valid (kept as the text when not: the dialog shows what was sent)."""
    if isinstance(raw, str):
        import json

        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw if raw is not None else {}
