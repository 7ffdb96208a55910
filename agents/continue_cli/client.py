"""Continue CLI: ``~/.continue/config.yaml`` (or ``$CONTINUE_GLOBAL_DIR/config.yaml``).

Its ``mcpServers`` is a list of named items, so the entry is the item whose ``name`` is the
server's (formats/yamllist.py); Streamable HTTP is ``type: streamable-http``. A new file
starts with the ``name``/``version``/``schema`` lines ``cn`` itself writes
(``formats.CONTINUE_SKELETON``): Continue refuses a config without them. ``cn`` 1.5 reads no
project config, so there is no project scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.base import Client, Env, Scope, Settings


@dataclass(frozen=True)
class ContinueCli(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and env.vars.get("CONTINUE_GLOBAL_DIR"):
            return Path(env.vars["CONTINUE_GLOBAL_DIR"]) / "config.yaml"
        return super().config_path(scope, env)

    def entry(self, settings: Settings) -> dict[str, Any]:
        return {"type": "streamable-http", "url": settings.url}


CLIENT = ContinueCli(
    name="continue",
    title="Continue CLI",
    format="yaml-list",
    container=("mcpServers",),
    user_path=".continue/config.yaml",
    timeout_behaviour=(
        "Continue CLI calls a tool with the MCP SDK's fixed 60 s request limit: no setting raises it and "
        "progress does not reset it, so a test_patch call longer than 60 s comes back as an error."
    ),
    binaries=("cn",),
    path_note="(or $CONTINUE_GLOBAL_DIR/config.yaml)",
    extra_notes=(
        "Calls that outlast 60 s cannot reach Continue CLI: use it where a test_patch call finishes within "
        "a minute (a quick build, or a level with fewer checks), or run another agent.",
    ),
)
