"""What `ssebench agents install|uninstall|list|show` do, apart from printing.

Kept apart from the CLI (agents/cli.py only parses and prints) so tests and other parts can
register a client without going through argparse or a child process. What an install did is
recorded by ``agents/installs.py``, the one record of it.

In-process API: :func:`install_entry` is ``ssebench agents install AGENT --url URL``, into the
user config under the HOME of a given environment (e.g. a run's private HOME)::

    from ssebench.agents.actions import EntryError, install_entry

    try:
        done = install_entry("claude", "http://127.0.0.1:3000/mcp", env)  # a ConfigEdit
    except EntryError as error:  # str(error): the line the CLI prints; error.status: its exit status
        ...

It writes what the command writes, records it for ``uninstall`` the same way, and fails with
the command's message and status (a bad URL, an agent it does not know, a config that cannot
be edited: the file is then unchanged). ``done.lines()`` are the lines the command prints.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ssebench.agents import files, installs
from ssebench.agents.base import DEFAULT_NAME, DEFAULT_TIMEOUT, Client, Env, Scope, ServerSettings
from ssebench.agents.formats import EDITORS, Editor, FormatError
from ssebench.agents.registry import CLIENTS
from ssebench.choices import invalid_choice


class EntryError(Exception):
    """An install or uninstall that did not happen (nothing was written): ``str()`` is the line
    ``ssebench agents`` prints after ``ssebench agents:``, ``status`` its exit status (1 a config
    file that cannot be edited, 2 a request that makes no sense)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class ConfigEdit:
    """What an install or uninstall did to one client's config (or, dry, would do)."""

    client: Client
    settings: ServerSettings
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

    def lines(self) -> list[str]:
        """What ``ssebench agents install`` (or ``uninstall``: no entry) prints for it, without
        colour (after the diff, for a dry run)."""
        install = self.entry is not None
        return ["".join(part if isinstance(part, str) else part[0] for part in line) for line in report(self, install)]


Styled = tuple[str, str]  # a text and its meaning for ui.echo ("ok", "dim", ...)


def report(edit: ConfigEdit, install: bool) -> list[list[str | Styled]]:
    """The lines the command prints for an edit (after a dry run's diff), each a list of plain
    and styled parts."""
    change, settings = edit.change, edit.settings
    assert change is not None
    where = f"{edit.path} ({edit.client.title}, {edit.scope.value} scope)"
    lines: list[list[str | Styled]] = []
    if edit.dry_run:
        done = "would change as shown" if change.changed else "needs no change"
        lines.append([f"Dry run: {where} {done}; nothing was written."])
    elif install and change.changed:
        lines.append([("Registered", "ok"), f" {settings.name} at {settings.url} in {where}."])
    elif install:
        lines.append([f"{settings.name} is already registered in {where} with these settings; nothing changed."])
    else:
        if change.changed:
            lines.append([("Removed", "ok"), f" {settings.name} from {where}."])
        else:
            lines.append([f"{settings.name} is not registered in {where}; nothing changed."])
        if edit.removed:
            lines.append([f"Also removed what ssebench had created: {', '.join(map(str, edit.removed))}."])
    lines += [[("Note:", "dim"), f" {note}"] for note in edit.notes]
    return lines


# The server name is a config key and the prefix of the tool's name (Claude Code's
# ``mcp__NAME__test_patch``): Claude Code accepts only letters, digits, '-' and '_' in it, and
# the model APIs take a tool name of at most 64 of those, so NAME has at most 64 - 17 of them.
NAME_MAX = 64 - len("mcp____test_patch")
_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{NAME_MAX}}}")


def check_name(name: str) -> str | None:
    """Why *name* cannot be the server's name in a client's config, or None when it can."""
    if _NAME.fullmatch(name):
        return None
    return (
        f"must be 1 to {NAME_MAX} letters, digits, '-' or '_' "
        "(it becomes a config key and the tool's name, mcp__NAME__test_patch)"
    )


def check_url(url: str) -> str | None:
    """Why *url* cannot be an MCP server's URL, or None when it can (http/https, host, port, path)."""
    if any(c.isspace() for c in url):
        return "must not contain spaces"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https:// (the Streamable HTTP transport)"
    if not parts.hostname:
        return "has no host (e.g. http://localhost:3000/mcp)"
    if port == 0:
        return "has port 0"
    if not parts.path or parts.path == "/":
        return "has no path: the server's endpoint is its --path, /mcp by default (e.g. http://localhost:3000/mcp)"
    if parts.fragment:
        return "must not have a #fragment"
    return None


def install_entry(
    agent: str,
    url: str,
    env: Mapping[str, str],
    *,
    name: str = DEFAULT_NAME,
    timeout: int = DEFAULT_TIMEOUT,
    scope: Scope = Scope.USER,
) -> ConfigEdit:
    """Register the server at ``url`` with ``agent`` as ``ssebench agents install AGENT --url
    URL`` does, for the environment ``env`` (its ``HOME``, ``XDG_CONFIG_HOME``, ``CODEX_HOME``...;
    the project scope: the current folder). EntryError with the command's message otherwise."""
    if (problem := check_url(url)) is not None:
        raise EntryError(f"--url {url!r} {problem}", 2)
    if (problem := check_name(name)) is not None:
        raise EntryError(f"--name {name!r} {problem}", 2)
    client = CLIENTS.get(agent)
    if client is None:
        raise EntryError(f"argument AGENT: {invalid_choice(agent, tuple(CLIENTS))}", 2)
    home = Path(env["HOME"]) if env.get("HOME") else Path(os.path.expanduser("~"))
    where = Env(home, Path.cwd(), dict(env))
    return edit_entry(install, client, ServerSettings(url=url, name=name, timeout=timeout), scope, where)


def edit_entry(
    action: Callable[..., ConfigEdit],
    client: Client,
    settings: ServerSettings,
    scope: Scope,
    env: Env,
    *,
    file: Path | None = None,
    dry_run: bool = False,
) -> ConfigEdit:
    """``action`` (:func:`install` or :func:`uninstall`), any failure as an :class:`EntryError`
    (they raise it themselves for a request the client cannot satisfy, e.g. a scope it lacks)."""
    try:
        return action(client, settings, scope, env, file=file, dry_run=dry_run)
    except files.ConfigError as exc:
        raise EntryError(f"{str(exc).rstrip('.')}. The file was not changed.", 1) from None
    except OSError as exc:
        raise EntryError(f"{exc.filename or ''}: {exc.strerror or exc}. The file was not changed.", 1) from None


def editor(client: Client) -> Editor:
    return EDITORS[client.format]


def target(client: Client, scope: Scope, env: Env, file: Path | None) -> Path:
    if file is not None:
        return file if file.is_absolute() else env.cwd / file
    path = client.config_path(scope, env)
    if path is None:
        if client.user_path is None and client.project_path is None:
            raise EntryError(f"{client.name} has no config file of its own: give --file PATH to write one", 2)
        other = Scope.USER if scope is Scope.PROJECT else Scope.PROJECT
        raise EntryError(f"{client.title} has no {scope.value}-scope config; use --scope {other.value}", 2)
    return path


def snippet(client: Client, settings: ServerSettings) -> str:
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
    client: Client, settings: ServerSettings, scope: Scope, env: Env, *, file: Path | None = None, dry_run: bool = False
) -> ConfigEdit:
    path = target(client, scope, env, file)
    entry, entry_path = client.entry(settings), client.entry_path(settings)
    ed = editor(client)
    new_folders = installs.missing_parents(path)
    set_entry = _guard(path, lambda text: ed.set(text, entry_path, entry))
    change = files.edit(path, set_entry, dry_run=dry_run, cache=files.cache_folder(env.vars, env.home))
    if not dry_run:
        installs.after_install(env, change, ed, entry_path, new_folders)  # what uninstall may take back
    return ConfigEdit(client, settings, scope, path, entry, change, dry_run, client.notes(settings))


def uninstall(
    client: Client, settings: ServerSettings, scope: Scope, env: Env, *, file: Path | None = None, dry_run: bool = False
) -> ConfigEdit:
    path = target(client, scope, env, file)
    ed = editor(client)
    entry_path = client.entry_path(settings)
    record = installs.load(env).provenance(path, entry_path)  # only what install added goes

    def remove(text: str | None) -> str | None:
        return None if text is None else installs.removed_text(ed, text, entry_path, record, path)

    change = files.edit(path, _guard(path, remove), dry_run=dry_run, cache=files.cache_folder(env.vars, env.home))
    removed = [] if dry_run else installs.after_uninstall(env, path, entry_path, change.changed)
    return ConfigEdit(client, settings, scope, path, None, change, dry_run, removed=removed)


def clients() -> list[Client]:
    """Every client with a config file of its own (not ``generic``, nor ``warp``: cloud settings)."""
    return [c for c in CLIENTS.values() if c.user_path is not None or c.project_path is not None]


def detected(env: Env) -> list[str]:
    """``install --all``: the clients found here (not counting what ssebench created)."""
    record = installs.load(env)
    return [c.name for c in clients() if installs.detected(c, env, record)]


def registered(env: Env, name: str, scope: str) -> list[str]:
    """``uninstall --all``: the clients whose config in ``scope`` has the server ``name``."""
    rows = registrations(clients(), ServerSettings(name=name), env)
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


def registrations(among: list[Client], settings: ServerSettings, env: Env) -> list[Registration]:
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
