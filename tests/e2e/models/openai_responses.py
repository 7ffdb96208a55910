"""A scripted OpenAI Responses API (``POST /v1/responses``), for Codex (``wire_api = "responses"``).

Codex offers MCP tools as functions grouped in a namespace (``mcp__ssebench``) and hands
a tool's result back as a ``function_call_output`` item whose ``output`` is a list of
``input_text`` items (a "Wall time" line first, then the tool's text).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

from .base import RecordedRequest, Reply, ScriptedModel

_ids = itertools.count(1)


@dataclass
class ResponsesToolResult:
    """A ``function_call_output`` item the CLI sent back, as sent."""

    call_id: str
    output: Any  # a string, or a list of {"type": "input_text", "text": ...} items

    @property
    def input_texts(self) -> list[str] | None:
        """The texts when ``output`` is a list of input_text items only, else None."""
        if isinstance(self.output, list) and all(
            isinstance(i, dict) and i.get("type") == "input_text" for i in self.output
        ):
            return [i["text"] for i in self.output]
        return None

    @property
    def text(self) -> str:
        if isinstance(self.output, str):
            return self.output
        return "\n".join(i.get("text", "") for i in self.output if isinstance(i, dict))


def _offered(tools: list[Any], namespace: str, name: str) -> bool:
    """Whether the request offers function ``name`` (inside ``namespace`` when one is set)."""
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace" and tool.get("name") == namespace:
            if _offered(tool.get("tools") or [], "", name):
                return True
        elif tool.get("type") == "function" and tool.get("name") in (name, f"{namespace}__{name}"):
            return True
    return False


class OpenAIResponsesModel(ScriptedModel):
    #: Codex: function ``test_patch`` in namespace ``mcp__ssebench``
    tool_name = "test_patch"
    namespace = "mcp__ssebench"
    model_id = "gpt-5.5"

    def respond(self, req: RecordedRequest) -> Reply:
        path = req.path.rstrip("/")
        body = req.body if isinstance(req.body, dict) else {}
        if req.method == "GET" and path.endswith("/models"):
            req.kind = "side"
            return Reply(json_body={"object": "list", "data": [], "models": []})
        if req.method != "POST" or not path.endswith("/responses"):
            req.kind = "unknown"
            return Reply(404, {"error": {"message": f"no route {req.path}", "type": "not_found"}})
        offers_tool = _offered(body.get("tools") or [], self.namespace, self.tool_name)
        req.kind = "turn" if offers_tool else "side"
        if offers_tool and self.call_tool and not self._our_results(body):
            req.answer = "tool"
            call_id = f"call_{next(_ids):04d}"
            item = {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": self.tool_name,
                "namespace": self.namespace,
                "arguments": "{}",
                "status": "completed",
            }
            return self._stream(body, item)
        req.answer = "text"
        text = self.final_text if offers_tool else "ssebench e2e"
        item = {
            "type": "message",
            "id": f"msg_{next(_ids):04d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        return self._stream(body, item)

    def _our_results(self, body: dict[str, Any]) -> list[ResponsesToolResult]:
        ours: set[str] = set()
        found: list[ResponsesToolResult] = []
        items = body.get("input") if isinstance(body.get("input"), list) else []
        for item in items:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call" and item.get("name") in (
                self.tool_name,
                f"{self.namespace}__{self.tool_name}",
            ):
                ours.add(item.get("call_id", ""))
            elif item.get("type") == "function_call_output" and item.get("call_id") in ours:
                found.append(ResponsesToolResult(item["call_id"], item.get("output")))
        return found

    def tool_results(self) -> list[ResponsesToolResult]:
        seen: dict[str, ResponsesToolResult] = {}
        for req in self.turns():
            for result in self._our_results(req.body):
                seen.setdefault(result.call_id, result)
        return list(seen.values())

    def _stream(self, body: dict[str, Any], item: dict[str, Any]) -> Reply:
        resp_id = f"resp_{next(_ids):04d}"
        model = body.get("model") or self.model_id
        # created_at: the Vercel AI SDK (Mastra Code) rejects a response.created without it, as OpenAI sends it
        base = {
            "id": resp_id,
            "object": "response",
            "created_at": int(time.time()),
            "model": model,
            "status": "in_progress",
            "output": [],
        }
        usage = {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        }
        events: list[tuple[str | None, Any]] = [
            ("response.created", {"type": "response.created", "response": base}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        ]
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "delta": text,
                    },
                )
            )
        events += [
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {**base, "status": "completed", "output": [item], "usage": usage},
                },
            ),
        ]
        if not body.get("stream", True):
            return Reply(json_body={**base, "status": "completed", "output": [item], "usage": usage})
        return Reply(sse=events)
