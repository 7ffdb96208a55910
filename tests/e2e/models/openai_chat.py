"""A scripted OpenAI Chat Completions API (``POST /v1/chat/completions``), for the OpenAI-compatible CLIs.

Qwen Code, Crush, Continue CLI (and part B's Kilo, Grok, Cline) talk to "any OpenAI-compatible
provider" through this one shape: tools are offered as ``{"type": "function", "function":
{"name": ...}}``, the model calls one with ``tool_calls`` on the assistant message, and the CLI
hands the result back as a ``{"role": "tool", "tool_call_id": ..., "content": ...}`` message
(``content`` a string, or a list of ``{"type": "text", "text": ...}`` parts).

Streaming is SSE the way OpenAI sends it: ``data:`` lines with no event names, the tool call's
``arguments`` in a second delta, a usage chunk when ``stream_options.include_usage`` asks for
it, and ``data: [DONE]`` last. ``GET /models`` lists ``model_id`` (some CLIs check it).
A request with ``response_format`` ``json_schema``/``json_object`` (side requests such as
next-speaker checks) gets a JSON object that fills the schema.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from typing import Any

from .base import RecordedRequest, Reply, ScriptedModel
from .gemini import _fill

_ids = itertools.count(1)

_USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


@dataclass
class ChatToolResult:
    """A ``role: tool`` message the CLI sent back, as sent."""

    tool_call_id: str
    content: Any  # a string, or a list of {"type": "text", "text": ...} parts

    @property
    def text_parts(self) -> list[str] | None:
        """The texts when ``content`` is a list of text parts only, else None."""
        if isinstance(self.content, list) and all(
            isinstance(p, dict) and p.get("type") == "text" for p in self.content
        ):
            return [p["text"] for p in self.content]
        return None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if isinstance(self.content, list):
            return "".join(p.get("text", "") for p in self.content if isinstance(p, dict))
        return json.dumps(self.content)


def _offered(body: dict[str, Any]) -> list[str]:
    """The function names the request offers (the legacy ``functions`` list too)."""
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
            names.append(tool["function"].get("name", ""))
    for fn in body.get("functions") or []:
        if isinstance(fn, dict):
            names.append(fn.get("name", ""))
    return names


def _json_schema(body: dict[str, Any]) -> tuple[bool, Any]:
    """(wants JSON, its schema or None) from ``response_format``."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") not in ("json_schema", "json_object"):
        return False, None
    spec = fmt.get("json_schema")
    return True, spec.get("schema") if isinstance(spec, dict) else None


class OpenAIChatModel(ScriptedModel):
    #: the CLI decides the name; pass ``tool_name`` (see ``TOOL_NAMES`` in ``__init__``)
    tool_name = "test_patch"
    model_id = "scripted-model"
    #: the tool that loads deferred tools, when the CLI defers ours behind one (None: it never does)
    loader: str | None = None
    #: the usage every answer reports (a subclass may report cache reads: prompt_tokens_details)
    usage: dict[str, Any] = _USAGE

    def respond(self, req: RecordedRequest) -> Reply:
        path = req.path.rstrip("/")
        body = req.body if isinstance(req.body, dict) else {}
        if req.method == "GET" and path.endswith("/models"):
            req.kind = "side"
            model = {"id": self.model_id, "object": "model", "created": 0, "owned_by": "ssebench"}
            return Reply(json_body={"object": "list", "data": [model]})
        if req.method != "POST" or not path.endswith("/chat/completions"):
            req.kind = "unknown"
            return Reply(404, {"error": {"message": f"no route {req.path}", "type": "invalid_request_error"}})
        offers_tool = self.tool_name in _offered(body)
        if not offers_tool and self.loader and self.loader in _offered(body) and self.call_tool:
            # the CLI defers MCP tools behind a loader (Factory Droid's ToolSearch): load ours first
            req.kind, req.answer = "load", "tool"
            arguments = json.dumps({"query": f"select:{self.tool_name}"})
            call = {
                "id": f"call_{next(_ids):04d}",
                "type": "function",
                "function": {"name": self.loader, "arguments": arguments},
            }
            return self._reply(body, {"content": None, "tool_calls": [call]}, "tool_calls")
        req.kind = "turn" if offers_tool else "side"
        wants_json, schema = _json_schema(body)
        if wants_json and not offers_tool:
            req.answer = "text"
            return self._reply(body, {"content": json.dumps(_fill(schema) if schema else {})}, "stop")
        if offers_tool and self.call_tool and not self._our_results(body):
            req.answer = "tool"
            function = {"name": self.tool_name, "arguments": "{}"}
            call = {"id": f"call_{next(_ids):04d}", "type": "function", "function": function}
            return self._reply(body, {"content": None, "tool_calls": [call]}, "tool_calls")
        req.answer = "text"
        return self._reply(body, {"content": self.final_text if offers_tool else "ssebench e2e"}, "stop")

    def _our_results(self, body: dict[str, Any]) -> list[ChatToolResult]:
        """``role: tool`` messages answering a call of our tool, in this conversation."""
        ours: set[str] = set()
        found: list[ChatToolResult] = []
        for message in body.get("messages") or []:
            if not isinstance(message, dict):
                continue
            for call in message.get("tool_calls") or []:
                if isinstance(call, dict) and (call.get("function") or {}).get("name") == self.tool_name:
                    ours.add(call.get("id", ""))
            if message.get("role") == "tool" and message.get("tool_call_id") in ours:
                found.append(ChatToolResult(message["tool_call_id"], message.get("content")))
        return found

    def tool_results(self) -> list[ChatToolResult]:
        """Each distinct tool result handed back to the model, in order of arrival."""
        seen: dict[str, ChatToolResult] = {}
        for req in self.turns():
            for result in self._our_results(req.body):
                seen.setdefault(result.tool_call_id, result)
        return list(seen.values())

    def _reply(self, body: dict[str, Any], message: dict[str, Any], finish: str) -> Reply:
        head = {
            "id": f"chatcmpl-{next(_ids):04d}",
            "created": int(time.time()),
            "model": body.get("model") or self.model_id,
        }
        if not body.get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
            return Reply(json_body={**head, "object": "chat.completion", "choices": [choice], "usage": self.usage})
        chunks = _chunks(head, body, message, finish, self.usage)
        return Reply(sse=[(None, chunk) for chunk in chunks] + [(None, "[DONE]")])


def _chunks(
    head: dict[str, Any], body: dict[str, Any], message: dict[str, Any], finish: str, usage: dict[str, Any]
) -> list[dict[str, Any]]:
    """The stream of ``chat.completion.chunk`` objects for one assistant message."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return {**head, "object": "chat.completion.chunk", "choices": [choice]}

    calls = message.get("tool_calls")
    if calls:
        call = calls[0]
        name = {"name": call["function"]["name"], "arguments": ""}
        first = {"index": 0, "id": call["id"], "type": "function", "function": name}
        second = {"index": 0, "function": {"arguments": call["function"]["arguments"]}}
        out = [chunk({"role": "assistant", "content": None, "tool_calls": [first]}), chunk({"tool_calls": [second]})]
    else:
        out = [chunk({"role": "assistant", "content": ""}), chunk({"content": message["content"]})]
    out.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    return out
