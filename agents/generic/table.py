"""Clients whose entry is a fixed shape with the URL in it: one table row each.

``shape`` lists the entry's keys in order; the value ``URL`` is replaced by the server's URL.
Adding such a client is adding a row here (see docs/adding-an-agent.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssebench.agents.base import Client, Settings

URL = "{url}"


@dataclass(frozen=True)
class TableClient(Client):
    shape: tuple[tuple[str, Any], ...] = ()

    def entry(self, settings: Settings) -> dict[str, Any]:
        entry = {key: settings.url if value == URL else value for key, value in self.shape}
        return self.with_timeout(entry, settings)


NO_TIMEOUT_KEY = "Its own default limit applies to every call."

CLIENTS = (
    TableClient(
        name="vscode",
        title="VS Code",
        format="json",
        container=("servers",),
        user_path="{app}/Code/User/mcp.json",
        project_path=".vscode/mcp.json",
        shape=(("type", "http"), ("url", URL)),
        timeout_behaviour=NO_TIMEOUT_KEY,
        binaries=("code",),
    ),
    TableClient(
        name="cursor",
        title="Cursor",
        format="json",
        container=("mcpServers",),
        user_path=".cursor/mcp.json",
        project_path=".cursor/mcp.json",
        shape=(("url", URL),),
        timeout_behaviour=NO_TIMEOUT_KEY,
        binaries=("cursor", "cursor-agent"),
    ),
    TableClient(
        name="windsurf",
        title="Windsurf",
        format="json",
        container=("mcpServers",),
        user_path=".codeium/windsurf/mcp_config.json",
        shape=(("serverUrl", URL),),
        timeout_behaviour=NO_TIMEOUT_KEY,
        binaries=("windsurf",),
        extra_notes=("Windsurf reads a remote server's address from serverUrl (url does not connect).",),
    ),
)
