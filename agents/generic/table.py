"""Clients whose entry is a fixed shape with the URL in it: one table row each.

``shape`` lists the entry's keys in order; the value ``URL`` is replaced by the server's URL,
``NAME`` by its name.
Adding such a client is adding a row here (see docs/adding-an-agent.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.base import Client, Env, Scope, ServerSettings, Unit

URL = "{url}"
NAME = "{name}"


@dataclass(frozen=True)
class TableClient(Client):
    """``home_var``: (VARIABLE, prefix) where $VARIABLE replaces the ``prefix`` folder of
    ``user_path`` (an empty prefix: HOME itself), e.g. ("COPILOT_HOME", ".copilot");
    ``max_timeout``: the client's cap in seconds, which a longer ``--timeout`` is cut to."""

    shape: tuple[tuple[str, Any], ...] = ()
    home_var: tuple[str, str] | None = None
    max_timeout: int | None = None

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        fill = {URL: settings.url, NAME: settings.name}
        entry = {
            key: fill.get(value, value) if isinstance(value, str) else deepcopy(value) for key, value in self.shape
        }
        return self.with_timeout(entry, settings)

    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and self.home_var and self.user_path:
            if (own := self._own_home(env.vars)) is not None:
                return own / self.user_path.removeprefix(self.home_var[1]).lstrip("/")
        return super().config_path(scope, env)

    def _own_home(self, env: Mapping[str, str]) -> Path | None:
        """$VARIABLE as the CLI's folder: only an absolute one. A relative one names a different
        folder in each working directory the CLI is started from, so the MCP entry and what
        ``prepare`` writes beside it both stay in HOME's folder, where ``agents install`` says."""
        if self.home_var is None:
            return None
        value = (env.get(self.home_var[0]) or "").strip()
        return Path(value) if value and Path(value).is_absolute() else None

    def describe_path(self, scope: Scope) -> str | None:
        text = super().describe_path(scope)
        if text is None or scope is not Scope.USER or not self.home_var or self.path_note or not self.user_path:
            return text
        var, prefix = self.home_var
        return f"{text} (or ${var}/{self.user_path.removeprefix(prefix).lstrip('/')})"

    def home_folder(self, home: Path, env: Mapping[str, str]) -> Path:
        """The CLI's own folder, where ``prepare`` writes beside the MCP entry: ``$VARIABLE`` when it
        is an absolute path, else the ``prefix`` folder in HOME (the same rule as the entry's)."""
        if self.home_var is None:
            raise ValueError(f"{self.name}: its client names no home_var")
        return self._own_home(env) or home / self.home_var[1]

    def timeout_value(self, seconds: int) -> int:
        if self.max_timeout is not None:
            seconds = min(seconds, self.max_timeout)
        return super().timeout_value(seconds)

    def notes(self, settings: ServerSettings) -> list[str]:
        notes = super().notes(settings)
        if self.max_timeout is not None and settings.timeout > self.max_timeout:
            notes.append(
                f"{self.title} allows at most {self.max_timeout} s per call, so {settings.timeout} s is written "
                f"as {self.max_timeout} s: a test_patch call that takes longer fails in {self.title}."
            )
        return notes


NO_TIMEOUT_KEY = "Its own default limit applies to every call."

CLIENTS = (
    TableClient(
        name="vscode",
        title="VS Code",
        format="json",
        container=("servers",),
        user_path="{app}/Code/User/mcp.json",
        project_path=".vscode/mcp.json",
        shape=(("type", "http"), ("url", URL)),
        timeout_behaviour=NO_TIMEOUT_KEY,
        binaries=("code",),
        extra_notes=(
            "VS Code forwards this entry to its Copilot agent sessions, which also read the portable Copilot "
            "files: ~/.copilot/mcp-config.json (`ssebench agents install copilot`, with a timeout key) and "
            "./.mcp.json.",
        ),
    ),
    TableClient(
        name="cursor",
        title="Cursor",
        format="json",
        container=("mcpServers",),
        user_path=".cursor/mcp.json",
        project_path=".cursor/mcp.json",
        shape=(("url", URL),),
        timeout_behaviour=NO_TIMEOUT_KEY,
        binaries=("cursor", "cursor-agent"),
    ),
    TableClient(
        name="windsurf",
        title="Windsurf",
        format="json",
        container=("mcpServers",),
        user_path=".codeium/windsurf/mcp_config.json",
        shape=(("serverUrl", URL),),
        timeout_behaviour=NO_TIMEOUT_KEY,
        binaries=("windsurf",),
        extra_notes=("Windsurf reads a remote server's address from serverUrl (url does not connect).",),
    ),
)

GOOSE = TableClient(
    name="goose",
    title="Goose",
    format="yaml",
    container=("extensions",),
    user_path="{xdg}/goose/config.yaml",
    shape=(
        ("enabled", True),
        ("type", "streamable_http"),
        ("name", NAME),
        ("description", "ssebench test_patch: build and test the task's source tree"),
        ("uri", URL),
        ("envs", {}),
        ("env_keys", []),
        ("headers", {}),
    ),
    timeout_key="timeout",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Goose's default for an extension is 300 s.",
    binaries=("goose",),
)
