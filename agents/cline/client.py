"""Cline CLI: ``~/.cline/data/settings/cline_mcp_settings.json`` (no project file).

The entry is the shape ``cline mcp add NAME URL --transport streamableHttp`` writes, a
``transport`` object, plus ``timeout`` in seconds, which Cline clamps to 1..3600 (default 60)
and applies to every request of the server; progress does not extend it (Cline sends no
progress token).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.base import Client, Env, Scope, Settings, Unit

#: the longest per-request limit Cline honours (seconds); a larger value is clamped to it
CLINE_MAX_TIMEOUT = 3600
SETTINGS_FILE = "cline_mcp_settings.json"


@dataclass(frozen=True)
class Cline(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        """Cline's own rule: $CLINE_MCP_SETTINGS_PATH, else $CLINE_DATA_DIR/settings/, else
        $CLINE_DIR/data/settings/, else ~/.cline/data/settings/ (absolute values only)."""
        if scope is Scope.PROJECT:
            return None
        for var, rest in (
            ("CLINE_MCP_SETTINGS_PATH", ()),
            ("CLINE_DATA_DIR", ("settings", SETTINGS_FILE)),
            ("CLINE_DIR", ("data", "settings", SETTINGS_FILE)),
        ):
            value = (env.vars.get(var) or "").strip()
            if value and os.path.isabs(value):
                return Path(value, *rest)
        return super().config_path(scope, env)

    def entry(self, settings: Settings) -> dict[str, Any]:
        entry: dict[str, Any] = {"transport": {"type": "streamableHttp", "url": settings.url}}
        return self.with_timeout(entry, settings)

    def timeout_value(self, seconds: int) -> int:
        return min(seconds, CLINE_MAX_TIMEOUT)

    def url_of(self, entry: Mapping[str, Any]) -> str | None:
        transport = entry.get("transport")
        if isinstance(transport, Mapping) and isinstance(transport.get("url"), str):
            return str(transport["url"])
        return super().url_of(entry)


CLIENT = Cline(
    name="cline",
    title="Cline CLI",
    format="json",
    container=("mcpServers",),
    user_path=".cline/data/settings/cline_mcp_settings.json",
    path_note="(or $CLINE_MCP_SETTINGS_PATH, under $CLINE_DATA_DIR/settings or $CLINE_DIR/data/settings)",
    timeout_key="timeout",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Cline CLI's default is 60 s, at most 3600 s; progress does not extend it.",
    binaries=("cline",),
    extra_notes=("Cline CLI clamps a longer timeout to 3600 s, so a test_patch call over an hour fails.",),
)
