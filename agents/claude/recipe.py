"""Claude Code's run recipe: ``claude -p`` with stream-json output, the one tool allowed.

Measured with Claude Code 2.1: without ``--allowedTools`` a headless run exits 0 with a
permission denial and never calls the tool; as root ``--dangerously-skip-permissions`` is
refused unless ``IS_SANDBOX=1`` (the task container is the sandbox, and the agent must edit
the tree and run commands without asking). Claude Code defers MCP tools behind its
ToolSearch tool; ``ENABLE_TOOL_SEARCH=false`` offers test_patch to the model directly.
A silent tool call is aborted after ``CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT`` (default 5 min),
reset by progress: the server's heartbeats (every <= 30 s) keep it alive, so it stays at
its default; the per-call limit is the entry's ``timeout`` that ``agents install`` writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.agents.claude import AGENT
from ssebench.agents.recipe import AgentRecipe, Launch, ModelApi, model_from, pick

TOOL = "mcp__ssebench__test_patch"
MCP_STARTUP_MS = 300_000  # as long as the entrypoint waits for the server (SSE_MCP_TIMEOUT)
# Claude Code's headless credentials: an API key, a bearer token (gateways), or the
# long-lived token of ``claude setup-token``. A login in ~/.claude does not count: a run
# has its own HOME.
KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


@dataclass(frozen=True)
class ClaudeRecipe(AgentRecipe):
    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        return ModelApi(keys=KEY_VARS, base_url="ANTHROPIC_BASE_URL")

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = [
            self.binary,
            "-p",
            prompt,
            "--allowedTools",
            TOOL,
            "--dangerously-skip-permissions",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
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
        return Launch(
            argv=tuple(argv),
            env=added,
            stream_format=self.stream_format,
            timeouts={
                "MCP_TIMEOUT": f"{MCP_STARTUP_MS} ms (server start)",
                "CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT": "default 300000 ms, reset by progress",
            },
        )


RECIPE = ClaudeRecipe(AGENT)
