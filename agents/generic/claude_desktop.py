"""Claude Desktop: ``claude_desktop_config.json``; it starts stdio servers only, so the entry
runs the ``mcp-remote`` bridge (``npx mcp-remote URL``) to reach the HTTP server."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from ssebench.agents.base import Client, Settings

_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


@dataclass(frozen=True)
class ClaudeDesktop(Client):
    bridged: ClassVar[bool] = True

    def entry(self, settings: Settings) -> dict[str, Any]:
        args = ["-y", "mcp-remote", settings.url]
        parts = urlsplit(settings.url)
        if parts.scheme == "http" and parts.hostname not in _LOCAL_HOSTS:
            args.append("--allow-http")  # mcp-remote refuses plain http beyond localhost otherwise
        return {"command": "npx", "args": args}

    def url_of(self, entry: Mapping[str, Any]) -> str | None:
        args = entry.get("args")
        if isinstance(args, list):
            for arg in args:
                if isinstance(arg, str) and arg.startswith(("http://", "https://")):
                    return arg
        return super().url_of(entry)


CLIENT = ClaudeDesktop(
    name="claude-desktop",
    title="Claude Desktop",
    format="json",
    container=("mcpServers",),
    user_path="{app}/Claude/claude_desktop_config.json",
    timeout_behaviour=(
        "Public reports say Claude Desktop drops a tool result after about 60 s, so a longer "
        "test_patch call may fail there."
    ),
    extra_notes=("The entry runs `npx -y mcp-remote URL`: Node.js must be installed.",),
)
