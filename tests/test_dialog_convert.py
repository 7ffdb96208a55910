"""Converters: real captured CLI streams → the exact dialog lines, plus the pipeline's rules."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssebench.agents.usage import Usage, read_usage
from ssebench.dialog.convert import CONVERTERS, DialogPipeline, load_converter
from ssebench.dialog.stream import StreamConverter
from ssebench.dialog.writer import DialogWriter

STREAMS = Path(__file__).parent / "fixtures" / "streams"
PROMPT = "Fix the bug. Use test_patch."
RESULT = (
    "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n- functional tests: passed\n\n"
    "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them. "
    "Without the PoCs, this result does not show whether the vulnerability is fixed."
)
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def convert(agent: str, lines: list[str], *, prompt: str | None = PROMPT, **close: object) -> list[dict]:
    out = io.StringIO()
    pipeline = DialogPipeline(DialogWriter(out), load_converter(agent), prompt=prompt)
    for line in lines:
        pipeline.feed_line(line)
    pipeline.close(**{"exit_code": 0, **close})
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(TS.match(e["ts"]) for e in events)
    return [{k: v for k, v in e.items() if k not in ("seq", "ts")} for e in events]


def fixture(agent: str) -> list[str]:
    return (STREAMS / f"{agent}.jsonl").read_text().splitlines()


def without_duration(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "duration"} for e in events]


def test_claude_stream():
    events = convert("claude", fixture("claude"))
    tools = events[0].pop("tools")
    assert "mcp__ssebench__test_patch" in tools and "Bash" in tools
    assert events == [
        {
            "type": "init",
            "agent": "claude",
            "session": "3b1efa67-bd63-4d81-8ff6-9a3900c4da6b",
            "model": "claude-opus-5-5",
        },
        {"type": "prompt", "text": PROMPT},
        {"type": "tool", "id": "toolu_0002", "name": "mcp__ssebench__test_patch", "status": "running", "input": {}},
        {
            "type": "tool",
            "id": "toolu_0002",
            "name": "mcp__ssebench__test_patch",
            "status": "success",
            "output": RESULT,
        },
        {"type": "message", "role": "assistant", "text": "I ran test_patch."},
        # duration is Claude's own duration_ms of the captured run
        {
            "type": "complete",
            "status": "success",
            "turns": 2,
            "duration": events[-1]["duration"],
            "tokens": {"input": 200, "output": 20, "cached": 0},
            "exit_code": 0,
        },
    ]
    result = json.loads(fixture("claude")[-1])
    assert events[-1]["duration"] == result["duration_ms"] / 1000


def test_codex_stream():
    events = without_duration(convert("codex", fixture("codex")))
    assert events == [
        {"type": "init", "agent": "codex", "session": "01a22a89-b6cb-7300-9cde-50bc97b9277e"},
        {"type": "prompt", "text": PROMPT},
        {"type": "tool", "id": "item_1", "name": "ssebench.test_patch", "status": "running", "input": {}},
        {"type": "tool", "id": "item_1", "name": "ssebench.test_patch", "status": "success", "output": RESULT},
        {"type": "message", "role": "assistant", "text": "I ran test_patch."},
        {
            "type": "complete",
            "status": "success",
            "turns": 2,
            "tokens": {"input": 200, "output": 20, "cached": 0},
            "exit_code": 0,
        },
    ]


def test_gemini_stream():
    events = convert("gemini", fixture("gemini"))
    assert events == [
        {"type": "init", "agent": "gemini", "session": "67e9a28f-ac89-456a-accd-813e2b5b71b2", "model": "auto"},
        {"type": "prompt", "text": PROMPT},  # Gemini's own user message, not a second copy
        {
            "type": "tool",
            "id": "mcp_ssebench_test_patch__call_0002",
            "name": "mcp_ssebench_test_patch",
            "status": "running",
            "input": {},
        },
        {
            "type": "tool",
            "id": "mcp_ssebench_test_patch__call_0002",
            "name": "mcp_ssebench_test_patch",
            "status": "success",
            "output": RESULT,
        },
        {"type": "message", "role": "assistant", "text": "I ran test_patch."},
        {
            "type": "complete",
            "status": "success",
            "turns": 2,
            "duration": 0.17,
            "tokens": {"input": 300, "output": 30, "cached": 0},
            "exit_code": 0,
        },
    ]


def test_opencode_stream():
    events = without_duration(convert("opencode", fixture("opencode")))
    assert events == [
        {"type": "init", "agent": "opencode", "session": "ses_dd575e4a3ffeNpLFpGddE3EfAH"},
        {"type": "prompt", "text": PROMPT},
        # opencode reports the call once it ended: both lines come together
        {"type": "tool", "id": "toolu_0002", "name": "ssebench_test_patch", "status": "running", "input": {}},
        {"type": "tool", "id": "toolu_0002", "name": "ssebench_test_patch", "status": "success", "output": RESULT},
        {"type": "message", "role": "assistant", "text": "I ran test_patch."},
        {
            "type": "complete",
            "status": "success",
            "turns": 2,
            "tokens": {"input": 200, "output": 20, "cached": 0},
            "exit_code": 0,
        },
    ]


def test_qwen_stream():
    events = without_duration(convert("qwen", fixture("qwen")))
    tools = events[0].pop("tools")
    assert "mcp__ssebench__test_patch" in tools and "run_shell_command" in tools
    assert events == [
        {"type": "init", "agent": "qwen", "session": "31533645-77a6-47c9-b976-fcb058b4ae20", "model": "scripted-model"},
        {"type": "prompt", "text": PROMPT},
        {"type": "tool", "id": "call_0001", "name": "mcp__ssebench__test_patch", "status": "running", "input": {}},
        {"type": "tool", "id": "call_0001", "name": "mcp__ssebench__test_patch", "status": "success", "output": RESULT},
        {"type": "message", "role": "assistant", "text": "I ran test_patch; see its result above."},
        {
            "type": "complete",
            "status": "success",
            "turns": 2,
            "tokens": {"input": 200, "output": 20, "cached": 0},
            "exit_code": 0,
        },
    ]


def test_continue_prints_only_the_final_answer():
    events = without_duration(convert("continue", fixture("continue")))
    assert events == [
        {"type": "init", "agent": "continue"},
        {"type": "prompt", "text": PROMPT},
        {"type": "message", "role": "assistant", "text": "I ran test_patch; see its result above."},
        {
            "type": "complete",
            "status": "success",
            "turns": 1,
            "tokens": {"input": 0, "output": 0, "cached": 0},
            "exit_code": 0,
        },
    ]
    failed = convert(
        "continue",
        ['{"status":"error","message":"MCP server(s) failed to load:\\nssebench: fetch failed"}'],
        exit_code=1,
    )
    assert failed[-1]["status"] == "error" and "ssebench: fetch failed" in json.dumps(failed[-1])


def test_nanocoder_prints_one_pretty_printed_report():
    """Nanocoder's --json report spans many lines: the pipeline joins them into one event."""
    events = without_duration(convert("nanocoder", ["Loading...", *fixture("nanocoder")]))
    assert events == [
        {"type": "init", "agent": "nanocoder"},
        {"type": "prompt", "text": PROMPT},
        {"type": "tool", "id": "call-1", "name": "test_patch", "status": "running", "input": {}},
        {"type": "tool", "id": "call-1", "name": "test_patch", "status": "success", "output": RESULT},
        {"type": "message", "role": "assistant", "text": "I ran test_patch; see its result above."},
        {
            "type": "complete",
            "status": "success",
            "turns": 2,
            "tokens": {"input": 0, "output": 0, "cached": 0},
            "exit_code": 0,
        },
    ]
    report = {
        "kind": "error",
        "exitCode": 1,
        "finalText": "",
        "toolCalls": [{"name": "test_patch", "arguments": {}, "result": None, "error": "Request timed out"}],
        "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15},
        "message": "No response from the model",
    }
    failed = convert("nanocoder", json.dumps(report, indent=2).splitlines(), exit_code=1)
    assert failed[3] == {
        "type": "tool",
        "id": "call-1",
        "name": "test_patch",
        "status": "error",
        "output": "Request timed out",
    }
    assert {k: failed[-1][k] for k in ("status", "error", "tokens")} == {
        "status": "error",
        "error": "No response from the model",
        "tokens": {"input": 12, "output": 3, "cached": 0},
    }


def test_gemini_deltas_are_merged_into_one_message():
    lines = [
        json.dumps(e)
        for e in (
            {"type": "init", "session_id": "s", "model": "m"},
            {"type": "message", "role": "assistant", "content": "Hel", "delta": True},
            {"type": "message", "role": "assistant", "content": "lo.", "delta": True},
        )
    ]
    events = convert("gemini", lines, prompt=None)
    assert [e for e in events if e["type"] == "message"] == [{"type": "message", "role": "assistant", "text": "Hello."}]


def test_a_session_cut_short_closes_open_calls_and_says_timeout():
    # the captured Claude stream up to the tool call, then the CLI was killed
    events = convert("claude", fixture("claude")[:2], exit_code=143, timed_out=True)
    assert events[-2:] == [
        {
            "type": "tool",
            "id": "toolu_0002",
            "name": "mcp__ssebench__test_patch",
            "status": "error",
            "output": "(the session ended before the tool returned)",
        },
        {
            "type": "complete",
            "status": "timeout",
            "turns": 1,
            "duration": events[-1]["duration"],
            "tokens": {"input": 0, "output": 0, "cached": 0},
            "exit_code": 143,
            "error": "the agent ran out of time and was stopped",
        },
    ]


def test_claude_error_result_and_tool_error():
    lines = [
        json.dumps(e)
        for e in (
            {
                "type": "assistant",
                "message": {"content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {"a": 1}}]},
            },
            {
                "type": "user",
                "message": {
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "boom"}]
                },
            },
            {"type": "result", "subtype": "error_max_turns", "is_error": True, "duration_ms": 1500, "usage": {}},
        )
    ]
    events = convert("claude", lines, prompt=None)
    assert events == [
        {"type": "tool", "id": "t1", "name": "x", "status": "running", "input": {"a": 1}},
        {"type": "tool", "id": "t1", "name": "x", "status": "error", "output": "boom"},
        {
            "type": "complete",
            "status": "error",
            "turns": 1,
            "duration": 1.5,
            "tokens": {"input": 0, "output": 0, "cached": 0},
            "exit_code": 0,
            "error": "error_max_turns",
        },
    ]


def test_codex_failed_call_and_turn_failed():
    lines = [
        json.dumps(e)
        for e in (
            {
                "type": "item.started",
                "item": {
                    "id": "i1",
                    "type": "mcp_tool_call",
                    "server": "ssebench",
                    "tool": "test_patch",
                    "arguments": {},
                    "status": "in_progress",
                },
            },
            {
                "type": "item.completed",
                "item": {
                    "id": "i1",
                    "type": "mcp_tool_call",
                    "server": "ssebench",
                    "tool": "test_patch",
                    "arguments": {},
                    "status": "failed",
                    "error": {"message": "tool call timed out"},
                },
            },
            {"type": "turn.failed", "error": {"message": "stream disconnected"}},
        )
    ]
    events = convert("codex", lines, prompt=None, exit_code=1)
    assert events[1] == {
        "type": "tool",
        "id": "i1",
        "name": "ssebench.test_patch",
        "status": "error",
        "output": "tool call timed out",
    }
    assert events[-1]["status"] == "error" and events[-1]["error"] == "stream disconnected"


def test_noise_lines_are_skipped():
    out = io.StringIO()
    pipeline = DialogPipeline(DialogWriter(out), load_converter("gemini"), prompt="p")
    for line in ("Warning: 256-color support not detected.", "[1, 2]", "", "{not json"):
        pipeline.feed_line(line)
    pipeline.close(exit_code=0)
    assert pipeline.ignored_lines == 3
    assert [json.loads(x)["type"] for x in out.getvalue().splitlines()] == ["prompt", "complete"]


def test_unknown_agent_is_refused_with_the_known_ones():
    from ssebench.agents.registry import names

    with pytest.raises(ValueError) as error:
        load_converter("aider")
    assert str(error.value) == f"no dialog converter for agent 'aider'; known: {', '.join(names())}"
    assert list(CONVERTERS) == list(names()) and "nanocoder" in CONVERTERS


USAGE = {  # what each CLI reported in its captured stream (agents/usage.py)
    "claude": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=0.0012000000000000001),
    "codex": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=None),
    "gemini": Usage(input_tokens=300, output_tokens=30, cached_tokens=0, cost_usd=None),
    "opencode": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=0.0009),
    "qwen": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=None),
    "continue": None,  # cn prints the answer only
    "kilo": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=0.0009),
    "cline": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=0.0),  # no price for the model
    "copilot": None,  # its stream carries no token counts
    "nanocoder": None,  # the scripted model sent no usage
    "pi": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=None),  # no price for the model
    "kimi-code": None,  # its stream carries no token counts
    "hermes": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=None),  # cost_status "unknown"
    "gptme": Usage(input_tokens=400, output_tokens=40, cached_tokens=0, cost_usd=0.0032),  # 4 requests
    "mastracode": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=None),
    "droid": Usage(input_tokens=400, output_tokens=40, cached_tokens=0, cost_usd=None),  # 4 requests
    "mistral-vibe": None,  # its stream carries no token counts
    "fast-agent": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=None),  # no price
    "code-puppy": Usage(input_tokens=200, output_tokens=20, cached_tokens=0, cost_usd=None),
    "kimi-cli": None,  # its stream carries no token counts
}


@pytest.mark.parametrize("agent", sorted(USAGE))
def test_the_usage_each_cli_reported(agent: str):
    assert read_usage(agent, (STREAMS / f"{agent}.jsonl").read_text().splitlines(keepends=True)) == USAGE[agent]


def test_every_agent_has_a_captured_stream():
    """Each bundled agent's reader is proven on its real CLI's output (README.md beside them)."""
    from ssebench.agents.registry import names

    assert sorted(p.stem for p in STREAMS.glob("*.jsonl")) == sorted(names()) == sorted(USAGE)


def test_writer_refuses_an_existing_file_and_symlinks(tmp_path: Path):
    target = tmp_path / "dialog.jsonl"
    target.write_text("keep\n")
    with pytest.raises(FileExistsError):
        DialogWriter.create(target)
    assert target.read_text() == "keep\n"
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        DialogWriter.create(link)
    assert not (tmp_path / "elsewhere").exists()


# -- properties of the pipeline, whatever the converter emits ----------------------------


class Scripted(StreamConverter):
    """Passes pre-built dialog events through: lets hypothesis drive the pipeline."""

    def feed(self, event: dict):
        return [event["emit"]]


_tool_ids = st.sampled_from(["a", "b", "c"])
_events = st.one_of(
    st.builds(lambda t: {"type": "message", "role": "assistant", "text": t}, st.text(max_size=5)),
    st.builds(lambda t: {"type": "thinking", "text": t}, st.text(max_size=5)),
    st.builds(lambda i: {"type": "tool", "id": i, "name": "n", "status": "running", "input": {}}, _tool_ids),
    st.builds(
        lambda i, ok: {"type": "tool", "id": i, "name": "n", "status": "success" if ok else "error", "output": "o"},
        _tool_ids,
        st.booleans(),
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_events, max_size=25), st.booleans())
def test_pipeline_invariants(script: list[dict], timed_out: bool):
    out = io.StringIO()
    pipeline = DialogPipeline(DialogWriter(out), Scripted("scripted"), prompt="p")
    for event in script:
        pipeline.feed_line(json.dumps({"emit": event}))
    pipeline.close(exit_code=0, timed_out=timed_out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    assert [e["type"] for e in lines].count("complete") == 1 and lines[-1]["type"] == "complete"
    assert [e["type"] for e in lines].count("prompt") == 1 and lines[0]["type"] == "prompt"
    # every tool id: one running, then exactly one terminal line, nothing after it
    per_id: dict[str, list[str]] = {}
    for e in lines:
        if e["type"] == "tool":
            per_id.setdefault(e["id"], []).append(e["status"])
    for states in per_id.values():
        assert states[0] == "running" and len(states) == 2 and states[1] in ("success", "error")
    # turns: model output after the prompt or after a tool result starts a turn
    expected, new_turn = 0, True
    for e in lines:
        if e["type"] in ("message", "thinking") or (e["type"] == "tool" and e["status"] == "running"):
            expected += new_turn
            new_turn = False
        elif e["type"] == "tool":
            new_turn = True
    assert lines[-1]["turns"] == expected
    assert lines[-1]["status"] == ("timeout" if timed_out else "success")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
# events shaped like each CLI's, with any values in their fields
_TYPES = [
    "system",
    "assistant",
    "user",
    "result",
    "thread.started",
    "item.started",
    "item.completed",
    "turn.completed",
    "turn.failed",
    "error",
    "init",
    "message",
    "tool_use",
    "tool_result",
    "step_start",
    "text",
    "reasoning",
    "step_finish",
]
_KEYS = [
    "subtype",
    "message",
    "content",
    "tools",
    "session_id",
    "model",
    "item",
    "usage",
    "error",
    "role",
    "delta",
    "tool_id",
    "tool_name",
    "parameters",
    "status",
    "output",
    "stats",
    "part",
    "sessionID",
    "duration_ms",
    "is_error",
    "result",
    "thread_id",
    "severity",
]
_cli_event = st.builds(
    lambda t, extra: {"type": t, **extra},
    st.sampled_from(_TYPES),
    st.dictionaries(st.sampled_from(_KEYS), _json, max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(CONVERTERS)), st.lists(_cli_event, max_size=12))
def test_converters_never_fail_on_odd_events(agent: str, stream: list[dict]):
    """Whatever a CLI version prints, conversion goes on and the log stays well formed."""
    out = io.StringIO()
    pipeline = DialogPipeline(DialogWriter(out), load_converter(agent), prompt="p")
    for event in stream:
        pipeline.feed_line(json.dumps(event))
    pipeline.close(exit_code=0)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert lines[-1]["type"] == "complete" and [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    for e in lines:
        assert e["type"] in ("init", "prompt", "message", "thinking", "tool", "complete")
        if e["type"] in ("prompt", "message", "thinking"):
            assert isinstance(e["text"], str)
        if e["type"] == "tool":
            assert isinstance(e["id"], str) and isinstance(e["name"], str)
            assert isinstance(e.get("output", ""), str)
    assert all(isinstance(v, int) for v in lines[-1]["tokens"].values())
    assert isinstance(lines[-1]["duration"], float | int)


def _one_call_dialog(agent: str, session: str | None, tool_id: str, name: str, tokens: dict) -> list[dict]:
    init = {"type": "init", "agent": agent, **({"session": session} if session else {})}
    return [
        init,
        {"type": "prompt", "text": PROMPT},
        {"type": "tool", "id": tool_id, "name": name, "status": "running", "input": {}},
        {"type": "tool", "id": tool_id, "name": name, "status": "success", "output": RESULT},
        {"type": "message", "role": "assistant", "text": "I ran test_patch."},
        {"type": "complete", "status": "success", "turns": 2, "tokens": tokens, "exit_code": 0},
    ]


def test_kilo_stream():
    events = without_duration(convert("kilo", fixture("kilo")))
    tokens = {"input": 200, "output": 20, "cached": 0}
    assert events == _one_call_dialog(
        "kilo", "ses_dcbeabb58ffe2sTq3KtDrJCmo0", "toolu_0004", "ssebench_test_patch", tokens
    )


def test_cline_stream():
    events = without_duration(convert("cline", fixture("cline")))
    tokens = {"input": 200, "output": 20, "cached": 0}
    assert events == _one_call_dialog(
        "cline", "conv_1796169863225_0qsykhl", "call_0001", "ssebench__test_patch", tokens
    )


def test_copilot_stream_has_no_token_counts():
    events = without_duration(convert("copilot", fixture("copilot")))
    tokens = {"input": 0, "output": 0, "cached": 0}
    assert events == _one_call_dialog("copilot", None, "toolu_0001", "ssebench-test_patch", tokens)


def test_cline_tool_error_and_failed_run():
    lines = [
        json.dumps(e)
        for e in (
            {"type": "hook_event", "hookEventName": "agent_start", "taskId": "t"},
            {
                "type": "agent_event",
                "event": {
                    "type": "content_end",
                    "contentType": "tool",
                    "toolName": "x",
                    "toolCallId": "c",
                    "error": "boom",
                },
            },
            {"type": "run_result", "finishReason": "error", "error": {"message": "no model"}, "durationMs": 5},
        )
    ]
    events = convert("cline", lines, prompt=None, exit_code=1)
    assert [e for e in events if e["type"] == "tool"][-1] == {
        "type": "tool",
        "id": "c",
        "name": "x",
        "status": "error",
        "output": "boom",
    }
    assert events[-1]["status"] == "error" and events[-1]["error"] == "no model"
