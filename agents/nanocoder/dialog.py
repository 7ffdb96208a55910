"""Nanocoder ``--plain --json run`` → dialog events.

Nanocoder prints nothing while it works (``--json``): one pretty-printed report at the end,
which the pipeline joins into one event (``StreamConverter.documents``):
``{"kind": "success"|"error"|"tool-approval-required", "exitCode", "finalText",
"reasoning", "toolCalls": [{"name", "arguments", "result", "error"}], "filesChanged",
"usage": {"inputTokens", "outputTokens", "totalTokens"}, "message"}``. The tool calls come
with their results but no ids or order against the text, so the dialog shows each call and
its result, then the final answer.
"""

from __future__ import annotations

from collections.abc import Iterator

from ssebench.dialog import events as ev
from ssebench.dialog.convert import StreamConverter
from ssebench.dialog.events import Event


class NanocoderDialog(StreamConverter):
    agent = "nanocoder"
    documents = True

    def feed(self, event: dict) -> Iterator[Event]:
        if "kind" not in event:
            return
        yield ev.init(self.agent)
        for number, call in enumerate(event.get("toolCalls") or [], start=1):
            tool_id, name = f"call-{number}", str(call.get("name") or "tool")
            yield ev.tool_running(tool_id, name, call.get("arguments") or {})
            error = call.get("error")
            output = error if error is not None else call.get("result")
            yield ev.tool_finished(tool_id, name, ok=error is None, output=str(output or ""))
        if event.get("reasoning"):
            yield ev.thinking(str(event["reasoning"]))
        if event.get("finalText"):
            yield ev.message(str(event["finalText"]))
        usage = event.get("usage") or {}
        self.add_tokens(input=usage.get("inputTokens", 0), output=usage.get("outputTokens", 0))
        kind = event["kind"]
        if kind == "tool-approval-required":
            self.failed = "tool approval required for: " + ", ".join(map(str, event.get("toolNames") or []))
        elif kind != "success":
            self.failed = str(event.get("message") or kind)
        self.finished = True
