"""An agent's own token and cost report (agents/usage.py): read from the real captured streams
by the agent's dialog reader, the same counts as the dialog's ``complete`` line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ssebench.agents.registry import names
from ssebench.agents.usage import Usage, read_usage
from ssebench.dialog.convert import DialogPipeline, load_converter
from ssebench.dialog.writer import DialogWriter

STREAMS = Path(__file__).parent / "fixtures" / "streams"

EXPECTED = {
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
}


def lines(agent: str) -> list[str]:
    return (STREAMS / f"{agent}.jsonl").read_text().splitlines(keepends=True)


def test_every_bundled_agent_is_covered() -> None:
    assert set(EXPECTED) == set(names())


@pytest.mark.parametrize("agent", names())
def test_the_usage_each_cli_reported(agent: str) -> None:
    assert read_usage(agent, lines(agent)) == EXPECTED[agent]


@pytest.mark.parametrize("agent", names())
def test_the_usage_is_the_dialogs_token_count(agent: str) -> None:
    out = io.StringIO()
    converter = load_converter(agent)
    pipeline = DialogPipeline(DialogWriter(out), converter, prompt="p")
    for line in lines(agent):
        pipeline.feed_line(line)
    complete = pipeline.close(exit_code=0)
    usage = converter.usage()
    tokens = complete["tokens"]
    if usage is None:
        assert tokens == {"input": 0, "output": 0, "cached": 0}
    else:
        assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (
            tokens["input"],
            tokens["output"],
            tokens["cached"],
        )
    assert json.loads(out.getvalue().splitlines()[-1])["type"] == "complete"


def test_costs_add_up_per_step_and_claude_reads_the_session_total() -> None:
    step = {"type": "step_finish", "part": {"tokens": {"input": 1, "output": 2}, "cost": 0.25}}
    stream = [json.dumps(step) + "\n"] * 3 + ['{"type": "step_finish", "part": {"cost": true}}\n']
    assert read_usage("opencode", stream) == Usage(3, 6, 0, 0.75)  # a non-number is not a cost
    result = {"type": "result", "subtype": "success", "usage": {"input_tokens": 5}, "total_cost_usd": 2}
    assert read_usage("claude", [json.dumps(result)]) == Usage(5, 0, 0, 2.0)
    assert read_usage("claude", ['{"type": "system", "subtype": "init"}', "not json"]) is None


def test_an_unknown_agent_is_named() -> None:
    with pytest.raises(ValueError, match=r"no run recipe for agent 'goose'; ssebench can run: claude, codex"):
        read_usage("goose", [])
