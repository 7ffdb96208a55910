"""opencode: ``opencode.json`` or ``opencode.jsonc`` (whichever exists; a new file is ``.json``)
in ``$XDG_CONFIG_HOME/opencode`` (user) or the current folder (project)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.base import Client, Env, Scope, Settings, Unit


@dataclass(frozen=True)
class OpenCode(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        path = super().config_path(scope, env)
        if path is None:
            return None
        jsonc = path.with_suffix(".jsonc")
        return jsonc if jsonc.exists() and not path.exists() else path

    def entry(self, settings: Settings) -> dict[str, Any]:
        entry = {"type": "remote", "url": settings.url, "enabled": True}
        return self.with_timeout(entry, settings)


CLIENT = OpenCode(
    name="opencode",
    title="opencode",
    format="json",
    container=("mcp",),
    user_path="{xdg}/opencode/opencode.json",
    project_path="opencode.json",
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour="opencode's default is 60 s; the server's progress notifications reset it.",
    binaries=("opencode",),
)
