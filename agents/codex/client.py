"""Codex CLI: ``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``).

The ``[mcp_servers.NAME]`` table has no ``type`` key. ``default_tools_approval_mode =
"approve"`` is needed: without it ``codex exec`` refuses the call ("requires approval, but
approval policy is never"). Codex's per-call limit is not extended by progress, so
``tool_timeout_sec`` must cover the whole build and test cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.base import Client, Env, Scope, Settings, Unit

STARTUP_TIMEOUT_SEC = 300


@dataclass(frozen=True)
class Codex(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and env.vars.get("CODEX_HOME"):
            return Path(env.vars["CODEX_HOME"]) / "config.toml"
        return super().config_path(scope, env)

    def entry(self, settings: Settings) -> dict[str, Any]:
        entry: dict[str, Any] = {"url": settings.url, "startup_timeout_sec": STARTUP_TIMEOUT_SEC}
        self.with_timeout(entry, settings)
        entry["default_tools_approval_mode"] = "approve"
        return entry


CLIENT = Codex(
    name="codex",
    title="Codex CLI",
    format="toml",
    container=("mcp_servers",),
    user_path=".codex/config.toml",
    timeout_key="tool_timeout_sec",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Codex does not extend it on progress, so it must cover the whole call.",
    path_note="(or $CODEX_HOME/config.toml)",
    binaries=("codex",),
)
