"""Kilo Code CLI: ``kilo.jsonc`` or ``kilo.json`` in ``$XDG_CONFIG_HOME/kilo`` (user) or the
current folder (project). Kilo creates ``kilo.jsonc`` on its first run and ``kilo mcp add``
writes there, so a new file is ``.jsonc``; a ``kilo.json`` alone is edited in place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.base import Client, Env, Scope, Settings, Unit


@dataclass(frozen=True)
class Kilo(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        path = super().config_path(scope, env)
        if path is None:
            return None
        plain = path.with_suffix(".json")
        return plain if plain.exists() and not path.exists() else path

    def entry(self, settings: Settings) -> dict[str, Any]:
        entry = {"type": "remote", "url": settings.url, "enabled": True}
        return self.with_timeout(entry, settings)


CLIENT = Kilo(
    name="kilo",
    title="Kilo Code CLI",
    format="json",
    container=("mcp",),
    user_path="{xdg}/kilo/kilo.jsonc",
    project_path="kilo.jsonc",
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour="Kilo Code CLI's default is 60 s; the server's progress notifications reset it.",
    binaries=("kilo", "kilocode"),
)
