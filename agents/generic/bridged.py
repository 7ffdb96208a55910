"""Clients that start only local (stdio) servers from their config file (Smithery lists them
with stdio transport only): the entry runs the ``mcp-remote`` bridge, as for Claude Desktop.

``install`` writes the bridged entry: these clients have no other way to reach an HTTP server
from their config, and the entry is the one their own docs give for a remote server. ``show``
says why, and what the bridge needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssebench.agents.base import Settings, Unit
from ssebench.agents.generic.claude_desktop import ClaudeDesktop

UNKNOWN_LIMIT = "Its own limit for a call applies; ssebench found none documented."


@dataclass(frozen=True)
class Bridged(ClaudeDesktop):
    """``npx -y mcp-remote URL`` as a stdio server, plus the client's timeout key if it has one."""

    def entry(self, settings: Settings) -> dict[str, Any]:
        return self.with_timeout(super().entry(settings), settings)

    def notes(self, settings: Settings) -> list[str]:
        return [
            *super().notes(settings),
            f"Why a bridge: {self.title} starts only local (stdio) servers from its config, so the entry runs "
            "`npx -y mcp-remote URL`, which speaks stdio to it and Streamable HTTP to the server and passes "
            "every message through, progress notifications too. Node.js must be installed; npx downloads "
            "mcp-remote on first use.",
        ]


CLIENTS = (
    Bridged(
        name="witsy",
        title="Witsy",
        format="json",
        container=("mcpServers",),
        user_path="{app}/Witsy/settings.json",
        timeout_behaviour=UNKNOWN_LIMIT,
    ),
    Bridged(
        name="enconvo",
        title="Enconvo",
        format="json",
        container=("mcpServers",),
        user_path=".config/enconvo/mcp_config.json",
        timeout_behaviour=UNKNOWN_LIMIT,
    ),
    Bridged(
        name="boltai",
        title="BoltAI",
        format="json",
        container=("mcpServers",),
        user_path=".boltai/mcp.json",
        timeout_behaviour=UNKNOWN_LIMIT,
    ),
    Bridged(
        name="amazon-bedrock",
        title="Amazon Bedrock Client",
        format="json",
        container=("mcpServers",),
        user_path="Amazon Bedrock Client/mcp_config.json",
        timeout_behaviour=UNKNOWN_LIMIT,
    ),
    Bridged(
        name="amazonq",
        title="Amazon Q Developer CLI",
        format="json",
        container=("mcpServers",),
        user_path=".aws/amazonq/mcp.json",
        timeout_key="timeout",
        timeout_unit=Unit.MILLISECONDS,
        timeout_behaviour="Amazon Q's default for a request is 120 s.",
        # no binaries: `q` is many tools' name; ~/.aws/amazonq says Amazon Q is here
        extra_notes=("Amazon Q Developer CLI is now Kiro CLI: `ssebench agents install kiro` writes its file.",),
    ),
    Bridged(
        name="tome",
        title="Tome",
        format="json",
        container=("mcpServers",),
        user_path=".tome/mcp_config.json",
        timeout_behaviour=UNKNOWN_LIMIT,
    ),
)
