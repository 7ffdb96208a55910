"""The preflight messages with the real, pinned agent CLIs on PATH (tests/e2e/conftest.py).

Per CLI: ``ssebench run --agent CLI`` with no model API variables stops at once with the
one message naming what to set (exit 2, no results folder), instead of Codex and opencode
retrying until the agent timeout or Claude Code's bare "exited with status 1"; with a key
the real install passes the version check (read from its npm package.json). And with
``--skip-preflight`` Claude Code's own reason reaches the run summary.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.agents.recipe import get_recipe, installed_version, preflight
from ssebench.agents.registry import agent
from tests.e2e.conftest import CLIS, clean_env
from tests.e2e.expected import DEMO_TASK
from tests.test_preflight import KEYS, MISSING_KEY  # one table of each recipe's key line

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
SSEBENCH = [sys.executable, "-c", "from ssebench.cli import main; main()"]


@pytest.mark.parametrize("cli", CLIS)
def test_a_missing_key_is_named_before_anything_starts(cli: str, agent_clis: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    results = tmp_path / "run"
    proc = subprocess.run(
        [*SSEBENCH, "run", "--task", str(DEMO_TASK), "--agent", cli, "--results", str(results)],
        env=clean_env(home, agent_clis),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == (
        f"ssebench run: {cli} cannot run:\n  - {MISSING_KEY[cli]}\n(--skip-preflight starts it anyway)\n"
    )
    assert not results.exists()


@pytest.mark.parametrize("cli", CLIS)
def test_the_installed_cli_is_at_the_pin(cli: str, agent_clis: Path, tmp_path: Path) -> None:
    recipe, env = get_recipe(cli), clean_env(tmp_path, agent_clis)
    found = shutil.which(recipe.binary, path=env["PATH"])  # Nanocoder's is in its own folder
    assert found is not None and installed_version(recipe, Path(found)) == agent(cli).pin()
    preflight(cli, {**env, **KEYS[cli]})  # for Nanocoder: the Node 22 installed beside it


@pytest.mark.slow
def test_skipping_it_shows_claudes_own_reason_in_the_summary(agent_clis: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    results = tmp_path / "run"
    # no key, no network: Claude Code stops at once and says why in its stream
    proc = subprocess.run(
        [
            *SSEBENCH,
            "run",
            "--task",
            str(DEMO_TASK),
            "--agent",
            "claude",
            "--skip-preflight",
            "--results",
            str(results),
            "--agent-timeout",
            "120",
        ],
        env={**clean_env(home, agent_clis), "COLUMNS": "200"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=280,
    )
    data = json.loads((results / "results.json").read_text())
    assert (proc.returncode, data["status"]) == (6, "agent_failed"), proc.stdout + proc.stderr
    assert data["error"] == "the agent exited with status 1: Not logged in · Please run /login"
    assert "the agent exited with status 1: Not logged in · Please run /login" in proc.stdout
