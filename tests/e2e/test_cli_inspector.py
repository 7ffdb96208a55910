"""The MCP Inspector CLI, one more real MCP client, calls test_patch on the example task.

``mcp-inspector --cli URL --transport http --method tools/call --tool-name test_patch``
prints the call's result as JSON; it gives up after 60 s, which the example task's checks
stay well within.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from ssebench.server.stack import running_stack
from tests.e2e.conftest import clean_env, copy_task, read_server_log
from tests.e2e.expected import DEMO_FIX, DEMO_TASK, LEVEL2_ALL_RAN_PASSED, level0_all_passed, poc_count
from tests.helpers.cligroup import run_group

pytestmark = pytest.mark.e2e


def inspector_call(bin_dir: Path, workdir: Path, difficulty: int, fix: Path | None) -> tuple[dict, int]:
    task = copy_task(DEMO_TASK, workdir / "task", fix=fix)
    home = workdir / "home"
    home.mkdir(mode=0o700)
    env = clean_env(home, bin_dir)
    stack_dir = Path(tempfile.mkdtemp(prefix="sse-e2e-", dir="/tmp"))
    try:
        with running_stack(task, stack_dir, tree=task.parent / "src", difficulty=str(difficulty), env=env) as stack:
            proc = run_group(
                [
                    str(bin_dir / "mcp-inspector"),
                    "--cli",
                    stack.url,
                    "--transport",
                    "http",
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "test_patch",
                ],
                env=env,
                cwd=home,
                timeout=120,
            )
        server = read_server_log(stack_dir / "server.out")  # the stack has stopped: all of it
    finally:
        shutil.rmtree(stack_dir, ignore_errors=True)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n--- server output (tail)\n{server.tail}"
    # the server logged one call, and it showed a build that ran
    assert len(server.calls) == 1, server.tail
    return json.loads(proc.stdout), server.builds


@pytest.mark.parametrize(("difficulty", "fixed"), [(0, True), (2, False)])
def test_inspector_cli_gets_the_spec_text(agent_clis: Path, tmp_path: Path, difficulty: int, fixed: bool) -> None:
    result, builds = inspector_call(agent_clis, tmp_path, difficulty, DEMO_FIX if fixed else None)
    expected = level0_all_passed(poc_count(DEMO_TASK)) if fixed else LEVEL2_ALL_RAN_PASSED
    # one text content, no structured content (an output schema would wrap the text)
    assert result == {"content": [{"type": "text", "text": expected}], "isError": False}
    assert builds == 1
