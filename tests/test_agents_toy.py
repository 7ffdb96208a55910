"""An agent added in one place (tests/fixtures/toy_agent/toy_agent.py: one module, one record)
shows up in every list of agents and runs through ``ssebench run --agent toy`` for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TOY = Path(__file__).parent / "fixtures" / "toy_agent"
RUN = [sys.executable, "-c", "from ssebench.cli import main; main()"]


@pytest.fixture
def toy() -> Iterator[object]:
    """The toy record registered in this process for one test."""
    from ssebench.agents import registry

    sys.path.insert(0, str(TOY))
    try:
        import toy_agent

        registry.register(toy_agent.AGENT)
        yield toy_agent.AGENT
    finally:
        registry.unregister("toy")
        sys.path.remove(str(TOY))


def toy_env(tmp_path: Path, **more: str) -> dict[str, str]:
    """PYTHONPATH with the toy (its sitecustomize registers it), its CLI on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "toy").exists():
        (bin_dir / "toy").symlink_to(TOY / "node_modules" / "toy-cli" / "bin" / "toy")
    base = {k: v for k, v in os.environ.items() if not k.startswith("SSE_") and k != "TOY_API_KEY"}
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), base.get("PATH", os.defpath)])
    return {**base, "PYTHONPATH": str(TOY), "PATH": path, "COLUMNS": "120", **more}


def test_a_registered_agent_is_in_every_list(toy) -> None:
    import argparse

    from ssebench.agents.recipe import get_recipe
    from ssebench.agents.registry import CLIENTS, config_vars, names
    from ssebench.container import dockerfile, run
    from ssebench.dialog.convert import CONVERTERS, load_converter

    bundled = tuple(name for name in names() if name != "toy")
    assert names() == (*bundled, "toy") and "claude" in bundled
    assert list(CLIENTS)[: len(names())] == [*bundled, "toy"]  # before register-only ones
    assert get_recipe("toy") is toy and CLIENTS["toy"] is toy.client
    assert "toy" in CONVERTERS and type(load_converter("toy")).__name__ == "ToyEvents"
    assert dockerfile.agent_cli("toy") == dockerfile.AgentCli("toy-cli", "toy")
    layer = dockerfile.render_agent_dockerfile("toy", "ssebench-task:test").splitlines()
    assert '      org.ssebench.agent-package="toy-cli@1.0.0"' in layer  # its own pin file
    assert "RUN ssebench agents install toy \\" in layer
    from ssebench.doctor import check_agent_clis

    assert [f.check for f in check_agent_clis({"PATH": ""})] == list(names())
    assert "CODEX_HOME" in config_vars()
    parser = argparse.ArgumentParser()
    run.register(parser.add_subparsers())
    assert parser.parse_args(["run", "--task", "t", "--agent", "toy"]).agent == "toy"
    with pytest.raises(ValueError, match="already registered"):
        from ssebench.agents import registry

        registry.register(toy)


def test_the_toy_preflight_names_its_key(tmp_path: Path, task_factory) -> None:
    task = task_factory(build="true", functional="test -f fixed")
    done = subprocess.run(
        [*RUN, "run", "--task", str(task.file), "--agent", "toy"],
        env=toy_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "ssebench run: toy cannot run:\n  - no model API key: set TOY_API_KEY\n(--skip-preflight starts it anyway)\n"
    )


@pytest.mark.slow
def test_ssebench_run_launches_the_toy_agent(tmp_path: Path, task_factory) -> None:
    task = task_factory(build="true", functional="test -f fixed")
    results = tmp_path / "run"
    done = subprocess.run(
        [
            *RUN,
            "run",
            "--task",
            str(task.file),
            "--agent",
            "toy",
            "--results",
            str(results),
            "--difficulty",
            "1",
            "--prompt",
            "Fix it.",
            "--json",
        ],
        env=toy_env(tmp_path, TOY_API_KEY="k"),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["status"] == "passed" and data["passed"] is True
    # the client registered the run's server in the run's private HOME, where the CLI found it
    entry = json.loads((results / "home" / ".toy" / "mcp.json").read_text())["servers"]["ssebench"]
    assert entry["url"].startswith("http://127.0.0.1:") and entry["url"].endswith("/mcp")
    assert (results / "tree" / "fixed").read_text() == "yes"
    # the converter turned the CLI's stream into the dialog
    lines = [json.loads(line) for line in (results / "dialog.jsonl").read_text().splitlines()]
    assert [(e["type"], e.get("status")) for e in lines] == [
        ("init", None),
        ("prompt", None),
        ("tool", "running"),
        ("tool", "success"),
        ("message", None),
        ("complete", "success"),
    ]
    assert lines[0]["agent"] == "toy" and lines[1]["text"] == "Fix it."
    assert lines[3]["output"].startswith("test_patch result: every check that ran passed.")
