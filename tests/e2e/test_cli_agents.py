"""The real agent CLIs call test_patch through the configs ``ssebench agents install`` writes.

Per CLI and level: the real daemon and ``ssebench serve`` on a copy of the example task,
``ssebench agents install CLI --url URL`` into a fresh HOME, the CLI run headless by its run
recipe against a scripted model. What the model was handed back must be the spec's text
for that tree and level, verbatim, in the CLI's own wrapping; the daemon must have run the
checks exactly once (the build step of the task copy counts its runs); the CLI exits 0.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomlkit

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "tasks" / "demo-overflow"
CLIS = ("claude", "codex", "gemini", "opencode")


def poc_count(task_file: Path) -> int:
    return len(tomlkit.parse(task_file.read_text())["pocs"]["files"])


def expected_level0_fixed(pocs: int) -> str:
    """The spec's level-0 example, for a task with ``pocs`` PoCs."""
    return ("test_patch result: every check passed.\n"
            "\n"
            "Checks:\n"
            "- build: passed\n"
            f"- PoCs: passed ({pocs} of {pocs})\n"
            "- intent tests: passed\n"
            "- functional tests: passed (covered by the intent tests)")


# The spec's level-2 example, word for word: a vulnerable tree passes what level 2 shows.
EXPECTED_LEVEL2 = (
    "test_patch result: every check that ran passed.\n"
    "\n"
    "Checks:\n"
    "- build: passed\n"
    "- functional tests: passed\n"
    "\n"
    "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is "
    "reported about them. Without the PoCs, this result does not show whether the "
    "vulnerability is fixed."
)

WALL_TIME = re.compile(r"Wall time: [0-9]+(\.[0-9]+)? seconds\nOutput:")


def assert_model_received(cli: str, run, expected: str) -> None:  # noqa: ANN001
    """Exactly one tool result reached the model, and it is ``expected`` as the CLI wraps it."""
    results = run.model.tool_results()
    assert len(results) == 1, run.explain()
    (result,) = results
    if cli == "claude":  # a tool_result whose content is text blocks
        assert result.text_blocks == [expected], run.explain()
        assert not result.is_error
    elif cli == "opencode":  # a tool_result whose content is the text itself
        assert result.content == expected, run.explain()
        assert not result.is_error
    elif cli == "codex":  # input_text items: a "Wall time" line first, then the text verbatim
        texts = result.input_texts
        assert texts is not None and len(texts) == 2, run.explain()
        assert WALL_TIME.fullmatch(texts[0]), texts[0]
        assert texts[1] == expected, run.explain()
    elif cli == "gemini":  # a functionResponse; Gemini CLI fences MCP output as untrusted
        assert result.response == {"output": f"<untrusted_context>\n{expected}\n</untrusted_context>"}, \
            run.explain()
    else:  # pragma: no cover
        raise AssertionError(cli)


def assert_one_call(run) -> None:  # noqa: ANN001
    assert run.exit_code == 0, run.explain()
    assert run.model.tool_calls_sent() == 1, run.explain()
    # the daemon ran the task's checks once: the build step of the copy counts its runs
    assert run.builds == 1, run.explain()
    # the model's last turn carried the result and got the final text
    assert run.model.turns()[-1].answer == "text", run.explain()


@pytest.mark.parametrize("cli", CLIS)
def test_level0_fixed_tree_every_check_passed(cli: str, agent_run) -> None:  # noqa: ANN001
    task = DEMO / "task.toml"
    run = agent_run(cli, task, difficulty=0, fix=DEMO / "fix.patch")
    assert_one_call(run)
    assert_model_received(cli, run, expected_level0_fixed(poc_count(task)))


@pytest.mark.parametrize("cli", CLIS)
def test_level2_unfixed_tree_every_check_that_ran_passed(cli: str, agent_run) -> None:  # noqa: ANN001
    run = agent_run(cli, DEMO / "task.toml", difficulty=2)
    assert_one_call(run)
    assert_model_received(cli, run, EXPECTED_LEVEL2)
