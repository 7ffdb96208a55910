"""Qwen Code: ``~/.qwen/settings.json`` (project ``.qwen/settings.json``), may hold comments.

The entry is what ``qwen mcp add --transport http --timeout MS --trust`` writes (0.24):
``httpUrl`` (Streamable HTTP), ``timeout`` in milliseconds, ``trust: true`` so a headless
run calls the tool without asking. ``alwaysLoadTools: true`` (a per-server key) declares the
tool to the model up front: by default Qwen Code hides MCP tools behind its ``tool_search``
bridge, one extra round trip the model must know to make.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.base import Client, Env, Scope, Settings, Unit


@dataclass(frozen=True)
class Qwen(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and env.vars.get("QWEN_HOME"):
            return Path(env.vars["QWEN_HOME"]) / "settings.json"
        return super().config_path(scope, env)

    def entry(self, settings: Settings) -> dict[str, Any]:
        entry: dict[str, Any] = {"httpUrl": settings.url}
        self.with_timeout(entry, settings)
        entry["trust"] = True
        entry["alwaysLoadTools"] = True
        return entry


CLIENT = Qwen(
    name="qwen",
    title="Qwen Code",
    format="json",
    container=("mcpServers",),
    user_path=".qwen/settings.json",
    project_path=".qwen/settings.json",
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour=(
        "Qwen Code's default is 10 minutes and progress does not extend it; its separate idle limit "
        "(mcp.toolIdleTimeoutMs, default 5 minutes, at most 1 hour) is reset by the server's progress."
    ),
    binaries=("qwen",),
    path_note="(or $QWEN_HOME/settings.json)",
    extra_notes=(
        "trust: true lets Qwen Code call the tool without asking (needed headless).",
        "alwaysLoadTools: true offers test_patch to the model directly, not behind tool_search.",
    ),
)
