"""A scripted Anthropic Messages API (``POST /v1/messages``), for Claude Code and opencode."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from .base import RecordedRequest, Reply, ScriptedModel

_ids = itertools.count(1)


@dataclass
class AnthropicToolResult:
    """A ``tool_result`` block the CLI sent back, as sent."""

    tool_use_id: str
    content: Any  # a string, or a list of blocks ({"type": "text", "text": ...}, ...)
    is_error: bool

    @property
    def text_blocks(self) -> list[str] | None:
        """The texts when ``content`` is a list of text blocks only, else None."""
        if isinstance(self.content, list) and all(
            isinstance(b, dict) and b.get("type") == "text" for b in self.content
        ):
            return [b["text"] for b in self.content]
        return None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(b.get("text", "") for b in self.content if isinstance(b, dict))


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


class AnthropicModel(ScriptedModel):
    tool_name = "mcp__ssebench__test_patch"
    model_id = "claude-sonnet-4-5"

    def respond(self, req: RecordedRequest) -> Reply:
        path = req.path.rstrip("/")
        body = req.body if isinstance(req.body, dict) else {}
        if req.method == "POST" and path.endswith("/messages/count_tokens"):
            req.kind = "count"
            return Reply(json_body={"input_tokens": 100})
        if path == "/api/hello":  # Claude Code's reachability probe
            req.kind = "side"
            return Reply(json_body={"message": "hello"})
        if req.method != "POST" or not path.endswith("/messages"):
            req.kind = "unknown"
            return Reply(
                404, {"type": "error", "error": {"type": "not_found_error", "message": f"no route {req.path}"}}
            )
        offers_tool = self.tool_name in _tool_names(body)
        req.kind = "turn" if offers_tool else "side"
        answered = self._our_results(body)
        if offers_tool and self.call_tool and not answered:
            req.answer = "tool"
            block = {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": self.tool_name, "input": {}}
            return self._message(body, [block], "tool_use")
        req.answer = "text"
        text = self.final_text if offers_tool else "ssebench e2e"
        return self._message(body, [{"type": "text", "text": text}], "end_turn")

    def _our_results(self, body: dict[str, Any]) -> list[AnthropicToolResult]:
        """tool_result blocks answering a tool_use of our tool, in this conversation."""
        ours: set[str] = set()
        found: list[AnthropicToolResult] = []
        for message in body.get("messages") or []:
            for b in _blocks(message):
                if b.get("type") == "tool_use" and b.get("name") == self.tool_name:
                    ours.add(b.get("id", ""))
                elif b.get("type") == "tool_result" and b.get("tool_use_id") in ours:
                    found.append(AnthropicToolResult(b["tool_use_id"], b.get("content"), bool(b.get("is_error"))))
        return found

    def tool_results(self) -> list[AnthropicToolResult]:
        """Each distinct tool result handed back to the model, in order of arrival."""
        seen: dict[str, AnthropicToolResult] = {}
        for req in self.turns():
            for result in self._our_results(req.body):
                seen.setdefault(result.tool_use_id, result)
        return list(seen.values())

    def _message(self, body: dict[str, Any], content: list[dict[str, Any]], stop: str) -> Reply:
        msg_id = f"msg_{next(_ids):04d}"
        model = body.get("model") or self.model_id
        usage = {
            "input_tokens": 100,
            "output_tokens": 10,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if not body.get("stream"):
            return Reply(
                json_body={
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                }
            )
        events: list[tuple[str | None, Any]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {**usage, "output_tokens": 1},
                    },
                },
            )
        ]
        for index, block in enumerate(content):
            if block["type"] == "tool_use":
                events += [
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}},
                    ),
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": "{}"},
                        },
                    ),
                ]
            else:
                events += [
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                    ),
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": block["text"]},
                        },
                    ),
                ]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 10},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return Reply(sse=events)
