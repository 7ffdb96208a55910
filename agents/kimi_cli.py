"""Kimi CLI (the Python one): ``kimi-cli --print -p PROMPT --output-format stream-json``, on Python 3.13.

**Install.** ``kimi-cli`` from PyPI, in a venv of its own from the hashed lock in
configs/agent-clis/pypi/kimi-cli/ (agents/pypi.py). It requires Python 3.12 or newer, but dies
at start on pyenv's 3.12.1 (``TypeError: super(type, obj)`` while registering its slash
commands: that patch release sets ``__orig_class__`` on a frozen slotted dataclass), so
``python_min`` asks for 3.13. Pinned at 1.51.0: 1.52.0, the last release, is a deprecation gate
whose every entry point only prints that Kimi CLI is no longer maintained
(``kimi_cli/deprecation.py``), in favour of Kimi Code, which is bundled too (``kimi-code``). Its
command is ``kimi-cli`` (it also installs ``kimi``, Kimi Code's command, which the run does not use).

**Config.** ``~/.kimi/mcp.json`` (or ``$KIMI_SHARE_DIR/mcp.json``): ``mcpServers.NAME`` with
``url`` and ``transport: "http"`` (fastmcp's MCP config). The tool-call timeout is not per server:
``[mcp.client] tool_call_timeout_ms`` (default 60000) in its config bounds every MCP call
(``kimi_cli/config.py``, ``MCPClientConfig``), and progress does not extend it. The launch sets
it to 3600000 ms with the rest of the run's config.

**Launch.** ``--print`` runs headless and approves every tool (it implies ``--afk``);
``--output-format stream-json`` prints each message as a JSON line. The model config is passed
with ``--config`` (a JSON text; no file is written): provider ``ssebench`` of type
``openai_legacy`` (OpenAI chat completions), whose ``base_url`` and ``api_key`` Kimi CLI takes
from ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` when it starts (``kimi_cli/llm.py``,
``augment_provider_with_env_vars``), and model ``ssebench`` as the default.

**Stream.** OpenAI-style messages, one per line: the assistant's ``content`` (text, or parts of
type ``text`` and ``think``) and ``tool_calls``, then ``role: tool`` with ``tool_call_id``; Kimi
Code prints the same shape, and one reader reads both (agents/shared/kimi_stream.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ssebench.agents import pypi
from ssebench.agents.agent import OPENAI_CHAT_VARS, Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.generic.table import URL, TableClient
from ssebench.agents.shared.kimi_stream import KimiStreamJson

BINARY = "kimi-cli"
MODEL_KEY = "ssebench"
DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: every MCP call's limit (ms), set with the run's config: Kimi CLI has none per server
TOOL_CALL_TIMEOUT_MS = 3_600_000


def run_config(env: Mapping[str, str]) -> dict[str, Any]:
    """The ``--config`` of a run: the endpoint's provider (URL and key from the environment) and model."""
    model = {"provider": MODEL_KEY, "model": model_from(env) or DEFAULT_MODEL, "max_context_size": 128000}
    return {
        "default_model": MODEL_KEY,
        "providers": {MODEL_KEY: {"type": "openai_legacy", "base_url": DEFAULT_BASE_URL, "api_key": ""}},
        "models": {MODEL_KEY: model},
        "mcp": {"client": {"tool_call_timeout_ms": TOOL_CALL_TIMEOUT_MS}},
    }


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    argv = (
        BINARY, "--print", "--output-format", "stream-json",
        "--config", json.dumps(run_config(env)), "-p", prompt,
    )  # fmt: skip
    return AgentCommand(
        argv=argv,
        env=pick(env, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
        timeouts={"tool_call_timeout_ms": f"{TOOL_CALL_TIMEOUT_MS} ms (the run's config), every MCP call"},
    )


CLIENT = TableClient(
    name="kimi-cli",
    title="Kimi CLI",
    format="json",
    container=("mcpServers",),
    user_path=".kimi/mcp.json",
    home_var=("KIMI_SHARE_DIR", ".kimi"),
    shape=(("url", URL), ("transport", "http")),
    timeout_behaviour=(
        "Kimi CLI has no timeout per server: [mcp.client] tool_call_timeout_ms in its config (default "
        "60000 ms) bounds every MCP call, and progress does not extend it; set it to 3600000."
    ),
    binaries=(BINARY,),
    extra_notes=("Kimi CLI needs Python 3.13 here; Kimi Code (kimi-code) is its maintained successor.",),
)

AGENT = Agent(
    package="kimi-cli",
    binary=BINARY,
    **pypi.record_fields("kimi-cli"),
    python_min=(3, 13),
    client=CLIENT,
    launch=launch,
    config_vars=("KIMI_SHARE_DIR",),
    model_api=openai_api,
    model_vars=OPENAI_CHAT_VARS,
    stream_format="kimi-cli-stream-json",  # kimi-cli --print --output-format stream-json
    reader=KimiStreamJson,
)
