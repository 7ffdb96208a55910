"""Render dialog events for a terminal: one headed entry per event, bodies indented.

Kept apart from the CLI so tests can render to a string and compare exact text.
"""

from __future__ import annotations

import json

from rich.text import Text

from ssebench.dialog.events import Event

INDENT = " " * 20
DEFAULT_MAX_LINES = 40

_MARK = {
    "init": ("●", "bold cyan"),
    "prompt": ("▶", "bold"),
    "message": ("◆", "green"),
    "thinking": ("…", "dim italic"),
    "complete": ("■", "bold"),
}
_TOOL = {"running": ("⚙", "yellow"), "success": ("✓", "green"), "error": ("✗", "bold red")}
_COMPLETE = {"success": "bold green", "error": "bold red", "timeout": "bold red", "interrupted": "bold yellow"}


def render_event(event: Event, *, max_lines: int | None = DEFAULT_MAX_LINES) -> Text:
    kind = str(event.get("type"))
    clock = str(event.get("ts", ""))[11:19] or "--:--:--"
    if kind == "tool":
        mark, style = _TOOL.get(str(event.get("status")), ("?", ""))
    else:
        mark, style = _MARK.get(kind, ("?", ""))
    out = Text()
    out.append(f"{clock} ", style="dim")
    out.append(f"{mark} {kind:<9}", style=style)
    head, body = _describe(event)
    out.append(head, style=style if kind in ("tool", "complete") else "")
    if body:
        out.append("\n")
        out.append(_indent(body, max_lines), style="dim" if kind == "thinking" else "")
    return out


def _describe(event: Event) -> tuple[str, str]:
    kind = event.get("type")
    if kind == "init":
        extras = [f"model {event['model']}"] if event.get("model") else []
        if event.get("session"):
            extras.append(f"session {event['session']}")
        if isinstance(event.get("tools"), list):
            extras.append(f"{len(event['tools'])} tools")
        head = str(event.get("agent", "?"))
        return (f"{head} ({', '.join(extras)})" if extras else head), ""
    if kind in ("prompt", "message", "thinking"):
        return _first_and_rest(str(event.get("text", "")))
    if kind == "tool":
        head = f"{event.get('name')} {event.get('status')} [{event.get('id')}]"
        if event.get("status") == "running":
            args = event.get("input")
            return (head + (f" {json.dumps(args, ensure_ascii=False)}" if args else "")), ""
        return head, str(event.get("output", ""))
    if kind == "complete":
        tokens = event.get("tokens") or {}
        turns = event.get("turns", 0)
        head = (
            f"{event.get('status')} · {turns} turn{'s' if turns != 1 else ''} · "
            f"{float(event.get('duration', 0)):.1f} s · tokens {tokens.get('input', 0)} in, "
            f"{tokens.get('output', 0)} out, {tokens.get('cached', 0)} cached"
        )
        if event.get("exit_code") is not None:
            head += f" · exit {event['exit_code']}"
        return head, str(event.get("error") or "")
    return json.dumps(event, ensure_ascii=False), ""


def _first_and_rest(text: str) -> tuple[str, str]:
    first, _, rest = text.partition("\n")
    return first, rest


def _indent(body: str, max_lines: int | None) -> str:
    lines = body.split("\n")
    hidden = 0
    if max_lines is not None and len(lines) > max_lines:
        hidden = len(lines) - max_lines
        lines = lines[:max_lines]
    text = "\n".join(INDENT + line if line else "" for line in lines)
    if hidden:
        text += f"\n{INDENT}… {hidden} more line{'s' if hidden != 1 else ''} (--full shows all)"
    return text
