"""What `ssebench agents install|uninstall|list|show` do, apart from printing.

Kept apart from the CLI (agents/cli.py only parses and prints) so tests and other parts (the
container entrypoint, Dockerfile rendering) can register a client without going through
argparse. What an install did is recorded by ``agents/installs.py``, the one record of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.agents import files, installs
from ssebench.agents.base import Client, Env, Scope, Settings
from ssebench.agents.formats import EDITORS, Editor, FormatError
from ssebench.agents.registry import CLIENTS


class UsageError(Exception):
    """A request the client cannot satisfy (e.g. a scope it does not have)."""


@dataclass
class Outcome:
    client: Client
    settings: Settings
    scope: Scope
    path: Path | None
    entry: dict[str, Any] | None
    change: files.Change | None
    dry_run: bool
    notes: list[str] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)  # what uninstall removed that ssebench had created

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.client.name,
            "title": self.client.title,
            "scope": self.scope.value,
            "path": str(self.path) if self.path else None,
            "name": self.settings.name,
            "url": self.settings.url,
            "timeout_seconds": self.settings.timeout,
            "entry": self.entry,
            "changed": bool(self.change and self.change.changed),
            "written": bool(self.change and self.change.changed and not self.dry_run),
            "dry_run": self.dry_run,
            "diff": self.change.diff() if self.change else "",
            "notes": self.notes,
        }


def editor(client: Client) -> Editor:
    return EDITORS[client.format]


def target(client: Client, scope: Scope, env: Env, file: Path | None) -> Path:
    if file is not None:
        return file if file.is_absolute() else env.cwd / file
    path = client.config_path(scope, env)
    if path is None:
        if client.user_path is None and client.project_path is None:
            raise UsageError(f"{client.name} has no config file of its own: give --file PATH to write one")
        other = Scope.USER if scope is Scope.PROJECT else Scope.PROJECT
        raise UsageError(f"{client.title} has no {scope.value}-scope config; use --scope {other.value}")
    return path


def snippet(client: Client, settings: Settings) -> str:
    """The text the client's config gets when it had none: what `show` prints."""
    return editor(client).set(None, client.entry_path(settings), client.entry(settings))


def _guard(path: Path, action):
    def run(text: str | None) -> str | None:
        try:
            return action(text)
        except FormatError as exc:
            raise files.ConfigError(path, exc.message, exc.line) from None

    return run


def install(
    client: Client, settings: Settings, scope: Scope, env: Env, *, file: Path | None = None, dry_run: bool = False
) -> Outcome:
    path = target(client, scope, env, file)
    entry, entry_path = client.entry(settings), client.entry_path(settings)
    ed = editor(client)
    new_folders = installs.missing_parents(path)
    change = files.edit(path, _guard(path, lambda text: ed.set(text, entry_path, entry)), dry_run=dry_run)
    if not dry_run:
        installs.after_install(env, change, ed, entry_path, new_folders)  # what uninstall may take back
    return Outcome(client, settings, scope, path, entry, change, dry_run, client.notes(settings))


def uninstall(
    client: Client, settings: Settings, scope: Scope, env: Env, *, file: Path | None = None, dry_run: bool = False
) -> Outcome:
    path = target(client, scope, env, file)
    ed = editor(client)
    entry_path = client.entry_path(settings)
    record = installs.load(env).provenance(path, entry_path)  # only what install added goes

    def remove(text: str | None) -> str | None:
        return None if text is None else installs.removed_text(ed, text, entry_path, record, path)

    change = files.edit(path, _guard(path, remove), dry_run=dry_run)
    removed = [] if dry_run else installs.after_uninstall(env, path, entry_path, change.changed)
    return Outcome(client, settings, scope, path, None, change, dry_run, removed=removed)


def clients() -> list[Client]:
    """Every client with a config file of its own (not ``generic``, nor ``warp``: cloud settings)."""
    return [c for c in CLIENTS.values() if c.user_path is not None or c.project_path is not None]


def detected(env: Env) -> list[str]:
    """``install --all``: the clients found here (not counting what ssebench created)."""
    record = installs.load(env)
    return [c.name for c in clients() if installs.detected(c, env, record)]


def registered(env: Env, name: str, scope: str) -> list[str]:
    """``uninstall --all``: the clients whose config in ``scope`` has the server ``name``."""
    rows = registrations(clients(), Settings(name=name), env)
    return list(dict.fromkeys(r.client.name for r in rows if r.registered and r.scope.value == scope))


@dataclass
class Registration:
    """One row of `list`: a client, a scope, and what its config says about the server."""

    client: Client
    scope: Scope
    path: Path
    detected: bool
    exists: bool
    registered: bool
    url: str | None
    timeout_seconds: float | None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.client.name,
            "title": self.client.title,
            "scope": self.scope.value,
            "path": str(self.path),
            "detected": self.detected,
            "config_exists": self.exists,
            "registered": self.registered,
            "url": self.url,
            "timeout_seconds": self.timeout_seconds,
            "has_timeout_key": self.client.timeout_key is not None,
            "error": self.error,
        }


def registrations(among: list[Client], settings: Settings, env: Env) -> list[Registration]:
    rows = []
    record = installs.load(env)
    for client in among:
        for scope in Scope:
            path = client.config_path(scope, env)
            if path is None or (scope is Scope.PROJECT and not path.exists()):
                continue
            found = installs.detected(client, env, record)
            row = Registration(client, scope, path, found, path.exists(), False, None, None)
            try:
                text = files.read_text(path)
                entry = None if text is None else editor(client).get(text, client.entry_path(settings))
            except files.ConfigError as exc:
                row.error = str(exc)
                entry = None
            except FormatError as exc:
                row.error = str(files.ConfigError(path, exc.message, exc.line))
                entry = None
            if isinstance(entry, dict):
                row.registered = True
                row.url = client.url_of(entry)
                row.timeout_seconds = client.timeout_of(entry)
            rows.append(row)
    return rows
