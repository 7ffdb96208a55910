"""Goose: ``$XDG_CONFIG_HOME/goose/config.yaml``, an ``extensions`` entry of type
``streamable_http``; comments in the YAML are kept (ruamel.yaml round trip)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssebench.agents.base import Client, Settings, Unit


@dataclass(frozen=True)
class Goose(Client):
    def entry(self, settings: Settings) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "enabled": True,
            "type": "streamable_http",
            "name": settings.name,
            "description": "ssebench test_patch: build and test the task's source tree",
            "uri": settings.url,
            "envs": {},
            "env_keys": [],
            "headers": {},
        }
        return self.with_timeout(entry, settings)


CLIENT = Goose(
    name="goose",
    title="Goose",
    format="yaml",
    container=("extensions",),
    user_path="{xdg}/goose/config.yaml",
    timeout_key="timeout",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Goose's default for an extension is 300 s.",
    binaries=("goose",),
)
