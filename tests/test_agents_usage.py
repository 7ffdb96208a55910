"""An agent's own token and cost report (agents/usage.py), read by its dialog reader. What each
bundled CLI reports in its captured stream is pinned beside its dialog (tests/test_dialog_convert.py)."""

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


@pytest.mark.parametrize("agent", names())
def test_the_usage_is_the_dialogs_token_count(agent: str) -> None:
    """One count, two readers: the run record's usage and the dialog's ``complete.tokens``."""
    out = io.StringIO()
    converter = load_converter(agent)
    pipeline = DialogPipeline(DialogWriter(out), converter, prompt="p")
    for line in (STREAMS / f"{agent}.jsonl").read_text().splitlines(keepends=True):
        pipeline.feed_line(line)
    tokens = pipeline.close(exit_code=0)["tokens"]
    usage = converter.usage()
    counted = (0, 0, 0) if usage is None else (usage.input_tokens, usage.output_tokens, usage.cached_tokens)
    assert counted == (tokens["input"], tokens["output"], tokens["cached"])
    assert json.loads(out.getvalue().splitlines()[-1])["tokens"] == tokens
    assert read_usage(agent, (STREAMS / f"{agent}.jsonl").read_text().splitlines()) == usage


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
