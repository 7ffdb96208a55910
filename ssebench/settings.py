"""Every SSE_* variable (and MCP_LOG_DIR) and the shared defaults, in one table.

Why: the same names and defaults were spelled in many modules; one declarative table
lets a test check the docs (docs/container.md) and keeps reads of ``os.environ`` here
(tests/test_settings_table.py refuses direct reads elsewhere). One parser per kind
(``duration``, ``size``, ``count``, ``whole_seconds``, ``port``, ``host``, ``url_path``,
``path``, ``socket_path``, ``boolean``) gives every value, from a variable or a flag, its
one-line :class:`SettingsError` naming it and the bad value; ``value`` reads and parses
one variable. The entrypoint's checks build on this module in ssebench/container/settings.py.
This module imports nothing of the project, so every part may import it.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

DEFAULT_MCP_HOST = "127.0.0.1"
DEFAULT_MCP_PORT = 3000
DEFAULT_MCP_PATH = "/mcp"
DEFAULT_MCP_URL = f"http://{DEFAULT_MCP_HOST}:{DEFAULT_MCP_PORT}{DEFAULT_MCP_PATH}"


@dataclass(frozen=True)
class Variable:
    """One environment variable: what it holds, its default as the docs say it, who reads it."""

    name: str
    kind: str  # size, duration, seconds, int, bool, path, host, port, url-path, url, text, choice
    default: str  # as shown to users; "" when unset means "none"
    help: str
    readers: tuple[str, ...]  # modules that use the value
    parser: str = ""  # the function that checks it (module:function), "" for plain text


VARIABLES: tuple[Variable, ...] = (
    Variable("SSE_TASK", "path", "", "task folder (task.json)", ("ssebench.container",), "ssebench.settings:path"),
    Variable(
        "SSE_TREE",
        "path",
        "the task's source",
        "source tree to prepare",
        ("ssebench.container", "ssebench.daemon"),
        "ssebench.settings:path",
    ),
    Variable(
        "SSE_TASK_DIR",
        "path",
        "/sse/task",
        "set for a check: the task's support files",
        ("ssebench.daemon", "ssebench.task"),
    ),
    Variable(
        "SSE_RESULTS_DIR",
        "path",
        "/results",
        "where results are written",
        ("ssebench.container",),
        "ssebench.settings:path",
    ),
    Variable(
        "SSE_DAEMON_SOCKET",
        "path",
        "a fresh private folder (entrypoint)",
        "daemon socket",
        ("ssebench.daemon", "ssebench.container", "server"),
        "ssebench.settings:socket_path",
    ),
    Variable(
        "SSE_MCP_HOST", "host", DEFAULT_MCP_HOST, "MCP server host", ("ssebench.container",), "ssebench.settings:host"
    ),
    Variable(
        "SSE_MCP_PORT",
        "port",
        str(DEFAULT_MCP_PORT),
        "MCP server port",
        ("ssebench.container",),
        "ssebench.settings:port",
    ),
    Variable(
        "SSE_MCP_PATH",
        "url-path",
        DEFAULT_MCP_PATH,
        "MCP endpoint path",
        ("ssebench.container",),
        "ssebench.settings:url_path",
    ),
    Variable(
        "SSE_MCP_URL",
        "url",
        DEFAULT_MCP_URL,
        "MCP URL given to the agent (set by the entrypoint)",
        ("ssebench.container", "agents"),
    ),
    Variable(
        "SSE_MCP_TIMEOUT",
        "seconds",
        "300",
        "MCP tool call timeout",
        ("ssebench.container", "agents"),
        "ssebench.settings:whole_seconds",
    ),
    Variable(
        "SSE_AGENT_TIMEOUT",
        "seconds",
        "3600",
        "agent run timeout",
        ("ssebench.container",),
        "ssebench.settings:whole_seconds",
    ),
    Variable("SSE_DIALOG", "choice", "", "agent whose stream becomes dialog.jsonl", ("ssebench.container",)),
    Variable("SSE_PROMPT", "text", "", "prompt logged as the dialog's first line", ("ssebench.container",)),
    Variable("SSE_AGENT_MODEL", "text", "", "model an agent recipe asks for", ("agents",)),
    Variable(
        "SSE_DIFFICULTY",
        "choice",
        "2",
        "difficulty level",
        ("ssebench", "server"),
        "ssebench.difficulty:level_from_env",
    ),
    Variable(
        "SSE_DAEMON_HEARTBEAT",
        "duration",
        "10",
        "daemon heartbeat seconds",
        ("ssebench.daemon",),
        "ssebench.settings:duration",
    ),
    Variable(
        "SSE_DAEMON_LOG_BUDGET",
        "size",
        "256M",
        "bytes of check logs kept",
        ("ssebench.daemon",),
        "ssebench.settings:size",
    ),
    Variable(
        "SSE_OUTPUT_LIMIT", "size", "1G", "bytes of output per check", ("ssebench.daemon",), "ssebench.settings:size"
    ),
    Variable("SSE_MEMORY_LIMIT", "size", "4G", "memory per check", ("ssebench.daemon",), "ssebench.settings:size"),
    Variable("SSE_PIDS_LIMIT", "int", "1024", "processes per check", ("ssebench.daemon",), "ssebench.settings:count"),
    Variable(
        "SSE_SANDBOX_CGROUP",
        "bool",
        "on",
        "'off' (or 0, false, no): watchdog limits even where a cgroup is writable",
        ("ssebench.daemon",),
        "ssebench.settings:boolean",
    ),
    Variable(
        "SSE_NO_SANDBOX",
        "bool",
        "0",
        "1 (or true, yes, on): run checks without bwrap",
        ("ssebench.daemon", "ssebench"),
        "ssebench.settings:boolean",
    ),
    Variable("SSE_SANDBOX_BIND", "path", "", "colon-separated host paths bound read-only", ("ssebench.daemon",)),
    Variable(
        "SSE_SANDBOX_UID",
        "text",
        "65534:65534",
        "UID[:GID] checks run as when the daemon is root",
        ("ssebench.daemon",),
    ),
    Variable("SSE_BWRAP", "path", "", "the bwrap to use (default: the bundled one)", ("ssebench.daemon",)),
    Variable("SSE_POC", "path", "", "set for a check: its proof-of-concept file", ("ssebench.daemon",)),
    Variable(
        "SSE_MCP_SESSION_IDLE",
        "duration",
        "600",
        "idle MCP session lifetime",
        ("server",),
        "ssebench.settings:duration",
    ),
    Variable("SSE_MCP_LOG_MAX_SIZE", "size", "1G", "MCP log retention size", ("server",), "ssebench.settings:size"),
    Variable(
        "SSE_MCP_LOG_MAX_AGE", "duration", "7d", "MCP log retention age", ("server",), "ssebench.settings:duration"
    ),
    Variable(
        "SSE_JOB_ID",
        "text",
        "",
        "set by ssebench jobs for a run: its job (marks its processes, labels its containers)",
        ("ssebench.jobs", "ssebench.container"),
    ),
    Variable(
        "SSE_JOB_RUN",
        "text",
        "",
        "set by ssebench jobs for a run: JOB/RUN (marks its processes, labels its containers)",
        ("ssebench.jobs", "ssebench.container"),
    ),
    Variable(
        "MCP_LOG_DIR",
        "path",
        "/tmp/mcp/logs",
        "MCP server log folder",
        ("server", "ssebench.daemon", "ssebench.container"),
        "ssebench.settings:path",
    ),
)
BY_NAME: dict[str, Variable] = {v.name: v for v in VARIABLES}


def raw(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The unparsed value of a variable in the table (``None`` when unset); the one read of os.environ."""
    if name not in BY_NAME:
        raise KeyError(f"{name} is not in ssebench.settings.VARIABLES")
    return (os.environ if environ is None else environ).get(name)


T = TypeVar("T")


def value(name: str, parse: Callable[[str, str], T], default: T, environ: Mapping[str, str] | None = None) -> T:
    """The variable *name* parsed by *parse* (one of the parsers below); *default* when it
    is unset or blank. Raises :class:`SettingsError`."""
    got = raw(name, environ)
    return default if got is None or not got.strip() else parse(name, got)


# -- the parsers: one per kind; *name* is the variable or the flag the value came from ----

MAX_SECONDS = 10**9  # a timeout beyond this is a typo, or "forever" (which is still finite here)
UNIX_SOCKET_MAX_BYTES = 107  # sun_path holds 108 bytes, the last one a NUL
# A host name: dot-separated labels of letters, digits and inner hyphens (RFC 1123).
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
# A URL path: '/' then RFC 3986 path characters, '%' only as a %XX escape.
_URL_PATH = re.compile(r"/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*")
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_BOOLEANS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


class SettingsError(ValueError):
    """A setting cannot be used; ``str(err)`` names the variable (or flag), the value and the rule."""

    exit_code = 2


def shown(raw: str) -> str:
    """A value quoted for a one-line message: control characters escaped, as Python would."""
    return f"'{raw}'" if raw.isprintable() else repr(raw)


def duration(name: str, raw: str, *, units: bool = True) -> float:
    """A positive number of seconds (``"1.5"``); with *units* also ``"10m"``, ``"2h"``, ``"7d"``."""
    text = raw.strip().lower()
    unit = text[-1:] if units and text[-1:] in _DURATION_UNITS else ""
    try:
        seconds = float(text[: len(text) - len(unit)]) * _DURATION_UNITS.get(unit, 1)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < math.inf:
        rule = "a positive duration (e.g. 600, 10m, 2h, 7d)" if units else "a positive number of seconds"
        raise SettingsError(f"{name} must be {rule}, got {shown(raw)}")
    return seconds


def size(name: str, raw: str) -> int:
    """``"1073741824"``, ``"512M"``, ``"1G"``, ``"512MiB"`` (binary units) → bytes, 1 or more."""
    text = raw.strip().lower().removesuffix("ib").removesuffix("b")
    unit = text[-1:] if text[-1:] in _SIZE_UNITS else ""
    number = text[: len(text) - len(unit)]
    if not (number.isascii() and number.isdigit()) or int(number) < 1:
        raise SettingsError(f"{name} must be a size in bytes (e.g. 1073741824, 512M, 1G), got {shown(raw)}")
    return int(number) * _SIZE_UNITS[unit]


def count(name: str, raw: str) -> int:
    """A whole number, 1 or more, in ASCII digits (``" 64 "`` is fine)."""
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise SettingsError(f"{name} must be a whole number (1 or more), got {shown(raw)}")
    return int(text)


def whole_seconds(name: str, raw: str) -> int:
    """A positive whole number of seconds written in ASCII digits (``" 300 "`` is fine)."""
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise SettingsError(f"{name} must be a whole number of seconds (1 or more), got {shown(raw)}")
    if len(text) > 10 or int(text) > MAX_SECONDS:  # 1e400 s would overflow every clock sum
        raise SettingsError(
            f"{name} must be at most {MAX_SECONDS} seconds (about 31 years), "
            f"got {shown(raw) if len(raw) <= 40 else f'a {len(text)}-digit number'}"
        )
    return int(text)


def port(name: str, raw: str) -> int:
    """A TCP port, 1 to 65535."""
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        raise SettingsError(f"{name} must be a TCP port from 1 to 65535, got {shown(raw)}")
    return int(text)


def host(name: str, raw: str) -> str:
    """An IPv4 or IPv6 address (``[::1]`` or ``::1``) or a host name, without a port.

    Only the form is checked (no DNS lookup at start-up): ``256.1.1.1``, ``[::1`` and
    ``localhost:99`` are refused here instead of failing the server after the daemon started.
    """
    text = raw.strip()
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if ":" in inner:
        try:
            if "%" not in inner:  # a zone index (fe80::1%eth0) has no plain URL form
                return str(ipaddress.IPv6Address(inner))
        except ValueError:
            pass
        if "[" not in text and text.count(":") == 1:
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
    if inner != text or not inner or len(inner) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise SettingsError(f"{name} must be an IPv4 or IPv6 address or a host name, got {shown(raw)}")
    return inner


def url_path(name: str, raw: str) -> str:
    """A URL's path: '/' and URL path characters, nothing to escape or to misread."""
    if not _URL_PATH.fullmatch(raw):
        fault = (
            "must start with '/'"
            if not raw.startswith("/")
            else "must hold only URL path characters (letters, digits, -._~!$&'()*+,;=:@/ and %XX)"
        )
        raise SettingsError(f"{name} {fault}, got {shown(raw)}")
    return raw


def path(name: str, raw: str) -> Path:
    """A path, made absolute: no control characters (a NUL cannot reach the OS; a newline in
    a path breaks every log line that names it) and valid UTF-8 (results.json is UTF-8)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise SettingsError(f"{name} must be a path without control characters, got {shown(raw)}")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise SettingsError(f"{name} must be a path in UTF-8, got {raw.encode('utf-8', 'surrogateescape')!r}") from None
    return Path(raw).absolute()


def socket_path(name: str, raw: str) -> Path:
    """A :func:`path` short enough for a Unix socket."""
    where = path(name, raw)
    length = len(os.fsencode(where))
    if length > UNIX_SOCKET_MAX_BYTES:
        raise SettingsError(
            f"{name} is {length} bytes long; a Unix socket path may have at most "
            f"{UNIX_SOCKET_MAX_BYTES}, got {shown(raw)}"
        )
    return where


def boolean(name: str, raw: str) -> bool:
    """On or off: 1/0, true/false, yes/no, on/off (any case)."""
    got = _BOOLEANS.get(raw.strip().lower())
    if got is None:
        raise SettingsError(f"{name} must be one of 1, 0, true, false, yes, no, on, off, got {shown(raw)}")
    return got


# Variables the entrypoint's own table in docs/container.md covers; the rest are listed,
# generated from VARIABLES by ``doc_rows``, under "Other variables" there.
ENTRYPOINT_VARIABLES = frozenset(
    {
        "SSE_TASK",
        "SSE_TREE",
        "SSE_DIFFICULTY",
        "SSE_RESULTS_DIR",
        "SSE_MCP_TIMEOUT",
        "SSE_AGENT_TIMEOUT",
        "SSE_MCP_HOST",
        "SSE_MCP_PORT",
        "SSE_MCP_PATH",
        "SSE_DAEMON_SOCKET",
        "SSE_DIALOG",
        "SSE_PROMPT",
        "MCP_LOG_DIR",
        "SSE_MCP_URL",
    }
)


def doc_rows() -> list[str]:
    """The Markdown rows of docs/container.md's "Other variables" table (a test compares them)."""
    return [
        f"| `{v.name}` | {f'`{v.default}`' if v.default else 'unset'} | {v.help} ({', '.join(v.readers)}) |"
        for v in VARIABLES
        if v.name not in ENTRYPOINT_VARIABLES
    ]
