"""Claude Code: ``claude -p`` with stream-json output, the one tool allowed.

**Config.** ``~/.claude.json`` (or ``$CLAUDE_CONFIG_DIR/.claude.json``), project ``.mcp.json``.
Claude Code rewrites ``~/.claude.json`` often and concurrent writers have truncated it, which
is why every write goes through ``files.edit`` (lock, atomic replace, every other key kept).
``claude mcp add`` has no timeout flag; the entry's ``timeout`` (milliseconds) carries it.

**Launch.** Measured with Claude Code 2.1: without ``--allowedTools`` a headless run exits 0
with a permission denial and never calls the tool; as root ``--dangerously-skip-permissions``
is refused unless ``IS_SANDBOX=1`` (the task container is the sandbox, and the agent must edit
the tree and run commands without asking). Claude Code defers MCP tools behind its ToolSearch
tool; ``ENABLE_TOOL_SEARCH=false`` offers test_patch to the model directly. A silent tool call
is aborted after ``CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT`` (default 5 min), reset by progress: the
server's heartbeats (every <= 30 s) keep it alive, so it stays at its default; the per-call
limit is the entry's ``timeout`` that ``agents install`` writes.

**Stream.** ``stream-json`` (agents/shared/claude_stream.py); its ``result`` carries the usage
and ``total_cost_usd``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.agent import Agent, AgentCommand, ModelApi, model_from, pick
from ssebench.agents.base import Client, Env, Scope, ServerSettings, Unit
from ssebench.agents.shared.claude_stream import ClaudeStreamJson

BINARY = "claude"
TOOL = "mcp__ssebench__test_patch"
MCP_STARTUP_MS = 300_000  # as long as the entrypoint waits for the server (SSE_MCP_TIMEOUT)
# Claude Code's headless credentials: an API key, a bearer token (gateways), or the
# long-lived token of ``claude setup-token``. A login in ~/.claude does not count: a run
# has its own HOME.
KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


@dataclass(frozen=True)
class ClaudeCode(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and env.vars.get("CLAUDE_CONFIG_DIR"):
            return Path(env.vars["CLAUDE_CONFIG_DIR"]) / ".claude.json"
        return super().config_path(scope, env)

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        return self.with_timeout({"type": "http", "url": settings.url}, settings)


def model_api(env: Mapping[str, str]) -> ModelApi:
    return ModelApi(keys=KEY_VARS, base_url="ANTHROPIC_BASE_URL")


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    argv = [BINARY, "-p", prompt, "--allowedTools", TOOL, "--dangerously-skip-permissions"]
    argv += ["--output-format", "stream-json", "--verbose"]
    model = model_from(env)
    if model:
        argv += ["--model", model]
    added = {
        **pick(env, "ANTHROPIC_BASE_URL", *KEY_VARS),
        "IS_SANDBOX": "1",
        "ENABLE_TOOL_SEARCH": "false",
        "MCP_TIMEOUT": str(MCP_STARTUP_MS),
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    return AgentCommand(
        argv=tuple(argv),
        env=added,
        timeouts={
            "MCP_TIMEOUT": f"{MCP_STARTUP_MS} ms (server start)",
            "CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT": "default 300000 ms, reset by progress",
        },
    )


CLIENT = ClaudeCode(
    name="claude",
    title="Claude Code",
    format="json",
    container=("mcpServers",),
    user_path=".claude.json",
    project_path=".mcp.json",
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour=(
        "Claude Code also stops a call that sends nothing for CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT "
        "(default 5 minutes); the ssebench server's progress heartbeats keep a long call alive."
    ),
    path_note="(or $CLAUDE_CONFIG_DIR/.claude.json)",
    binaries=(BINARY,),
)

AGENT = Agent(
    package="@anthropic-ai/claude-code",
    binary=BINARY,
    client=CLIENT,
    launch=launch,
    config_vars=("CLAUDE_CONFIG_DIR",),
    model_api=model_api,
    model_vars="`ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN` or `CLAUDE_CODE_OAUTH_TOKEN`; `ANTHROPIC_BASE_URL`",
    stream_format="claude-stream-json",  # claude -p --output-format stream-json --verbose
    reader=ClaudeStreamJson,
)
