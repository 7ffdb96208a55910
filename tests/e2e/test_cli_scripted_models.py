"""The scripted model APIs themselves (fast, no CLI): the two-turn script, side requests, the record.

E's and F's tests drive CLIs with these too, so a change that breaks the script shows up
here first, with a plain HTTP client instead of a whole agent run.
"""

from __future__ import annotations

import json

import httpx

from tests.e2e.models import AnthropicModel, GeminiModel, OpenAIChatModel, OpenAIResponsesModel, for_cli


def sse_data(response: httpx.Response) -> list[dict]:
    assert response.headers["content-type"] == "text/event-stream"
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def test_anthropic_calls_the_tool_then_answers_and_records_the_result() -> None:
    tool = {"name": "mcp__ssebench__test_patch", "input_schema": {"type": "object"}}
    with AnthropicModel(final_text="done") as model:
        first = httpx.post(
            f"{model.url}/v1/messages",
            json={"model": "m", "stream": True, "tools": [tool], "messages": [{"role": "user", "content": "go"}]},
        )
        events = sse_data(first)
        assert [e["type"] for e in events] == [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
        call = events[1]["content_block"]
        assert (call["type"], call["name"]) == ("tool_use", "mcp__ssebench__test_patch")
        assert events[4]["delta"]["stop_reason"] == "tool_use"
        history = [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call["id"], "content": [{"type": "text", "text": "RESULT"}]}
                ],
            },
        ]
        second = httpx.post(f"{model.url}/v1/messages", json={"model": "m", "tools": [tool], "messages": history})
        assert second.json()["content"] == [{"type": "text", "text": "done"}]
        title = httpx.post(
            f"{model.url}/v1/messages", json={"model": "m", "messages": [{"role": "user", "content": "t"}]}
        )
        assert title.json()["stop_reason"] == "end_turn"
        assert httpx.post(f"{model.url}/v1/messages/count_tokens", json={}).json() == {"input_tokens": 100}
    assert [(r.kind, r.answer) for r in model.requests] == [
        ("turn", "tool"),
        ("turn", "text"),
        ("side", "text"),
        ("count", ""),
    ]
    assert model.tool_calls_sent() == 1
    (result,) = model.tool_results()
    assert result.text_blocks == ["RESULT"] and not result.is_error


def test_responses_offers_the_call_in_the_codex_namespace() -> None:
    tools = [
        {
            "type": "namespace",
            "name": "mcp__ssebench",
            "tools": [{"type": "function", "name": "test_patch", "parameters": {}}],
        }
    ]
    with OpenAIResponsesModel() as model:
        events = sse_data(
            httpx.post(f"{model.url}/v1/responses", json={"model": "m", "stream": True, "tools": tools, "input": []})
        )
        assert events[-1]["type"] == "response.completed"
        item = next(e["item"] for e in events if e["type"] == "response.output_item.done")
        assert (item["type"], item["name"], item["namespace"]) == ("function_call", "test_patch", "mcp__ssebench")
        output = [{"type": "input_text", "text": "Wall time: 1 seconds\nOutput:"}, {"type": "input_text", "text": "R"}]
        httpx.post(
            f"{model.url}/v1/responses",
            json={
                "model": "m",
                "stream": True,
                "tools": tools,
                "input": [{**item}, {"type": "function_call_output", "call_id": item["call_id"], "output": output}],
            },
        )
    assert [r.answer for r in model.turns()] == ["tool", "text"]
    assert model.tool_results()[0].input_texts == ["Wall time: 1 seconds\nOutput:", "R"]


def test_gemini_answers_the_router_with_json_and_the_turn_with_a_function_call() -> None:
    decl = {"functionDeclarations": [{"name": "mcp_ssebench_test_patch"}]}
    with GeminiModel() as model:
        router = httpx.post(
            f"{model.url}/v1beta/models/flash:generateContent",
            json={
                "contents": [],
                "generationConfig": {
                    "responseMimeType": "application/json",
                    "responseJsonSchema": {
                        "type": "OBJECT",
                        "properties": {
                            "complexity_reasoning": {"type": "STRING"},
                            "complexity_score": {"type": "INTEGER"},
                        },
                    },
                },
            },
        )
        verdict = json.loads(router.json()["candidates"][0]["content"]["parts"][0]["text"])
        assert set(verdict) == {"complexity_reasoning", "complexity_score"}
        assert isinstance(verdict["complexity_score"], int)
        turn = sse_data(
            httpx.post(
                f"{model.url}/v1beta/models/pro:streamGenerateContent?alt=sse",
                json={"contents": [{"role": "user", "parts": [{"text": "go"}]}], "tools": [decl]},
            )
        )
        assert turn[0]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "mcp_ssebench_test_patch"
        assert httpx.get(f"{model.url}/elsewhere").status_code == 404
    assert [r.kind for r in model.requests] == ["side", "turn", "unknown"]


def test_for_cli_gives_each_cli_its_tool_name() -> None:
    names = {}
    for cli in ("claude", "codex", "gemini", "opencode"):
        model = for_cli(cli)
        names[cli] = (type(model).__name__, model.tool_name)
        model.stop()
    assert names == {
        "claude": ("AnthropicModel", "mcp__ssebench__test_patch"),
        "codex": ("OpenAIResponsesModel", "test_patch"),
        "gemini": ("GeminiModel", "mcp_ssebench_test_patch"),
        "opencode": ("AnthropicModel", "ssebench_test_patch"),
    }


def test_chat_completions_streams_the_call_then_answers_with_the_result() -> None:
    tools = [{"type": "function", "function": {"name": "mcp__ssebench__test_patch", "parameters": {}}}]
    url = "/v1/chat/completions"
    with OpenAIChatModel(tool_name="mcp__ssebench__test_patch", final_text="done") as model:
        first = httpx.post(
            model.url + url,
            json={
                "model": "m",
                "stream": True,
                "stream_options": {"include_usage": True},
                "tools": tools,
                "messages": [{"role": "user", "content": "go"}],
            },
        )
        assert first.text.endswith("data: [DONE]\n\n")
        chunks = sse_data_json(first)
        assert [c["choices"][0]["finish_reason"] if c["choices"] else "usage" for c in chunks] == [
            None,
            None,
            "tool_calls",
            "usage",
        ]
        start = chunks[0]["choices"][0]["delta"]["tool_calls"][0]
        assert (start["type"], start["function"]) == (
            "function",
            {"name": "mcp__ssebench__test_patch", "arguments": ""},
        )
        assert chunks[1]["choices"][0]["delta"]["tool_calls"][0]["function"] == {"arguments": "{}"}
        call = {
            "id": start["id"],
            "type": "function",
            "function": {"name": start["function"]["name"], "arguments": "{}"},
        }
        history = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": start["id"], "content": [{"type": "text", "text": "RESULT"}]},
        ]
        second = httpx.post(model.url + url, json={"model": "m", "tools": tools, "messages": history}).json()
        assert second["object"] == "chat.completion"
        assert second["choices"][0]["message"] == {"role": "assistant", "content": "done"}
        assert second["choices"][0]["finish_reason"] == "stop"
        schema = {"type": "object", "properties": {"next_speaker": {"type": "string"}}}
        side = httpx.post(
            model.url + url,
            json={
                "model": "m",
                "messages": [],
                "response_format": {"type": "json_schema", "json_schema": {"schema": schema}},
            },
        ).json()
        assert json.loads(side["choices"][0]["message"]["content"]) == {"next_speaker": "user"}
        assert httpx.get(f"{model.url}/v1/models").json()["data"][0]["id"] == "scripted-model"
    assert [(r.kind, r.answer) for r in model.requests] == [
        ("turn", "tool"),
        ("turn", "text"),
        ("side", "text"),
        ("side", ""),
    ]
    (result,) = model.tool_results()
    assert result.text_parts == ["RESULT"] and result.tool_call_id == start["id"]


def sse_data_json(response: httpx.Response) -> list[dict]:
    """The JSON chunks of an OpenAI-style stream (``data: [DONE]`` left out)."""
    assert response.headers["content-type"] == "text/event-stream"
    lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]
