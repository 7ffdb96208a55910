"""Every client the kit knows, by AGENT name, in the order the docs list them."""

from __future__ import annotations

from ssebench.agents.base import Client
from ssebench.agents.claude.client import CLIENT as CLAUDE
from ssebench.agents.codex.client import CLIENT as CODEX
from ssebench.agents.generic import claude_desktop, gemini, goose, opencode, standard, table, zed

_ORDER = (CLAUDE, CODEX, gemini.CLIENT, opencode.CLIENT, *table.CLIENTS, goose.CLIENT, zed.CLIENT,
          claude_desktop.CLIENT, standard.CLIENT)

CLIENTS: dict[str, Client] = {client.name: client for client in _ORDER}


def get(name: str) -> Client:
    return CLIENTS[name]
