"""``ssebench agents install|uninstall|list|show|dockerfile``: register the test_patch server
with an MCP client.

Exit status: 0 done (or nothing to do), 1 a config file that cannot be edited (malformed,
wrong type, unreadable), 2 a request that makes no sense (unknown agent, a scope the client
does not have). Handlers import the kit lazily, so other commands do not pay for it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of seconds: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    from ssebench.agents.base import DEFAULT_NAME, DEFAULT_TIMEOUT, DEFAULT_URL
    from ssebench.agents.registry import CLIENTS  # plain data: cheap to import at start-up

    names = tuple(CLIENTS)

    agents = sub.add_parser("agents", help="register the ssebench MCP server with an agent / MCP client",
                            description="Register the ssebench MCP server with an agent or MCP client.")
    verbs = agents.add_subparsers(dest="agents_command", metavar="ACTION", required=True)

    def common(p: argparse.ArgumentParser, *, entry: bool) -> None:
        p.add_argument("agent", metavar="AGENT", choices=names, help=" | ".join(names))
        p.add_argument("--name", default=DEFAULT_NAME, help=f"server name in the config (default {DEFAULT_NAME})")
        if entry:
            p.add_argument("--url", default=DEFAULT_URL, help=f"server URL (default {DEFAULT_URL})")
            p.add_argument("--timeout", type=_positive_int, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                           help=f"tool-call timeout written where the client has one (default {DEFAULT_TIMEOUT})")

    def writes(p: argparse.ArgumentParser) -> None:
        p.add_argument("--scope", choices=("user", "project"), default="user",
                       help="user config (default) or the current folder's project config")
        p.add_argument("--file", type=Path, help="edit this file instead of the client's own config")
        p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
        p.add_argument("--json", action="store_true", help="print the result as JSON")

    p = verbs.add_parser("install", help="add or update the server entry")
    common(p, entry=True)
    writes(p)
    p.set_defaults(func=_install)

    p = verbs.add_parser("uninstall", help="remove the server entry")
    common(p, entry=False)
    writes(p)
    p.set_defaults(func=_uninstall)

    p = verbs.add_parser("show", help="print the entry a client needs, for copy-paste")
    common(p, entry=True)
    p.add_argument("--json", action="store_true", help="print only the entry, as JSON")
    p.set_defaults(func=_show)

    p = verbs.add_parser("list", help="clients found here and whether the server is registered")
    p.add_argument("--name", default=DEFAULT_NAME, help=f"server name to look for (default {DEFAULT_NAME})")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_list)

    p = verbs.add_parser("dockerfile", help="print the Dockerfile layer that installs and registers AGENT")
    p.add_argument("agent", metavar="AGENT", help="claude | codex | gemini | opencode")
    p.set_defaults(func=_dockerfile)


def _error(message: str) -> None:
    print(f"ssebench agents: {message}", file=sys.stderr)


def _settings(args: argparse.Namespace):  # noqa: ANN202
    from ssebench.agents.base import Settings

    return Settings(url=args.url, name=args.name, timeout=args.timeout) if hasattr(args, "url") \
        else Settings(name=args.name)


def _run_edit(args: argparse.Namespace, install: bool) -> int:
    from ssebench.agents import actions, files
    from ssebench.agents.base import Env, Scope
    from ssebench.agents.registry import get

    client = get(args.agent)
    settings = _settings(args)
    if client.name == "generic" and args.file is None:
        if not install:
            _error("generic has no config file of its own: give --file PATH")
            return 2
        if args.json:
            print(json.dumps({"entry": client.entry(settings), "notes": client.notes(settings)}, indent=2))
        else:
            print(actions.snippet(client, settings), end="")
            for note in client.notes(settings):
                print(f"Note: {note}", file=sys.stderr)
        return 0
    try:
        action = actions.install if install else actions.uninstall
        outcome = action(client, settings, Scope(args.scope), Env.current(), file=args.file, dry_run=args.dry_run)
    except actions.UsageError as exc:
        _error(str(exc))
        return 2
    except files.ConfigError as exc:
        _error(f"{str(exc).rstrip('.')}. The file was not changed.")
        return 1
    except OSError as exc:
        _error(f"{exc.filename or ''}: {exc.strerror or exc}. The file was not changed.")
        return 1
    if args.json:
        print(json.dumps(outcome.as_json(), indent=2))
        return 0
    change = outcome.change
    assert change is not None
    where = f"{outcome.path} ({client.title}, {outcome.scope.value} scope)"
    if args.dry_run:
        if change.changed:
            print(change.diff(), end="")
        print(f"Dry run: {where} {'would change as shown' if change.changed else 'needs no change'}; "
              "nothing was written.")
    elif install:
        print(f"Registered {settings.name} at {settings.url} in {where}." if change.changed
              else f"{settings.name} is already registered in {where} with these settings; nothing changed.")
    else:
        print(f"Removed {settings.name} from {where}." if change.changed
              else f"{settings.name} is not registered in {where}; nothing changed.")
    for note in outcome.notes:
        print(f"Note: {note}")
    return 0


def _install(args: argparse.Namespace) -> int:
    return _run_edit(args, install=True)


def _uninstall(args: argparse.Namespace) -> int:
    return _run_edit(args, install=False)


def _show(args: argparse.Namespace) -> int:
    from ssebench.agents import render
    from ssebench.agents.registry import get

    client = get(args.agent)
    settings = _settings(args)
    if args.json:
        print(json.dumps({"agent": client.name, "path": list(client.entry_path(settings)),
                          "entry": client.entry(settings), "notes": client.notes(settings)}, indent=2))
    else:
        print(render.show(client, settings), end="")
    return 0


def _list(args: argparse.Namespace) -> int:
    from ssebench.agents import actions
    from ssebench.agents.base import Env, Settings
    from ssebench.agents.registry import CLIENTS

    clients = [c for c in CLIENTS.values() if c.name != "generic"]
    rows = actions.registrations(clients, Settings(name=args.name), Env.current())
    if args.json:
        print(json.dumps([row.as_json() for row in rows], indent=2))
        return 0
    table = [("AGENT", "DETECTED", "SCOPE", "REGISTERED", "URL", "TIMEOUT", "CONFIG")]
    for row in rows:
        if row.error:
            registered = "unreadable"
        else:
            registered = "yes" if row.registered else "no"
        if not row.registered:
            timeout = "-"
        elif row.client.timeout_key is None:
            timeout = "no timeout key"
        elif row.timeout_seconds is None:
            timeout = "not set"
        else:
            timeout = f"{row.timeout_seconds:g} s"
        table.append((row.client.name, "yes" if row.detected else "no", row.scope.value, registered,
                      row.url or "-", timeout, str(row.path) + ("" if row.exists else " (no file)")))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
    for r in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)) + "  " + r[-1])
    for row in rows:
        if row.error:
            _error(row.error)
    return 0


def _dockerfile(args: argparse.Namespace) -> int:
    try:
        from ssebench.container.dockerfile import DockerfileError, render_agent_dockerfile
    except ImportError as exc:
        _error(f"Dockerfile rendering is not available: {exc}")
        return 1
    try:
        text = render_agent_dockerfile(args.agent)
    except DockerfileError as exc:
        _error(str(exc))
        return 2
    print(text, end="" if text.endswith("\n") else "\n")
    return 0
