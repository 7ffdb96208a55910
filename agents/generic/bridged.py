"""Clients that start only local (stdio) servers from their config file: the entry runs the
``mcp-remote`` bridge (``npx -y mcp-remote URL``) to reach the HTTP server. Claude Desktop, and
the clients Smithery lists with stdio transport only.

``install`` writes the bridged entry: these clients have no other way to reach an HTTP server
from their config, and the entry is the one their own docs give for a remote server. ``show``
says why, and what the bridge needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from ssebench.agents.base import Client, ServerSettings, Unit

UNKNOWN_LIMIT = "Its own limit for a call applies; ssebench found none documented."
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


@dataclass(frozen=True)
class BridgedClient(Client):
    """``npx -y mcp-remote URL`` as a stdio server, plus the client's timeout key if it has one;
    ``why``: ``show`` and ``install`` explain the bridge (Claude Desktop's note says it itself)."""

    bridged: ClassVar[bool] = True
    why: bool = True

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        args = ["-y", "mcp-remote", settings.url]
        parts = urlsplit(settings.url)
        if parts.scheme == "http" and parts.hostname not in _LOCAL_HOSTS:
            args.append("--allow-http")  # mcp-remote refuses plain http beyond localhost otherwise
        return self.with_timeout({"command": "npx", "args": args}, settings)

    def url_of(self, entry: Mapping[str, Any]) -> str | None:
        args = entry.get("args")
        if isinstance(args, list):
            for arg in args:
                if isinstance(arg, str) and arg.startswith(("http://", "https://")):
                    return arg
        return super().url_of(entry)

    def notes(self, settings: ServerSettings) -> list[str]:
        if not self.why:
            return super().notes(settings)
        return [
            *super().notes(settings),
            f"Why a bridge: {self.title} starts only local (stdio) servers from its config, so the entry runs "
            "`npx -y mcp-remote URL`, which speaks stdio to it and Streamable HTTP to the server and passes "
            "every message through, progress notifications too. Node.js must be installed; npx downloads "
            "mcp-remote on first use.",
        ]


CLAUDE_DESKTOP = BridgedClient(
    name="claude-desktop",
    title="Claude Desktop",
    format="json",
    container=("mcpServers",),
    user_path="{app}/Claude/claude_desktop_config.json",
    timeout_behaviour=(
        "Public reports say Claude Desktop drops a tool result after about 60 s, so a longer "
        "test_patch call may fail there."
    ),
    extra_notes=("The entry runs `npx -y mcp-remote URL`: Node.js must be installed.",),
    why=False,
)

CLIENTS = (
    BridgedClient(
        name="witsy",
        title="Witsy",
        format="json",
        container=("mcpServers",),
        user_path="{app}/Witsy/settings.json",
        timeout_behaviour=UNKNOWN_LIMIT,
    ),
    BridgedClient(
        name="enconvo",
        title="Enconvo",
        format="json",
        container=("mcpServers",),
        user_path=".config/enconvo/mcp_config.json",
        timeout_behaviour=UNKNOWN_LIMIT,
    ),
    BridgedClient(
        name="boltai",
        title="BoltAI",
        format="json",
        container=("mcpServers",),
        user_path=".boltai/mcp.json",
        timeout_behaviour=UNKNOWN_LIMIT,
    ),
    BridgedClient(
        name="amazon-bedrock",
        title="Amazon Bedrock Client",
        format="json",
        container=("mcpServers",),
        user_path="Amazon Bedrock Client/mcp_config.json",
        timeout_behaviour=UNKNOWN_LIMIT,
    ),
    BridgedClient(
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
    BridgedClient(
        name="tome",
        title="Tome",
        format="json",
        container=("mcpServers",),
        user_path=".tome/mcp_config.json",
        timeout_behaviour=UNKNOWN_LIMIT,
    ),
)
