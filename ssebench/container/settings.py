"""The entrypoint's settings: environment variables, overridden by flags.

Every value is checked before anything starts, so a typo in ``SSE_MCP_TIMEOUT``
costs a second and one clear message, not a half-started container. The table in
docs/container.md lists the same variables and defaults; the table of every
variable and the shared defaults is ssebench/settings.py (tests check the doc against it).
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ssebench.settings import DEFAULT_MCP_HOST, DEFAULT_MCP_PATH, DEFAULT_MCP_PORT

DEFAULT_MCP_TIMEOUT = 300
DEFAULT_AGENT_TIMEOUT = 3600
DEFAULT_RESULTS_DIR = "/results"
MAX_SECONDS = 10**9  # a timeout beyond this is a typo, or "forever" (which is still finite here)
UNIX_SOCKET_MAX_BYTES = 107  # sun_path holds 108 bytes, the last one a NUL
# A host name: dot-separated labels of letters, digits and inner hyphens (RFC 1123).
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
# A URL path: '/' then RFC 3986 path characters, '%' only as a %XX escape.
_URL_PATH = re.compile(r"/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*")


class SettingsError(ValueError):
    """A setting cannot be used; ``str(err)`` names the variable, the value and the rule."""

    exit_code = 2


def shown(raw: str) -> str:
    """A value quoted for a one-line message: control characters escaped, as Python would."""
    return f"'{raw}'" if raw.isprintable() else repr(raw)


def whole_seconds(name: str, raw: str) -> int:
    """A positive whole number of seconds written in ASCII digits (``" 300 "`` is fine)."""
    value = raw.strip()
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise SettingsError(f"{name} must be a whole number of seconds (1 or more), got {shown(raw)}")
    if len(value) > 10 or int(value) > MAX_SECONDS:  # 1e400 s would overflow every clock sum
        raise SettingsError(
            f"{name} must be at most {MAX_SECONDS} seconds (about 31 years), "
            f"got {shown(raw) if len(raw) <= 40 else f'a {len(value)}-digit number'}"
        )
    return int(value)


def port_number(name: str, raw: str) -> int:
    value = raw.strip()
    if not (value.isascii() and value.isdigit()) or not 0 < int(value) < 65536:
        raise SettingsError(f"{name} must be a TCP port from 1 to 65535, got {shown(raw)}")
    return int(value)


def host_name(name: str, raw: str) -> str:
    """An IPv4 or IPv6 address (``[::1]`` or ``::1``) or a host name, without a port.

    Only the form is checked (no DNS lookup at start-up): ``256.1.1.1``, ``[::1`` and
    ``localhost:99`` are refused here instead of failing the server after the daemon started.
    """
    value = raw.strip()
    inner = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    if ":" in inner:
        try:
            if "%" not in inner:  # a zone index (fe80::1%eth0) has no plain URL form
                return str(ipaddress.IPv6Address(inner))
        except ValueError:
            pass
        if "[" not in value and value.count(":") == 1:
            fault = "an address without a port (give the port in SSE_MCP_PORT)"
        else:
            fault = "an IPv4 or IPv6 address or a host name"
        raise SettingsError(f"{name} must be {fault}, got {shown(raw)}")
    labels = inner.rstrip(".").split(".")
    if inner and all(label.isascii() and label.isdigit() for label in labels):
        try:
            return str(ipaddress.IPv4Address(inner))
        except ValueError:
            raise SettingsError(
                f"{name} must be an IPv4 address (four numbers from 0 to 255) or a host name, got {shown(raw)}"
            ) from None
    if inner != value or not inner or len(inner) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise SettingsError(f"{name} must be an IPv4 or IPv6 address or a host name, got {shown(raw)}")
    return inner


def url_path(name: str, raw: str) -> str:
    """The server's path: '/' and URL path characters, nothing to escape or to misread."""
    if not _URL_PATH.fullmatch(raw):
        fault = (
            "must start with '/'"
            if not raw.startswith("/")
            else "must hold only URL path characters (letters, digits, -._~!$&'()*+,;=:@/ and %XX)"
        )
        raise SettingsError(f"{name} {fault}, got {shown(raw)}")
    return raw


def file_path(name: str, raw: str) -> Path:
    """A path setting: no control characters (a NUL cannot reach the OS; a newline in a
    path breaks every log line that names it) and valid UTF-8 (results.json is UTF-8)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise SettingsError(f"{name} must be a path without control characters, got {shown(raw)}")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise SettingsError(f"{name} must be a path in UTF-8, got {raw.encode('utf-8', 'surrogateescape')!r}") from None
    return Path(raw).absolute()


def socket_path(name: str, raw: str) -> Path:
    path = file_path(name, raw)
    size = len(os.fsencode(path))
    if size > UNIX_SOCKET_MAX_BYTES:
        raise SettingsError(
            f"{name} is {size} bytes long; a Unix socket path may have at most "
            f"{UNIX_SOCKET_MAX_BYTES}, got {shown(raw)}"
        )
    return path


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
        host = f"[{self.mcp_host}]" if ":" in self.mcp_host else self.mcp_host
        return f"http://{host}:{self.mcp_port}{self.mcp_path}"


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
    agent_timeout = (
        str(flags["agent_timeout"]) if flags.get("agent_timeout") is not None else env.get("SSE_AGENT_TIMEOUT")
    )
    port = pick("mcp_port", "SSE_MCP_PORT")
    host = pick("mcp_host", "SSE_MCP_HOST")
    dialog = pick("dialog", "SSE_DIALOG")
    if dialog is not None:
        from ssebench.dialog.convert import CONVERTERS

        if dialog not in CONVERTERS:
            raise SettingsError(f"SSE_DIALOG must be one of {', '.join(CONVERTERS)}, got {shown(dialog)}")
    if env.get("MCP_LOG_DIR"):  # read by the server; checked here so it cannot fail half-way
        file_path("MCP_LOG_DIR", env["MCP_LOG_DIR"])
    settings = Settings(
        task=file_path("SSE_TASK", task) if task else None,
        tree=file_path("SSE_TREE", tree) if tree else None,
        results_dir=file_path("SSE_RESULTS_DIR", pick("results_dir", "SSE_RESULTS_DIR") or DEFAULT_RESULTS_DIR),
        daemon_socket=socket_path("SSE_DAEMON_SOCKET", socket) if socket else None,
        mcp_host=host_name("SSE_MCP_HOST", host) if host is not None else DEFAULT_MCP_HOST,
        mcp_port=port_number("SSE_MCP_PORT", port) if port is not None else DEFAULT_MCP_PORT,
        mcp_path=url_path("SSE_MCP_PATH", pick("mcp_path", "SSE_MCP_PATH") or DEFAULT_MCP_PATH),
        mcp_timeout=(whole_seconds("SSE_MCP_TIMEOUT", mcp_timeout) if mcp_timeout is not None else DEFAULT_MCP_TIMEOUT),
        agent_timeout=(
            whole_seconds("SSE_AGENT_TIMEOUT", agent_timeout) if agent_timeout is not None else DEFAULT_AGENT_TIMEOUT
        ),
        sidecar=bool(flags.get("sidecar")),
        dialog=dialog,
        prompt=pick("prompt", "SSE_PROMPT"),
        env=env,
    )
    _check_url(settings.mcp_url)
    return settings


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
