"""The entrypoint's settings: environment variables, overridden by flags.

Every value is checked before anything starts, so a typo in ``SSE_MCP_TIMEOUT``
costs a second and one clear message, not a half-started container. The table in
docs/container.md lists the same variables and defaults; keep them in step.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MCP_TIMEOUT = 300
DEFAULT_AGENT_TIMEOUT = 3600
DEFAULT_RESULTS_DIR = "/results"
DEFAULT_MCP_HOST = "127.0.0.1"
DEFAULT_MCP_PORT = 3000
DEFAULT_MCP_PATH = "/mcp"


class SettingsError(ValueError):
    """A setting cannot be used; ``str(err)`` names the variable, the value and the rule."""

    exit_code = 2


def whole_seconds(name: str, raw: str) -> int:
    """A positive whole number of seconds written in ASCII digits (``" 300 "`` is fine)."""
    value = raw.strip()
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise SettingsError(f"{name} must be a whole number of seconds (1 or more), got '{raw}'")
    return int(value)


def port_number(name: str, raw: str) -> int:
    value = raw.strip()
    if not (value.isascii() and value.isdigit()) or not 0 < int(value) < 65536:
        raise SettingsError(f"{name} must be a TCP port from 1 to 65535, got '{raw}'")
    return int(value)


@dataclass
class Settings:
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
    prompt: str | None = None  # logged as the dialog's prompt line
    env: dict[str, str] = field(default_factory=dict)  # the environment children inherit

    @property
    def mcp_url(self) -> str:
        return f"http://{self.mcp_host}:{self.mcp_port}{self.mcp_path}"


def from_environment(environ: Mapping[str, str] | None = None, **flags: object) -> Settings:
    """Build settings from *environ* (default ``os.environ``); non-None *flags* win."""
    env = dict(os.environ if environ is None else environ)

    def pick(flag: str, var: str) -> str | None:
        value = flags.get(flag)
        if value is not None:
            return str(value)
        raw = env.get(var)
        return raw if raw not in (None, "") else None

    task = pick("task", "SSE_TASK")
    tree = pick("tree", "SSE_TREE")
    socket = pick("daemon_socket", "SSE_DAEMON_SOCKET")
    # Timeouts: set-but-empty is a mistake too, so read them raw.
    mcp_timeout = str(flags["mcp_timeout"]) if flags.get("mcp_timeout") is not None else env.get("SSE_MCP_TIMEOUT")
    agent_timeout = (str(flags["agent_timeout"]) if flags.get("agent_timeout") is not None
                     else env.get("SSE_AGENT_TIMEOUT"))
    port = pick("mcp_port", "SSE_MCP_PORT")
    path = pick("mcp_path", "SSE_MCP_PATH") or DEFAULT_MCP_PATH
    if not path.startswith("/"):
        raise SettingsError(f"SSE_MCP_PATH must start with '/', got '{path}'")
    dialog = pick("dialog", "SSE_DIALOG")
    if dialog is not None:
        from ssebench.dialog.convert import CONVERTERS

        if dialog not in CONVERTERS:
            raise SettingsError(f"SSE_DIALOG must be one of {', '.join(CONVERTERS)}, got '{dialog}'")
    return Settings(
        task=Path(task).absolute() if task else None,
        tree=Path(tree).absolute() if tree else None,
        results_dir=Path(pick("results_dir", "SSE_RESULTS_DIR") or DEFAULT_RESULTS_DIR).absolute(),
        daemon_socket=Path(socket).absolute() if socket else None,
        mcp_host=pick("mcp_host", "SSE_MCP_HOST") or DEFAULT_MCP_HOST,
        mcp_port=port_number("SSE_MCP_PORT", port) if port is not None else DEFAULT_MCP_PORT,
        mcp_path=path,
        mcp_timeout=(whole_seconds("SSE_MCP_TIMEOUT", mcp_timeout) if mcp_timeout is not None
                     else DEFAULT_MCP_TIMEOUT),
        agent_timeout=(whole_seconds("SSE_AGENT_TIMEOUT", agent_timeout) if agent_timeout is not None
                       else DEFAULT_AGENT_TIMEOUT),
        sidecar=bool(flags.get("sidecar")),
        dialog=dialog,
        prompt=pick("prompt", "SSE_PROMPT"),
        env=env,
    )
