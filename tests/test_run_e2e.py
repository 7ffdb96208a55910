"""``ssebench run --agent CLI`` in process mode with each real agent CLI and a scripted model.

The whole product path: the task's tree copied, ``ssebench agents install`` into a
private HOME, the CLI's run recipe, the entrypoint's stages, the CLI's stream turned
into dialog.jsonl, final grading into results.json. Uses engineer D's fixtures: the
pinned CLIs from npm (tests/e2e/conftest.py) and the scripted models (tests/e2e/models).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import MODEL_ENV, clean_env, install_clis
from tests.e2e.models import for_cli

pytestmark = [pytest.mark.e2e]

RUN = [sys.executable, "-c", "from ssebench.cli import main; main()", "run"]
LEVEL2_PASSED = (
    "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n- functional tests: passed\n\n"
    "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them. "
    "Without the PoCs, this result does not show whether the vulnerability is fixed."
)
TOOL_NAMES = {
    "claude": "mcp__ssebench__test_patch",
    "codex": "ssebench.test_patch",
    "gemini": "mcp_ssebench_test_patch",
    "opencode": "ssebench_test_patch",
    "kilo": "ssebench_test_patch",
    "cline": "ssebench__test_patch",
    "copilot": "ssebench-test_patch",
    "nanocoder": "test_patch",
}


@pytest.fixture(scope="module")
def bin_dir() -> Path:
    import shutil

    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm/node not found on PATH: the agent CLIs cannot be installed here")
    return install_clis(lambda line: print(line, file=sys.stderr))


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "opencode", "kilo", "cline", "copilot", "nanocoder"])
def test_run_each_cli(cli: str, bin_dir: Path, task_factory, tmp_path: Path):
    task = task_factory(build="true", functional="true", description="A stack overflow in parse_name.")
    results = tmp_path / "run"
    with for_cli(cli) as model:
        env = {**clean_env(tmp_path / "user-home", bin_dir), **MODEL_ENV[cli](model.url), "COLUMNS": "120"}
        (tmp_path / "user-home").mkdir()
        proc = subprocess.run(
            [*RUN, "--task", str(task.file), "--agent", cli, "--difficulty", "2", "--results", str(results), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        tool_calls = model.tool_calls_sent()
        requests = [(r.method, r.path, r.kind, r.answer) for r in model.requests]
    assert proc.returncode == 0, f"{proc.stderr}\n--- agent stderr:\n" + (
        (results / "agent-stderr.log").read_text()[-3000:] if (results / "agent-stderr.log").exists() else ""
    )
    data = json.loads(proc.stdout)
    assert data == json.loads((results / "results.json").read_text())
    assert (data["status"], data["exit_code"], data["passed"]) == ("passed", 0, True)
    assert data["agent"]["command"][0] == cli and data["agent"]["exit_code"] == 0
    assert data["dialog"] == "dialog.jsonl"
    assert tool_calls == 1, f"requests the model saw: {requests}"
    # the agent's config went into the run's private HOME, none into the user's
    user_files = [
        p.relative_to(tmp_path / "user-home").parts[0]
        for p in (tmp_path / "user-home").rglob("*")
        if p.is_file() and not p.name.endswith(".lock")
    ]
    assert user_files == []
    assert any(p.is_file() for p in (results / "home").rglob("*"))

    lines = [json.loads(x) for x in (results / "dialog.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    assert [e["type"] for e in lines] == ["init", "prompt", "tool", "tool", "message", "complete"]
    init, prompt, running, finished, message, complete = lines
    assert init["agent"] == cli
    assert prompt["text"].startswith(
        "Fix this vulnerability in the source tree in the current directory: A stack overflow in parse_name."
    )
    assert (running["name"], running["status"]) == (TOOL_NAMES[cli], "running")
    assert (finished["id"], finished["status"]) == (running["id"], "success")
    assert finished["output"] == LEVEL2_PASSED
    assert message == {**message, "role": "assistant", "text": "I ran test_patch."}
    assert (complete["status"], complete["turns"], complete["exit_code"]) == ("success", 2, 0)
    # Copilot CLI's stream carries no token counts; Nanocoder asks for none (no include_usage)
    if cli not in ("copilot", "nanocoder"):
        assert complete["tokens"]["output"] > 0
