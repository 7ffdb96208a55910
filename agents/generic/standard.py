"""``generic``: the standard ``{"mcpServers": {...}}`` JSON for any other client.

It has no config file of its own: ``show``/``install`` print the snippet, and ``--file PATH``
merges it into a file of that shape with the same safety as every other client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssebench.agents.base import Client, ServerSettings


@dataclass(frozen=True)
class Standard(Client):
    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        return {"type": "http", "url": settings.url}

    def notes(self, settings: ServerSettings) -> list[str]:
        return [
            "There is no standard timeout key: set your client's tool-call timeout to at least "
            f"{settings.timeout} s (a test_patch call is a whole build and test cycle). The server "
            "sends progress notifications while it works; clients that reset their timeout on "
            "progress need no more than that."
        ]


CLIENT = Standard(
    name="generic",
    title="Any MCP client",
    format="json",
    container=("mcpServers",),
    user_path=None,
)
