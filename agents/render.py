"""The human-facing texts, from the jinja2 templates in configs/: what `show` prints, the
clients table in docs/adding-an-agent.md and the agents table in the README."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ssebench.agents import actions
from ssebench.agents.base import Client, Scope, ServerSettings, Unit

if TYPE_CHECKING:
    from ssebench.agents.agent import Agent


def configs_dir() -> Path:
    """configs/ of a source checkout, or ssebench/configs inside an installed wheel."""
    from ssebench.resources import data_dir

    return data_dir("configs")


def _env():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(configs_dir())),
        keep_trailing_newline=True,
        trim_blocks=True,
        autoescape=False,  # plain text and Markdown, never HTML
        undefined=jinja2.StrictUndefined,
    )


def show(client: Client, settings: ServerSettings) -> str:
    return (
        _env()
        .get_template("show.txt.j2")
        .render(
            client=client,
            settings=settings,
            user_path=client.describe_path(Scope.USER),
            project_path=client.describe_path(Scope.PROJECT),
            snippet=actions.snippet(client, settings).rstrip("\n"),
            notes=client.notes(settings),
        )
    )


def timeout_cell(client: Client, settings: ServerSettings) -> str:
    if client.timeout_key is None:
        return "no timeout key"
    unit = "ms" if client.timeout_unit is Unit.MILLISECONDS else "s"
    return f"`{client.timeout_key}` in {unit} (writes {client.timeout_value(settings.timeout)})"


def clients_table(clients: list[Client], settings: ServerSettings, *, readme: bool = False) -> str:
    """docs/adding-an-agent.md's table (paths, entry key) or, with ``readme``, the README's
    (how each client reaches the server and what its timeout does)."""
    rows = [
        {
            "name": c.name,
            "title": c.title,
            "user_path": c.describe_path(Scope.USER),
            "project_path": c.describe_path(Scope.PROJECT),
            "entry_key": ".".join(c.entry_path(settings)),
            "timeout": timeout_cell(c, settings),
            "transport": "stdio bridge (`npx mcp-remote`)" if c.bridged else "Streamable HTTP",
            "behaviour": c.timeout_behaviour or "No standard key: set the client's own timeout by hand.",
        }
        for c in clients
    ]
    return _env().get_template("clients-table.md.j2").render(rows=rows, readme=readme)


def agents_table(records: list[Agent]) -> str:
    """The README's table of the agents ``ssebench run --agent`` launches, from their records."""
    lines = [
        "| Agent | Model API variables (one key is needed) | CLI (npm package at the pinned version) "
        "| A long test_patch call |",
        "|---|---|---|---|",
    ]
    lines += [f"| {r.name} | {r.model_vars} | `{r.package}` | {_long_call(r.client)} |" for r in records]
    return "\n".join(lines) + "\n"


def _long_call(client: Client) -> str:
    """The README's cell: the timeout ``agents install`` writes, then how the client waits."""
    if client.timeout_key is None:
        return client.timeout_behaviour
    unit = "ms" if client.timeout_unit is Unit.MILLISECONDS else "s"
    value = client.timeout_value(ServerSettings().timeout)
    return f"`{client.timeout_key}` = {value} {unit} (agents install); {client.timeout_behaviour}"
