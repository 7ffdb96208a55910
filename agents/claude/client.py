"""Claude Code: ``~/.claude.json`` (or ``$CLAUDE_CONFIG_DIR/.claude.json``), project ``.mcp.json``.

Claude Code rewrites ``~/.claude.json`` often and concurrent writers have truncated it, which
is why every write goes through ``files.edit`` (lock, atomic replace, every other key kept).
``claude mcp add`` has no timeout flag; the entry's ``timeout`` (milliseconds) carries it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.base import Client, Env, Scope, Settings, Unit


@dataclass(frozen=True)
class ClaudeCode(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and env.vars.get("CLAUDE_CONFIG_DIR"):
            return Path(env.vars["CLAUDE_CONFIG_DIR"]) / ".claude.json"
        return super().config_path(scope, env)

    def entry(self, settings: Settings) -> dict[str, Any]:
        return self.with_timeout({"type": "http", "url": settings.url}, settings)


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
    binaries=("claude",),
)
