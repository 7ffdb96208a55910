"""The one protocol every MCP client in the kit follows.

A client is data plus, where needed, a small override: its name, where its config lives per
scope, the entry it needs, the key path of that entry, how it expresses a tool timeout (and
in which unit), the notes a user must see. Reading, merging and removing the entry are the
same for every client and live in ``formats`` (one editor per format) and ``files`` (the
writes); a client never touches a file itself.

A client knows nothing of launching: an agent ``ssebench run`` launches is a record
(``ssebench.agents.agent.Agent``) that holds its client, so a client without one (VS Code,
Zed...) can still be registered, just not launched.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

DEFAULT_URL = "http://localhost:3000/mcp"
DEFAULT_NAME = "ssebench"
DEFAULT_TIMEOUT = 3600  # seconds: a test_patch call is a full build and test cycle


class Scope(str, Enum):
    USER = "user"
    PROJECT = "project"


class Unit(str, Enum):
    SECONDS = "s"
    MILLISECONDS = "ms"


@dataclass(frozen=True)
class ServerSettings:
    """The server entry the user asked for: where the server is, its name, the tool timeout in seconds."""

    url: str = DEFAULT_URL
    name: str = DEFAULT_NAME
    timeout: int = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class Env:
    """The environment a config path depends on; tests point it at a temporary HOME."""

    home: Path
    cwd: Path
    vars: Mapping[str, str]
    platform: str = sys.platform

    @classmethod
    def current(cls) -> Env:
        return cls(Path(os.path.expanduser("~")), Path.cwd(), dict(os.environ))

    def xdg_config(self) -> Path:
        value = self.vars.get("XDG_CONFIG_HOME")
        return Path(value) if value and os.path.isabs(value) else self.home / ".config"

    def app_support(self) -> Path:
        """Where desktop apps keep per-user data (Electron's ``appData``)."""
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support"
        return self.xdg_config()


@dataclass(frozen=True)
class Client:
    """One MCP client. Subclasses override ``entry``/``config_path``/``notes`` where a client
    differs from the common case; most clients are just a row of fields (see generic/table.py).
    """

    name: str  # the AGENT argument
    title: str  # what people call it
    format: str  # "json" (JSON/JSONC), "toml" or "yaml": picks the editor in formats.EDITORS
    container: tuple[str, ...]  # key path of the table of servers, e.g. ("mcpServers",)
    user_path: str | None  # relative to HOME; "{xdg}/..." = $XDG_CONFIG_HOME, "{app}/..." = appData
    project_path: str | None = None  # relative to the current folder
    timeout_key: str | None = None  # the entry's key for the per-call tool timeout
    timeout_unit: Unit | None = None
    timeout_behaviour: str = ""  # one sentence: the client's default limit and whether progress resets it
    binaries: tuple[str, ...] = ()  # programs whose presence means the client is installed
    extra_notes: tuple[str, ...] = field(default=())
    path_note: str = ""  # how the user-scope path moves, e.g. "or $CODEX_HOME/config.toml"
    bridged: ClassVar[bool] = False  # the entry runs a stdio bridge (mcp-remote): the client has no HTTP

    # -- where ------------------------------------------------------------------------------

    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.PROJECT:
            return env.cwd / self.project_path if self.project_path else None
        if self.user_path is None:
            return None
        return self._expand(self.user_path, env)

    def describe_path(self, scope: Scope) -> str | None:
        """The config path as the docs show it (no machine-specific folders)."""
        template = self.user_path if scope is Scope.USER else self.project_path
        if template is None:
            return None
        if scope is Scope.PROJECT:
            return f"./{template}"
        if template.startswith("{xdg}/"):
            text = f"~/.config/{template.removeprefix('{xdg}/')} (or under $XDG_CONFIG_HOME)"
        elif template.startswith("{app}/"):
            rest = template.removeprefix("{app}/")
            text = f"~/.config/{rest} (macOS: ~/Library/Application Support/{rest})"
        else:
            text = f"~/{template}"
        return f"{text} {self.path_note}".strip()

    def _expand(self, template: str, env: Env) -> Path:
        if template.startswith("{xdg}/"):
            return env.xdg_config() / template.removeprefix("{xdg}/")
        if template.startswith("{app}/"):
            return env.app_support() / template.removeprefix("{app}/")
        return env.home / template

    # -- what -------------------------------------------------------------------------------

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        """The value stored under ``container + (name,)``."""
        raise NotImplementedError

    def entry_path(self, settings: ServerSettings) -> tuple[str, ...]:
        return (*self.container, settings.name)

    def timeout_value(self, seconds: int) -> int:
        """``seconds`` in this client's unit."""
        return seconds * 1000 if self.timeout_unit is Unit.MILLISECONDS else seconds

    def with_timeout(self, entry: dict[str, Any], settings: ServerSettings) -> dict[str, Any]:
        if self.timeout_key is not None:
            entry[self.timeout_key] = self.timeout_value(settings.timeout)
        return entry

    # -- reading back (for `list`) ------------------------------------------------------------

    def url_of(self, entry: Mapping[str, Any]) -> str | None:
        for key in ("url", "serverUrl", "uri", "httpUrl"):
            if isinstance(entry.get(key), str):
                return entry[key]
        return None

    def timeout_of(self, entry: Mapping[str, Any]) -> float | None:
        """The registered per-call timeout in seconds, or None where none is set."""
        if self.timeout_key is None:
            return None
        value = entry.get(self.timeout_key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return value / 1000 if self.timeout_unit is Unit.MILLISECONDS else float(value)

    # -- telling the user ---------------------------------------------------------------------

    def notes(self, settings: ServerSettings) -> list[str]:
        notes = []
        if self.timeout_key is None:
            notes.append(
                f"{self.title} has no timeout key for MCP servers: nothing sets the limit for a "
                f"test_patch call, which can take up to {settings.timeout} s. {self.timeout_behaviour}".strip()
            )
        else:
            unit = "milliseconds" if self.timeout_unit is Unit.MILLISECONDS else "seconds"
            notes.append(
                f"Tool timeout: {self.timeout_key} = {self.timeout_value(settings.timeout)} ({unit}). "
                f"{self.timeout_behaviour}".strip()
            )
        notes.extend(self.extra_notes)
        return notes
