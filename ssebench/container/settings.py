"""The entrypoint's settings: environment variables, overridden by flags.

Every value is checked before anything starts, so a typo in ``SSE_MCP_TIMEOUT``
costs a second and one clear message, not a half-started container. The table in
docs/container.md lists the same variables and defaults; the table of every
variable and the shared defaults is ssebench/settings.py (tests check the doc against it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ssebench import settings
from ssebench.settings import (
    DEFAULT_MCP_HOST,
    DEFAULT_MCP_PATH,
    DEFAULT_MCP_PORT,
    MAX_SECONDS,
    UNIX_SOCKET_MAX_BYTES,
    SettingsError,
    shown,
)

# The parsers are ssebench.settings' (one per kind); these names are the entrypoint's own.
__all__ = ["MAX_SECONDS", "UNIX_SOCKET_MAX_BYTES", "EntrypointSettings", "SettingsError", "from_environment", "shown"]
DEFAULT_MCP_TIMEOUT = 300
DEFAULT_AGENT_TIMEOUT = 3600
DEFAULT_RESULTS_DIR = "/results"


@dataclass
class EntrypointSettings:
    task: Path | None
    tree: Path | None
    results_dir: Path
    daemon_socket: Path | None
    mcp_host: str = DEFAULT_MCP_HOST
    mcp_port: int = DEFAULT_MCP_PORT
    mcp_path: str = DEFAULT_MCP_PATH
    mcp_timeout: int = DEFAULT_MCP_TIMEOUT
    agent_timeout: int = DEFAULT_AGENT_TIMEOUT
    sidecar: bool = False
    dialog: str | None = None  # the agent whose stream converter writes dialog.jsonl
    agent: str | None = None  # the bundled agent whose recipe's setup runs just before it starts
    prompt: str | None = None  # logged as the dialog's prompt line
    env: dict[str, str] = field(default_factory=dict)  # the environment children inherit

    @property
    def mcp_url(self) -> str:
        host = f"[{self.mcp_host}]" if ":" in self.mcp_host else self.mcp_host
        return f"http://{host}:{self.mcp_port}{self.mcp_path}"


def from_environment(environ: Mapping[str, str] | None = None, **flags: object) -> EntrypointSettings:
    """Build settings from *environ* (default ``os.environ``); non-None *flags* win."""
    env = dict(os.environ if environ is None else environ)  # what the children inherit

    def pick(flag: str, var: str) -> str | None:
        value = flags.get(flag)
        if value is not None:
            return str(value)
        raw = settings.raw(var, env)
        return raw if raw not in (None, "") else None

    def exact(flag: str, var: str) -> str | None:
        """Timeouts: set-but-empty is a mistake too, so they are read raw."""
        return str(flags[flag]) if flags.get(flag) is not None else settings.raw(var, env)

    task, tree = pick("task", "SSE_TASK"), pick("tree", "SSE_TREE")
    socket = pick("daemon_socket", "SSE_DAEMON_SOCKET")
    mcp_timeout, agent_timeout = exact("mcp_timeout", "SSE_MCP_TIMEOUT"), exact("agent_timeout", "SSE_AGENT_TIMEOUT")
    port, host = pick("mcp_port", "SSE_MCP_PORT"), pick("mcp_host", "SSE_MCP_HOST")
    dialog = pick("dialog", "SSE_DIALOG")
    if dialog is not None:
        from ssebench.dialog.convert import CONVERTERS

        if dialog not in CONVERTERS:
            raise SettingsError(f"SSE_DIALOG must be one of {', '.join(CONVERTERS)}, got {shown(dialog)}")
    agent = pick("agent", "SSE_AGENT")
    if agent is not None:
        from ssebench.agents.registry import names

        if agent not in names():
            raise SettingsError(f"SSE_AGENT must be one of {', '.join(names())}, got {shown(agent)}")
    log_dir = settings.raw("MCP_LOG_DIR", env)
    if log_dir:  # read by the server; checked here so it cannot fail half-way
        settings.path("MCP_LOG_DIR", log_dir)
    result = EntrypointSettings(
        task=settings.path("SSE_TASK", task) if task else None,
        tree=settings.path("SSE_TREE", tree) if tree else None,
        results_dir=settings.path("SSE_RESULTS_DIR", pick("results_dir", "SSE_RESULTS_DIR") or DEFAULT_RESULTS_DIR),
        daemon_socket=settings.socket_path("SSE_DAEMON_SOCKET", socket) if socket else None,
        mcp_host=settings.host("SSE_MCP_HOST", host) if host is not None else DEFAULT_MCP_HOST,
        mcp_port=settings.port("SSE_MCP_PORT", port) if port is not None else DEFAULT_MCP_PORT,
        mcp_path=settings.url_path("SSE_MCP_PATH", pick("mcp_path", "SSE_MCP_PATH") or DEFAULT_MCP_PATH),
        mcp_timeout=_seconds("SSE_MCP_TIMEOUT", mcp_timeout, DEFAULT_MCP_TIMEOUT),
        agent_timeout=_seconds("SSE_AGENT_TIMEOUT", agent_timeout, DEFAULT_AGENT_TIMEOUT),
        sidecar=bool(flags.get("sidecar")),
        dialog=dialog,
        agent=agent,
        prompt=pick("prompt", "SSE_PROMPT"),
        env=env,
    )
    _check_url(result.mcp_url)
    return result


def _seconds(name: str, raw: str | None, default: int) -> int:
    return settings.whole_seconds(name, raw) if raw is not None else default


def _check_url(url: str) -> None:
    """The composed URL must read back as itself: what the agent is given is what we serve."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise SettingsError(
            f"SSE_MCP_HOST, SSE_MCP_PORT and SSE_MCP_PATH do not make a URL: {shown(url)} ({exc})"
        ) from None
    if parts.geturl() != url or parts.query or parts.fragment:
        raise SettingsError(f"SSE_MCP_HOST, SSE_MCP_PORT and SSE_MCP_PATH do not make a URL: {shown(url)}")
