"""The run recipes' own rules, without the CLIs (fast): which agent, which flags, which model API.

The end-to-end tests beside this file prove that the launches work with the real CLIs;
these pin the choices that only some environments exercise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ssebench.agents.agent import Agent
from ssebench.agents.recipe import get_recipe
from ssebench.agents.registry import names

HOME = Path("/nonexistent-home")


def launch(agent: str, **env: str):
    return get_recipe(agent).launch(prompt="-fix it", mcp_url="http://127.0.0.1:3000/mcp", home=HOME, env=env)


@pytest.mark.parametrize("agent", names())
def test_every_bundled_agent_launches_its_own_command_and_holds_its_client(agent: str) -> None:
    from ssebench.agents import registry

    recipe = get_recipe(agent)
    assert isinstance(recipe, Agent)
    assert recipe.name == agent
    assert registry.get(agent) is recipe.client
    argv = launch(agent).argv
    if argv[:2] == ("sh", "-c"):  # its run, then what it saved read out (Hermes, fast-agent, Code Puppy)
        assert re.search(rf"(^|; ){re.escape(recipe.binary)} ", argv[2]), argv[2]
    else:
        assert argv[0] == recipe.binary


def test_unknown_agent_names_the_known_ones() -> None:
    with pytest.raises(ValueError) as error:
        get_recipe("goose")
    assert str(error.value) == f"no run recipe for agent 'goose'; ssebench can run: {', '.join(names())}"


def test_claude_allows_the_tool_streams_json_and_passes_the_model_api_on() -> None:
    run = launch("claude", ANTHROPIC_BASE_URL="http://127.0.0.1:9/", ANTHROPIC_API_KEY="k", OTHER="x")
    assert run.argv[:5] == ("claude", "-p", "-fix it", "--allowedTools", "mcp__ssebench__test_patch")
    assert "--output-format" in run.argv and run.argv[run.argv.index("--output-format") + 1] == "stream-json"
    assert run.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/" and run.env["ANTHROPIC_API_KEY"] == "k"
    assert run.env["IS_SANDBOX"] == "1" and run.env["ENABLE_TOOL_SEARCH"] == "false"
    assert "OTHER" not in run.env


def test_codex_defines_a_responses_provider_only_when_a_base_url_is_given() -> None:
    plain = launch("codex")
    assert not any(a.startswith("model_provider") for a in plain.argv)
    assert plain.argv[-1] == "-fix it" and "mcp_servers.ssebench.required=true" in plain.argv
    custom = launch("codex", OPENAI_BASE_URL='http://127.0.0.1:9/v1"x', SSE_AGENT_MODEL="m")
    provider = next(a for a in custom.argv if a.startswith("model_providers.ssebench="))
    # a quote in the URL stays inside the TOML string
    assert 'base_url = "http://127.0.0.1:9/v1\\"x"' in provider and 'wire_api = "responses"' in provider
    assert 'model_provider="ssebench"' in custom.argv and 'model="m"' in custom.argv


def test_opencode_points_the_anthropic_provider_at_the_versioned_root() -> None:
    for base in ("http://127.0.0.1:9", "http://127.0.0.1:9/", "http://127.0.0.1:9/v1"):
        run = launch("opencode", ANTHROPIC_BASE_URL=base)
        config = json.loads(run.env["OPENCODE_CONFIG_CONTENT"])
        assert config == {"provider": {"anthropic": {"options": {"baseURL": "http://127.0.0.1:9/v1"}}}}
    assert "OPENCODE_CONFIG_CONTENT" not in launch("opencode").env
    assert launch("opencode", SSE_AGENT_MODEL="claude-x").argv[-3:] == ("--model", "anthropic/claude-x", "-fix it")


def test_gemini_prepare_selects_api_key_auth_and_keeps_the_rest(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    original = '{\n  // mine\n  "mcpServers": {"other": {"url": "http://x"}}\n}\n'
    settings.write_text(original)
    get_recipe("gemini").prepare(home=tmp_path, env={})
    text = settings.read_text()
    assert "// mine" in text and '"other"' in text
    assert '"selectedType": "gemini-api-key"' in text
    get_recipe("gemini").prepare(home=tmp_path, env={})
    assert settings.read_text() == text  # idempotent


def test_gemini_prepare_leaves_a_users_auth_choice_alone(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    original = '{"security": {"auth": {"selectedType": "vertex-ai"}}}\n'
    settings.write_text(original)
    get_recipe("gemini").prepare(home=tmp_path, env={})
    assert settings.read_text() == original


def test_kilo_points_the_anthropic_provider_at_the_versioned_root_and_stays_offline() -> None:
    run = launch("kilo", ANTHROPIC_BASE_URL="http://127.0.0.1:9", ANTHROPIC_API_KEY="k", SSE_AGENT_MODEL="m")
    assert run.argv == ("kilo", "run", "--format", "json", "--auto", "--model", "anthropic/m", "-fix it")
    config = json.loads(run.env["KILO_CONFIG_CONTENT"])
    assert config == {"provider": {"anthropic": {"options": {"baseURL": "http://127.0.0.1:9/v1"}}}}
    assert run.env["KILO_DISABLE_MODELS_FETCH"] == run.env["KILO_NO_DAEMON"] == "1"
    assert run.env["KILO_TELEMETRY_LEVEL"] == "off" and run.env["ANTHROPIC_API_KEY"] == "k"
    assert run.env["PWD"] == ""  # else Kilo works in the folder of the shell that started ssebench
    assert "KILO_CONFIG_CONTENT" not in launch("kilo").env


def test_cline_prepare_writes_the_provider_and_keeps_the_rest(tmp_path: Path) -> None:
    providers = tmp_path / ".cline" / "data" / "settings" / "providers.json"
    providers.parent.mkdir(parents=True)
    providers.write_text('{"version": 1, "providers": {"anthropic": {"settings": {"provider": "anthropic"}}}}\n')
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk", "SSE_AGENT_MODEL": "m"}
    get_recipe("cline").prepare(home=tmp_path, env=env)
    data = json.loads(providers.read_text())
    assert data["lastUsedProvider"] == "openai-compatible" and "anthropic" in data["providers"]
    settings = data["providers"]["openai-compatible"]["settings"]
    assert settings == {
        "provider": "openai-compatible",
        "model": "m",
        "apiKey": "sk",
        "baseUrl": "http://127.0.0.1:9/v1",
    }
    run = launch("cline", **env)
    assert run.argv == ("cline", "--json", "-P", "openai-compatible", "-m", "m", "-fix it")
    # the key stays out of argv; the model variables are passed on, so that a container's
    # entrypoint can run prepare again with them (SSE_AGENT) just before Cline starts
    assert "sk" not in " ".join(run.argv) and run.env == {
        "CLINE_NO_AUTO_UPDATE": "1",
        "CLINE_SESSION_BACKEND_MODE": "local",
        **env,
    }


def test_copilot_goes_offline_only_with_a_provider_of_its_own() -> None:
    byok = launch("copilot", COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:9", COPILOT_PROVIDER_API_KEY="k")
    assert byok.env["COPILOT_OFFLINE"] == "true" and byok.env["COPILOT_PROVIDER_API_KEY"] == "k"
    hosted = launch("copilot", GH_TOKEN="t", SSE_AGENT_MODEL="m")
    assert "COPILOT_OFFLINE" not in hosted.env and hosted.env["GH_TOKEN"] == "t"
    assert hosted.argv[:3] == ("copilot", "-p", "-fix it") and hosted.argv[-2:] == ("--model", "m")
    assert "--allow-all-tools" in hosted.argv and "--output-format" in hosted.argv


def test_nanocoders_provider_holds_references_not_the_key(tmp_path: Path) -> None:
    run = launch("nanocoder", OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="sk", SSE_AGENT_MODEL="m")
    assert run.argv == (
        *("nanocoder", "--plain", "--json", "--trust-directory", "--provider", "ssebench", "--model", "m"),
        *("run", "-fix it"),
    )
    assert json.loads(run.env["NANOCODER_PROVIDERS"]) == [
        {"name": "ssebench", "baseUrl": "${OPENAI_BASE_URL}", "apiKey": "${OPENAI_API_KEY}", "models": ["m"]}
    ]
    assert run.env == {
        "OPENAI_API_KEY": "sk",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "NANOCODER_PROVIDERS": run.env["NANOCODER_PROVIDERS"],
        "NANOCODER_TRUST_DIRECTORY": "1",
    }
    # its own Node first on PATH, for its process only: the node beside its command
    from ssebench.agents import runtime
    from ssebench.agents.registry import agent

    bin_dir = tmp_path / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    for name in ("nanocoder", "node"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    assert runtime.launch_path(agent("nanocoder"), {"PATH": f"/usr/bin:{bin_dir}"}) == {
        "PATH": f"{bin_dir}:/usr/bin:{bin_dir}"
    }
    assert runtime.launch_path(agent("continue"), {"PATH": f"/usr/bin:{bin_dir}"}) == {}
    (bin_dir / "node").unlink()
    assert runtime.launch_path(agent("nanocoder"), {"PATH": f"/usr/bin:{bin_dir}"}) == {}


def test_the_new_openai_agents_pass_on_what_their_prepare_reads() -> None:
    """In a container the entrypoint prepares again with only what the launch passed on."""
    variables = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k", "SSE_AGENT_MODEL": "m"}
    for agent in ("pi", "kimi-code", "gptme"):
        assert {k: launch(agent, **variables).env[k] for k in variables} == variables, agent
    assert launch("pi", **variables).argv == (
        "pi",
        "--mode",
        "json",
        "-p",
        "--provider",
        "ssebench",
        "--model",
        "m",
        "-fix it",
    )
    assert launch("kimi-code", **variables).argv[-2:] == ("--model", "ssebench")
    assert launch("gptme", **variables).argv[-3:] == ("-m", "ssebench/m", "-fix it")


def test_hermes_runs_then_prints_its_session() -> None:
    run = launch("hermes", OPENAI_API_KEY="k")
    assert run.argv[3:] == ("hermes", "-fix it", "ssebench", "gpt-5")  # $0, $1 prompt, $2 provider, $3 model
    assert run.argv[2] == (
        'hermes chat -Q --yolo --provider "$2" -m "$3" -q "$1" </dev/null >&2; status=$?; '
        "hermes sessions export --format jsonl - </dev/null; exit $status"
    )
    assert run.env["OPENAI_BASE_URL"] == "https://api.openai.com/v1"  # config.yaml says ${OPENAI_BASE_URL}


def test_mastracode_takes_the_model_only_when_asked() -> None:
    assert "-m" not in launch("mastracode", OPENAI_API_KEY="k").argv  # its default, openai/gpt-5.5
    assert launch("mastracode", OPENAI_API_KEY="k", SSE_AGENT_MODEL="openai/gpt-5").argv[-2:] == ("-m", "openai/gpt-5")
