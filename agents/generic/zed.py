"""Zed: ``context_servers`` in ``$XDG_CONFIG_HOME/zed/settings.json`` (project
``.zed/settings.json``); the file is JSONC, usually full of comments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssebench.agents.base import Client, ServerSettings, Unit

ZED_MAX_TIMEOUT = 600  # Zed clamps a context server's timeout to 10 minutes


@dataclass(frozen=True)
class Zed(Client):
    def timeout_value(self, seconds: int) -> int:
        return min(seconds, ZED_MAX_TIMEOUT)

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        return self.with_timeout({"url": settings.url}, settings)

    def notes(self, settings: ServerSettings) -> list[str]:
        notes = super().notes(settings)
        if settings.timeout > ZED_MAX_TIMEOUT:
            notes.append(
                f"Zed allows at most {ZED_MAX_TIMEOUT} s per server, so {settings.timeout} s is written "
                f"as {ZED_MAX_TIMEOUT}: a test_patch call that takes longer fails in Zed."
            )
        return notes


CLIENT = Zed(
    name="zed",
    title="Zed",
    format="json",
    container=("context_servers",),
    user_path="{xdg}/zed/settings.json",
    project_path=".zed/settings.json",
    timeout_key="timeout",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Zed's default is context_server_timeout (60 s), its maximum 600 s.",
    binaries=("zed", "zeditor"),
)
