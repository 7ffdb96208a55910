"""The real agent CLIs call test_patch through the configs ``ssebench agents install`` writes.

Per CLI and level: the real daemon and ``ssebench serve`` on a copy of the example task,
``ssebench agents install CLI --url URL`` into a fresh HOME, the CLI run headless by its run
recipe against a scripted model. What the model was handed back must be the spec's text
for that tree and level, verbatim, in the CLI's own wrapping; the daemon must have run the
checks exactly once (the server's log shows one call with a build that ran); the CLI exits 0.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import CLIS
from tests.e2e.expected import (
    DEMO_FIX,
    DEMO_TASK,
    LEVEL2_ALL_RAN_PASSED,
    assert_model_received,
    assert_one_call,
    level0_all_passed,
    poc_count,
)

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("cli", CLIS)
def test_level0_fixed_tree_every_check_passed(cli: str, agent_run) -> None:
    run = agent_run(cli, DEMO_TASK, difficulty=0, fix=DEMO_FIX)
    assert_one_call(run)
    assert_model_received(cli, run, level0_all_passed(poc_count(DEMO_TASK)))


@pytest.mark.parametrize("cli", CLIS)
def test_level2_unfixed_tree_every_check_that_ran_passed(cli: str, agent_run) -> None:
    run = agent_run(cli, DEMO_TASK, difficulty=2)
    assert_one_call(run)
    assert_model_received(cli, run, LEVEL2_ALL_RAN_PASSED)
