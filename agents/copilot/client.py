"""GitHub Copilot CLI: ``~/.copilot/mcp-config.json`` (``$COPILOT_HOME/mcp-config.json``).

The entry is ``{"type": "http", "url": ..., "tools": ["*"], "timeout": ms}``; ``timeout`` is
the per-call limit in milliseconds (default 60 s).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.base import Client, Env, Scope, Settings, Unit


@dataclass(frozen=True)
class Copilot(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        home = (env.vars.get("COPILOT_HOME") or "").strip()
        if scope is Scope.USER and home and os.path.isabs(home):
            return Path(home) / "mcp-config.json"
        return super().config_path(scope, env)

    def entry(self, settings: Settings) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "http", "url": settings.url, "tools": ["*"]}
        return self.with_timeout(entry, settings)


CLIENT = Copilot(
    name="copilot",
    title="GitHub Copilot CLI",
    format="json",
    container=("mcpServers",),
    user_path=".copilot/mcp-config.json",
    path_note="(or $COPILOT_HOME/mcp-config.json)",
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour="Copilot CLI's own default outlasted a 90 s call without progress (measured with 1.0.102).",
    binaries=("copilot",),
    extra_notes=("`copilot mcp get NAME` shows the timeout Copilot CLI read.",),
)
