"""Qwen Code: ``qwen -p`` with stream-json output, the OpenAI-compatible API.

**Config.** ``~/.qwen/settings.json`` (or ``$QWEN_HOME/settings.json``; project
``.qwen/settings.json``), may hold comments. The entry is what ``qwen mcp add --transport http
--timeout MS --trust`` writes (0.24): ``httpUrl`` (Streamable HTTP), ``timeout`` in
milliseconds, ``trust: true`` so a headless run calls the tool without asking.
``alwaysLoadTools: true`` (a per-server key) declares the tool to the model up front: by
default Qwen Code hides MCP tools behind its ``tool_search`` bridge, one extra round trip the
model must know to make.

**Launch.** Measured with Qwen Code 0.24: ``--auth-type openai`` with ``OPENAI_API_KEY`` and
``OPENAI_BASE_URL`` talks chat completions to any endpoint, with no login; the model is
``OPENAI_MODEL`` (``--model`` from ``SSE_AGENT_MODEL``). ``--approval-mode yolo`` and the
entry's ``trust: true`` let it call the tool headless. Usage statistics are switched off
(``QWEN_USAGE_STATISTICS_ENABLED=false``: they go to a vendor endpoint) and so is the
update check. Two limits hold a call: the entry's ``timeout`` (total, default 10 minutes,
not reset by progress) and ``mcp.toolIdleTimeoutMs`` / ``QWEN_CODE_MCP_TOOL_IDLE_TIMEOUT_MS``
(default 5 minutes without a word; the server's progress notifications reset it).

**Stream.** Claude Code's stream-json shape (agents/shared/claude_stream.py), read under
Qwen's name; its ``result`` has usage but no cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.agent import Agent, AgentCommand, ModelApi, model_from, pick
from ssebench.agents.base import Client, Env, Scope, ServerSettings, Unit
from ssebench.agents.shared.claude_stream import ClaudeStreamJson

BINARY = "qwen"
#: the variables Qwen Code reads for the OpenAI-compatible API and the idle limit, passed on when set
QWEN_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "QWEN_CODE_MCP_TOOL_IDLE_TIMEOUT_MS")


@dataclass(frozen=True)
class QwenCode(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and env.vars.get("QWEN_HOME"):
            return Path(env.vars["QWEN_HOME"]) / "settings.json"
        return super().config_path(scope, env)

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        entry: dict[str, Any] = {"httpUrl": settings.url}
        self.with_timeout(entry, settings)
        entry["trust"] = True
        entry["alwaysLoadTools"] = True
        return entry


def model_api(env: Mapping[str, str]) -> ModelApi:
    # without a key Qwen Code exits at once asking for an auth method
    return ModelApi(keys=("OPENAI_API_KEY",), base_url="OPENAI_BASE_URL")


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    argv = [BINARY, "-p", prompt, "--output-format", "stream-json", "--approval-mode", "yolo"]
    argv += ["--auth-type", "openai"]
    model = model_from(env)
    if model:
        argv += ["--model", model]
    added = {
        **pick(env, *QWEN_VARS),
        "QWEN_USAGE_STATISTICS_ENABLED": "false",
        "QWEN_CODE_SKIP_UPDATE_CHECK_ONCE": "true",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",  # the sandbox is ssebench's, not Qwen Code's
    }
    return AgentCommand(
        argv=tuple(argv),
        env=added,
        timeouts={
            "timeout": "from agents install (default 3600000 ms), not reset by progress",
            "mcp.toolIdleTimeoutMs": "Qwen Code's default 300000 ms, reset by progress",
        },
    )


CLIENT = QwenCode(
    name="qwen",
    title="Qwen Code",
    format="json",
    container=("mcpServers",),
    user_path=".qwen/settings.json",
    project_path=".qwen/settings.json",
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour=(
        "Qwen Code's default is 10 minutes and progress does not extend it; its separate idle limit "
        "(mcp.toolIdleTimeoutMs, default 5 minutes, at most 1 hour) is reset by the server's progress."
    ),
    binaries=(BINARY,),
    path_note="(or $QWEN_HOME/settings.json)",
    extra_notes=(
        "trust: true lets Qwen Code call the tool without asking (needed headless).",
        "alwaysLoadTools: true offers test_patch to the model directly, not behind tool_search.",
    ),
)

AGENT = Agent(
    package="@qwen-code/qwen-code",
    binary=BINARY,
    client=CLIENT,
    launch=launch,
    config_vars=("QWEN_HOME", "QWEN_CODE_SYSTEM_SETTINGS_PATH", "QWEN_CODE_SYSTEM_DEFAULTS_PATH"),
    model_api=model_api,
    model_vars="`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API)",
    stream_format="qwen-stream-json",  # qwen -p --output-format stream-json
    reader=ClaudeStreamJson,
)
