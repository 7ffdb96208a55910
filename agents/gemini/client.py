"""Gemini CLI: ``~/.gemini/settings.json`` (project ``.gemini/settings.json``), may hold comments.

``trust: true`` is required: without it Gemini CLI never offers the tool in headless mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssebench.agents.base import Client, Settings, Unit


@dataclass(frozen=True)
class Gemini(Client):
    def entry(self, settings: Settings) -> dict[str, Any]:
        entry: dict[str, Any] = {"url": settings.url, "type": "http"}
        self.with_timeout(entry, settings)
        entry["trust"] = True
        return entry


CLIENT = Gemini(
    name="gemini",
    title="Gemini CLI",
    format="json",
    container=("mcpServers",),
    user_path=".gemini/settings.json",
    project_path=".gemini/settings.json",
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour="Gemini CLI's default is 10 minutes and progress does not extend it.",
    binaries=("gemini",),
    extra_notes=("trust: true lets Gemini CLI call the tool without asking (needed headless).",),
)
