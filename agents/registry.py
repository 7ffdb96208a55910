"""Every agent and client the kit knows, by AGENT name, in the order the docs list them.

``AGENTS`` holds the records of the agents ``ssebench run`` can launch (agents/agent.py: one
module each, one line each below), ``CLIENTS`` every client ``ssebench agents`` can register
the server with: the launchable agents' clients first, then the register-only ones
(agents/generic/: rows of data, and short modules where a client needs code). Every list of agents
(argparse choices, help texts, the Docker layers, the dialog converters, doctor's checks)
reads these at the time it is made, so one :func:`register` call adds an agent everywhere.
"""

from __future__ import annotations

from ssebench.agents import (
    claude,
    cline,
    code_puppy,
    codex,
    continue_cli,
    copilot,
    droid,
    fast_agent,
    gemini,
    gptme,
    hermes,
    kilo,
    kimi_cli,
    kimi_code,
    mastracode,
    mistral_vibe,
    nanocoder,
    opencode,
    pi,
    qwen,
)
from ssebench.agents.agent import Agent
from ssebench.agents.base import Client
from ssebench.agents.generic import bridged, rows, standard, table, zed

_BUNDLED: tuple[Agent, ...] = (
    claude.AGENT,
    codex.AGENT,
    gemini.AGENT,
    opencode.AGENT,
    qwen.AGENT,
    continue_cli.AGENT,
    kilo.AGENT,
    cline.AGENT,
    copilot.AGENT,
    nanocoder.AGENT,
    pi.AGENT,
    kimi_code.AGENT,
    hermes.AGENT,
    gptme.AGENT,
    mastracode.AGENT,
    droid.AGENT,
    mistral_vibe.AGENT,
    fast_agent.AGENT,
    code_puppy.AGENT,
    kimi_cli.AGENT,
)
_REGISTER_ONLY: tuple[Client, ...] = (
    *table.CLIENTS,
    table.GOOSE,
    zed.CLIENT,
    bridged.CLAUDE_DESKTOP,
    *rows.CLIENTS,
    *bridged.CLIENTS,
    standard.CLIENT,
)

AGENTS: dict[str, Agent] = {}
CLIENTS: dict[str, Client] = {}


def _rebuild() -> None:
    """Refill CLIENTS in place (modules hold references to it): agents first, then the rest."""
    CLIENTS.clear()
    CLIENTS.update((agent.name, agent.client) for agent in AGENTS.values())
    CLIENTS.update((client.name, client) for client in _REGISTER_ONLY)


def register(agent: Agent) -> None:
    """Add an agent (after the bundled ones); ValueError when its name is already taken."""
    if agent.name in AGENTS or any(client.name == agent.name for client in _REGISTER_ONLY):
        raise ValueError(f"an agent or client named {agent.name!r} is already registered")
    AGENTS[agent.name] = agent
    _rebuild()


def unregister(name: str) -> None:
    """Take back what :func:`register` added (bundled agents stay)."""
    if name in AGENTS and AGENTS[name] not in _BUNDLED:
        del AGENTS[name]
        _rebuild()


def names() -> tuple[str, ...]:
    """The agents ``ssebench run --agent`` can launch, in order."""
    return tuple(AGENTS)


def agent(name: str) -> Agent:
    """The record of a launchable agent; ValueError naming the known ones otherwise."""
    try:
        return AGENTS[name]
    except KeyError:
        raise ValueError(f"no run recipe for agent {name!r}; ssebench can run: {', '.join(AGENTS)}") from None


def get(name: str) -> Client:
    return CLIENTS[name]


def config_vars() -> tuple[str, ...]:
    """Variables that would point an agent's CLI at the user's own config, not the run's HOME."""
    return tuple(var for record in AGENTS.values() for var in record.config_vars)


AGENTS.update((record.name, record) for record in _BUNDLED)
_rebuild()
