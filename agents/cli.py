"""``ssebench agents install|uninstall|list|show|dockerfile``: register the test_patch server
with an MCP client.

Exit status: 0 done (or nothing to do), 1 a config file that cannot be edited (malformed,
wrong type, unreadable), 2 a request that makes no sense (unknown agent, a scope the client
does not have, a bad ``--url``, no AGENT and no ``--all``). ``install``/``uninstall`` take
several agents (each in turn; the worst status wins) or ``--all``. This module only parses and
prints: what the commands do is ``agents/actions.py``, and what an install did is recorded by
``agents/installs.py`` (so ``list`` does not take what it created for an installed client and
``uninstall`` removes it). Handlers import the kit lazily, so other commands do not pay for it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ssebench.choices import invalid_choice


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of seconds: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


class _OneOf:
    """An argparse type for one of *choices* (``choices`` is read by ``ssebench completion``)."""

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices
        self.__name__ = "agent"

    def __call__(self, text: str) -> str:
        if text not in self.choices:
            raise argparse.ArgumentTypeError(invalid_choice(text, self.choices))
        return text


def register(sub: argparse._SubParsersAction) -> None:
    from ssebench.agents.base import DEFAULT_NAME
    from ssebench.agents.registry import AGENTS, CLIENTS  # plain data: cheap to import at start-up

    names, launchable = tuple(CLIENTS), tuple(AGENTS)

    agents = sub.add_parser(
        "agents",
        help="register the ssebench MCP server with an agent / MCP client",
        description="Register the ssebench MCP server with an agent or MCP client.",
    )
    verbs = agents.add_subparsers(dest="agents_command", metavar="COMMAND", required=True)

    p = verbs.add_parser("install", help="add or update the server entry (several agents, or --all)")
    _common(p, names, entry=True, several=True)
    _writes(p)
    p.set_defaults(func=_install)

    p = verbs.add_parser("uninstall", help="remove the server entry, and files and folders ssebench created")
    _common(p, names, entry=False, several=True)
    _writes(p)
    p.set_defaults(func=_uninstall)

    p = verbs.add_parser("show", help="print the entry a client needs, for copy-paste")
    _common(p, names, entry=True)
    p.add_argument("--json", action="store_true", help="print only the entry, as JSON")
    p.set_defaults(func=_show)

    p = verbs.add_parser("list", help="clients found here and whether the server is registered")
    p.add_argument("--name", default=DEFAULT_NAME, help=f"server name to look for (default {DEFAULT_NAME})")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_list)

    p = verbs.add_parser("dockerfile", help="print the Dockerfile layer that installs and registers AGENT")
    p.add_argument("agent", metavar="AGENT", help=" | ".join(launchable))
    p.set_defaults(func=_dockerfile)


def _common(p: argparse.ArgumentParser, names: tuple[str, ...], *, entry: bool, several: bool = False) -> None:
    """The agent argument(s), ``--name``, and for an entry ``--url`` and ``--timeout``."""
    from ssebench.agents.base import DEFAULT_NAME, DEFAULT_TIMEOUT, DEFAULT_URL

    if several:
        # Not choices=: with nargs="*" Python 3.11 checks the empty default against them.
        p.add_argument(
            "agent", metavar="AGENT", nargs="*", type=_OneOf(names), help=" | ".join(names) + " (one or more)"
        )
        p.add_argument(
            "--all",
            action="store_true",
            help="every agent detected here (client binary on PATH or its config "
            "present, not counting what ssebench created)",
        )
    else:
        p.add_argument("agent", metavar="AGENT", choices=names, help=" | ".join(names))
    p.add_argument(
        "--name",
        default=DEFAULT_NAME,
        help=f"server name in the config: letters, digits, '-' or '_' (default {DEFAULT_NAME})",
    )
    if entry:
        p.add_argument("--url", default=DEFAULT_URL, help=f"server URL (default {DEFAULT_URL})")
        p.add_argument(
            "--timeout",
            type=_positive_int,
            default=DEFAULT_TIMEOUT,
            metavar="SECONDS",
            help=f"tool-call timeout written where the client has one (default {DEFAULT_TIMEOUT})",
        )


def _writes(p: argparse.ArgumentParser) -> None:
    """The options of the commands that edit a config."""
    p.add_argument(
        "--scope",
        choices=("user", "project"),
        default="user",
        help="user config (default) or the current folder's project config",
    )
    p.add_argument("--file", type=Path, help="edit this file instead of the client's own config")
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _error(message: str) -> None:
    from ssebench import ui

    ui.echo(("ssebench agents:", "fail"), f" {message}", stream=sys.stderr)


def _bad_entry(args: argparse.Namespace) -> bool:
    """A ``--url`` or ``--name`` no entry can have: said in one line (nothing is written)."""
    from ssebench.agents import actions

    for flag, value, problem in (
        ("--url", args.url, actions.check_url(args.url)),
        ("--name", args.name, actions.check_name(args.name)),
    ):
        if problem is not None:
            _error(f"{flag} {value!r} {problem}")
            return True
    return False


def _settings(args: argparse.Namespace):
    from ssebench.agents.base import ServerSettings

    return (
        ServerSettings(url=args.url, name=args.name, timeout=args.timeout)
        if hasattr(args, "url")
        else ServerSettings(name=args.name)
    )


def _several(args: argparse.Namespace, install: bool) -> int:
    """install/uninstall for AGENT... or --all: each agent in turn, the worst status wins."""
    from ssebench.agents import actions
    from ssebench.agents.base import Env

    if install and _bad_entry(args):
        return 2
    env = Env.current()
    names = list(dict.fromkeys(args.agent))  # in order, once each
    if args.all and names:
        _error("give AGENT names or --all, not both")
        return 2
    if args.all:
        names = actions.detected(env) if install else actions.registered(env, args.name, args.scope)
        if not names:
            if args.json:
                print("[]")
            else:
                print(
                    "No agent detected here; nothing to do."
                    if install
                    else f"{args.name} is not registered with any agent ({args.scope} scope); nothing to do."
                )
            return 0
    elif not names:
        _error(f"name at least one AGENT to {'install' if install else 'uninstall'}, or give --all")
        return 2
    if args.file is not None and len(names) > 1:
        _error("--file names one file: give one AGENT with it")
        return 2
    statuses, outputs = [], []
    for name in names:
        status, data = _run_edit(args, name, install, env)
        statuses.append(status)
        if data is not None:
            outputs.append(data)
    if args.json and outputs:
        one = len(names) == 1 and not args.all
        print(json.dumps(outputs[0] if one else outputs, indent=2))
    return max(statuses)


def _run_edit(args: argparse.Namespace, name: str, install: bool, env) -> tuple[int, dict | None]:
    """One agent; prints its lines (or returns its JSON object when --json)."""
    from ssebench import ui
    from ssebench.agents import actions
    from ssebench.agents.base import Scope
    from ssebench.agents.registry import get

    client = get(name)
    settings = _settings(args)
    if client.user_path is None and client.project_path is None and args.file is None:
        return _generic(args, client, settings, install)
    action = actions.install if install else actions.uninstall
    try:
        edit = actions.edit_entry(
            action, client, settings, Scope(args.scope), env, file=args.file, dry_run=args.dry_run
        )
    except actions.EntryError as exc:
        _error(str(exc))
        return exc.status, None
    if args.json:
        data = edit.as_json()
        if not install:
            data["removed"] = [str(p) for p in edit.removed]
        return 0, data
    if edit.dry_run and edit.change is not None and edit.change.changed:
        print(edit.change.diff(), end="")
    for line in actions.report(edit, install):
        ui.echo(*line)
    return 0, None


def _generic(args: argparse.Namespace, client, settings, install: bool) -> tuple[int, dict | None]:
    """``generic`` (or ``warp``) without ``--file``: print the entry (no config file of its own)."""
    from ssebench.agents import actions

    if not install:
        _error(f"{client.name} has no config file of its own: give --file PATH")
        return 2, None
    if args.json:
        return 0, {"entry": client.entry(settings), "notes": client.notes(settings)}
    print(actions.snippet(client, settings), end="")
    for note in client.notes(settings):
        print(f"Note: {note}", file=sys.stderr)
    return 0, None


def _install(args: argparse.Namespace) -> int:
    return _several(args, install=True)


def _uninstall(args: argparse.Namespace) -> int:
    return _several(args, install=False)


def _show(args: argparse.Namespace) -> int:
    from ssebench.agents import render
    from ssebench.agents.registry import get

    if _bad_entry(args):
        return 2
    client = get(args.agent)
    settings = _settings(args)
    if args.json:
        print(
            json.dumps(
                {
                    "agent": client.name,
                    "path": list(client.entry_path(settings)),
                    "entry": client.entry(settings),
                    "notes": client.notes(settings),
                },
                indent=2,
            )
        )
    else:
        print(render.show(client, settings), end="")
    return 0


def _list(args: argparse.Namespace) -> int:
    from ssebench.agents import actions, installs
    from ssebench.agents.base import Env, ServerSettings

    env = Env.current()
    record = installs.load(env)
    clients = actions.clients()
    rows = actions.registrations(clients, ServerSettings(name=args.name), env)
    found = {c.name: (installs.installed(c, env), installs.config_present(c, env, record)) for c in clients}
    if args.json:
        out = []
        for row in rows:
            installed, present = found[row.client.name]
            data = row.as_json()
            data.update(
                installed=installed,
                config_present=present,
                created_by_ssebench=row.exists and record.ours_only(row.path),
            )
            out.append(data)
        print(json.dumps(out, indent=2))
        return 0
    from ssebench.agents.listing import print_table

    print_table(rows, found, record)
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
        from ssebench.agents.registry import AGENTS, CLIENTS
        from ssebench.choices import closest

        # a client without a layer (vscode) is no typo of an agent
        best = None if args.agent in CLIENTS else closest(args.agent, AGENTS)
        _error(str(exc) + ("" if best is None else f"; maybe you meant {best!r}?"))
        return 2
    print(text, end="" if text.endswith("\n") else "\n")
    return 0
