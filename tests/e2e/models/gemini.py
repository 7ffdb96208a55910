"""A scripted Gemini API (``models/{model}:streamGenerateContent`` and friends), for Gemini CLI.

Besides the conversation, Gemini CLI sends side requests: a "router" ``generateContent``
that wants JSON (``complexity_reasoning``, ``complexity_score``) to pick a model, and
other JSON-schema requests (next-speaker checks, ...). Any request with a response schema
gets a JSON object that fills the schema, so new side requests keep working.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from .base import RecordedRequest, Reply, ScriptedModel

_ids = itertools.count(1)


@dataclass
class GeminiToolResult:
    """A ``functionResponse`` part the CLI sent back, as sent."""

    name: str
    response: Any  # e.g. {"output": "..."} or {"content": [...]}
    part: dict[str, Any]

    @property
    def text(self) -> str:
        r = self.response
        if isinstance(r, dict):
            if isinstance(r.get("output"), str):
                return r["output"]
            content = r.get("content")
            if isinstance(content, list):
                return "".join(c.get("text", "") for c in content if isinstance(c, dict))
        return json.dumps(r)


def _declared(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        for decl in (tool or {}).get("functionDeclarations") or []:
            names.append(decl.get("name", ""))
    return names


def _fill(schema: Any, key: str = "") -> Any:
    """A value that satisfies a (Gemini/JSON) schema well enough for the CLI's side requests."""
    if not isinstance(schema, dict):
        return "ssebench e2e"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: _fill(sub, name) for name, sub in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        low = schema.get("minimum", 1)
        return int(low) if kind == "integer" else float(low)
    if kind == "boolean":
        return False
    if key == "next_speaker":
        return "user"
    return "ssebench e2e"


class GeminiModel(ScriptedModel):
    tool_name = "mcp_ssebench_test_patch"
    model_id = "gemini-2.5-pro"

    def respond(self, req: RecordedRequest) -> Reply:
        path = req.path
        body = req.body if isinstance(req.body, dict) else {}
        method = path.rsplit(":", 1)[-1] if ":" in path else ""
        if method == "countTokens":
            req.kind = "count"
            return Reply(json_body={"totalTokens": 100})
        if req.method != "POST" or method not in ("generateContent", "streamGenerateContent"):
            req.kind = "unknown"
            return Reply(404, {"error": {"code": 404, "message": f"no route {path}", "status": "NOT_FOUND"}})
        streaming = method == "streamGenerateContent"
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        offers_tool = self.tool_name in _declared(body)
        if schema is not None or config.get("responseMimeType") == "application/json":
            req.kind = "side"
            req.answer = "text"
            value = _fill(schema)
            if isinstance(value, dict) and "complexity_score" in value:
                value.update(complexity_reasoning="A scripted test turn.", complexity_score=10)
            return self._reply([{"text": json.dumps(value)}], streaming)
        req.kind = "turn" if offers_tool else "side"
        if offers_tool and self.call_tool and not self._our_results(body):
            req.answer = "tool"
            call = {"name": self.tool_name, "args": {}, "id": f"call_{next(_ids):04d}"}
            return self._reply([{"functionCall": call}], streaming)
        req.answer = "text"
        return self._reply([{"text": self.final_text if offers_tool else "ssebench e2e"}], streaming)

    def _our_results(self, body: dict[str, Any]) -> list[GeminiToolResult]:
        found = []
        for content in body.get("contents") or []:
            for part in (content or {}).get("parts") or []:
                fr = part.get("functionResponse") if isinstance(part, dict) else None
                if fr and fr.get("name") == self.tool_name:
                    found.append(GeminiToolResult(fr["name"], fr.get("response"), part))
        return found

    def tool_results(self) -> list[GeminiToolResult]:
        """Tool results in order; each turn repeats the history, so keep the longest one."""
        longest: list[GeminiToolResult] = []
        for req in self.turns():
            results = self._our_results(req.body)
            if len(results) > len(longest):
                longest = results
        return longest

    def _reply(self, parts: list[dict[str, Any]], streaming: bool) -> Reply:
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
            "modelVersion": self.model_id,
            "responseId": f"resp_{next(_ids):04d}",
        }
        return Reply(sse=[(None, chunk)]) if streaming else Reply(json_body=chunk)
