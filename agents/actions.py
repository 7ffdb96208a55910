"""What `ssebench agents install|uninstall|list|show` do, apart from printing.

Kept apart from the CLI so tests and other parts (the container entrypoint, Dockerfile
rendering) can register a client without going through argparse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.agents import files
from ssebench.agents.formats import EDITORS, Editor, FormatError
from ssebench.agents.base import Client, Env, Scope, Settings


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


def _guard(path: Path, action):  # noqa: ANN001, ANN202
    def run(text: str | None) -> str | None:
        try:
            return action(text)
        except FormatError as exc:
            raise files.ConfigError(path, exc.message, exc.line) from None

    return run


def install(client: Client, settings: Settings, scope: Scope, env: Env, *, file: Path | None = None,
            dry_run: bool = False) -> Outcome:
    path = target(client, scope, env, file)
    entry = client.entry(settings)
    ed = editor(client)
    change = files.edit(path, _guard(path, lambda text: ed.set(text, client.entry_path(settings), entry)),
                        dry_run=dry_run)
    if not dry_run:
        files.note_install(path, ed, change, client.entry_path(settings))  # what uninstall may take back
    return Outcome(client, settings, scope, path, entry, change, dry_run, client.notes(settings))


def uninstall(client: Client, settings: Settings, scope: Scope, env: Env, *, file: Path | None = None,
              dry_run: bool = False) -> Outcome:
    path = target(client, scope, env, file)
    ed = editor(client)

    entry_path = client.entry_path(settings)
    record = files.load_record(path, entry_path)  # only what install added goes
    if record is None:
        from ssebench.agents import created

        if str(path) in created.load(env).files:  # no record of ours, but the file is ssebench's
            record = files.Provenance(len(entry_path) - 1, True)

    def remove(text: str | None) -> str | None:
        return None if text is None else files.removed_text(ed, text, entry_path, record, path)

    change = files.edit(path, _guard(path, remove), dry_run=dry_run)
    if not dry_run and change.changed:
        files.forget_install(path, entry_path)
    return Outcome(client, settings, scope, path, None, change, dry_run)


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
            "agent": self.client.name, "title": self.client.title, "scope": self.scope.value,
            "path": str(self.path), "detected": self.detected, "config_exists": self.exists,
            "registered": self.registered, "url": self.url, "timeout_seconds": self.timeout_seconds,
            "has_timeout_key": self.client.timeout_key is not None, "error": self.error,
        }


def registrations(clients: list[Client], settings: Settings, env: Env) -> list[Registration]:
    rows = []
    for client in clients:
        for scope in Scope:
            path = client.config_path(scope, env)
            if path is None or (scope is Scope.PROJECT and not path.exists()):
                continue
            row = Registration(client, scope, path, client.detected(env), path.exists(), False, None, None)
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
