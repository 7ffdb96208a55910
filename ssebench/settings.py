"""Every SSE_* variable (and MCP_LOG_DIR) and the shared defaults, in one table.

Why: the same names and defaults were spelled in many modules; one declarative table
lets a test check the docs (docs/container.md) and keeps reads of ``os.environ`` here
(tests/test_settings_table.py refuses direct reads elsewhere). One parser per kind
(``duration``, ``size``, ``count``, ``whole_seconds``, ``port``, ``host``, ``url_path``,
``path``, ``socket_path``, ``boolean``) gives every value, from a variable or a flag, its
one-line :class:`SettingsError` naming it and the bad value; ``value`` reads and parses
one variable. The entrypoint's checks build on this module in ssebench/container/settings.py.
The parsers live in ssebench/parsers.py (re-exported here); neither module imports
anything else of the project, so every part may import them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ssebench.parsers import (  # noqa: F401  (re-exported: settings.X is the one name callers use)
    MAX_SECONDS,
    UNIX_SOCKET_MAX_BYTES,
    SettingsError,
    boolean,
    count,
    duration,
    host,
    path,
    port,
    shown,
    size,
    socket_path,
    url_path,
    whole_seconds,
)

DEFAULT_MCP_HOST = "127.0.0.1"
DEFAULT_MCP_PORT = 3000
DEFAULT_MCP_PATH = "/mcp"
DEFAULT_MCP_URL = f"http://{DEFAULT_MCP_HOST}:{DEFAULT_MCP_PORT}{DEFAULT_MCP_PATH}"
DEFAULT_BASE_IMAGE = "ssebench-base:bookworm"  # made by the shipped scripts/docker-base-image.sh


@dataclass(frozen=True)
class Variable:
    """One environment variable: what it holds, its default as the docs say it, who reads it."""

    name: str
    kind: str  # size, duration, seconds, int, bool, path, host, port, url-path, url, text, choice
    default: str  # as shown to users; "" when unset means "none"
    help: str
    readers: tuple[str, ...]  # modules that use the value
    parser: str = ""  # the function that checks it (module:function), "" for plain text


_JOBS = ("ssebench.jobs", "ssebench.container")  # who reads the variables ssebench jobs sets for a run
_MARKS = "(marks its processes, labels its containers)"
_GATEWAY_PORT = (
    "set by ssebench jobs for a run through its model gateway ([gateway]): the gateway's port on 127.0.0.1 "
    "(in a container with a network of its own, the entrypoint relays that port to SSE_GATEWAY_SOCKET)"
)
_GATEWAY_SOCKET = (
    "set by ssebench jobs for a Docker run through its model gateway: the run's own Unix socket to the gateway "
    "(the host's path for ssebench run --docker, which mounts it into the agent's container; the container's "
    "path for the entrypoint)"
)
_GATEWAY_TUNNEL = "set by ssebench jobs for a Kubernetes run through its model gateway: its tunnel's port in the Pod"

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
    Variable(
        "SSE_AGENT", "choice", "", "bundled agent whose recipe sets up its HOME at launch", ("ssebench.container",)
    ),
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
        "SSE_MCP_TASK_TTL",
        "duration",
        "1h",
        "how long a finished test_patch task's result is kept (reported as ttlMs)",
        ("server",),
        "ssebench.settings:duration",
    ),
    Variable(
        "SSE_MCP_RESUME_GRACE",
        "duration",
        "2m",
        "how long a call whose 2025-11-25 stream dropped goes on, waiting for the client to resume it",
        ("server",),
        "ssebench.settings:duration",
    ),
    Variable(
        "SSE_MCP_EVENT_MAX_AGE",
        "duration",
        "15m",
        "resumable stream events older than this are dropped",
        ("server",),
        "ssebench.settings:duration",
    ),
    Variable(
        "SSE_MCP_EVENT_MAX_SIZE",
        "size",
        "16M",
        "bytes of resumable stream events kept (oldest dropped first)",
        ("server",),
        "ssebench.settings:size",
    ),
    Variable(
        "SSE_MCP_BEARER_TOKENS",
        "text",
        "",
        "comma-separated bearer tokens the MCP endpoint requires (each one client; unset: no authentication)",
        ("server",),
    ),
    Variable("SSE_JOB_ID", "text", "", "set by ssebench jobs for a run: its job " + _MARKS, _JOBS),
    Variable("SSE_JOB_RUN", "text", "", "set by ssebench jobs for a run: JOB/RUN " + _MARKS, _JOBS),
    Variable(
        "SSE_GATEWAY_LITELLM",
        "path",
        "",
        "the `litellm` command of a job's model gateway ([gateway]; unset: `litellm` on PATH)",
        ("ssebench.jobs",),
        "ssebench.settings:path",
    ),
    Variable("SSE_GATEWAY_PORT", "port", "", _GATEWAY_PORT, _JOBS, "ssebench.settings:port"),
    Variable("SSE_GATEWAY_SOCKET", "path", "", _GATEWAY_SOCKET, _JOBS, "ssebench.settings:socket_path"),
    Variable("SSE_GATEWAY_TUNNEL_PORT", "port", "", _GATEWAY_TUNNEL, _JOBS, "ssebench.settings:port"),
    Variable(
        "MCP_LOG_DIR",
        "path",
        "/tmp/mcp/logs",
        "MCP server log folder",
        ("server", "ssebench.daemon", "ssebench.container"),
        "ssebench.settings:path",
    ),
    Variable(
        "SSEBENCH_BASE_IMAGE",
        "text",
        DEFAULT_BASE_IMAGE,
        "the Docker base image task images are built on (scripts/docker-base-image.sh makes the default)",
        ("ssebench.container", "ssebench.jobs", "ssebench.doctor"),
    ),
    Variable(
        "SSEBENCH_DOCKER_NETWORK",
        "text",
        "host",
        "the agent container's Docker network (`none` for a job's custom command)",
        ("ssebench.container",),
    ),
    Variable(
        "SSEBENCH_DOCKER_DIR",
        "path",
        "/var/lib/ssebench/docker",
        "the private Docker engine's root, socket and log (scripts/docker-engine.sh)",
        ("ssebench.container",),
    ),
    # The local test cluster's (scripts/kube-cluster.sh, kube-build.sh); ssebench jobs hands them on to them.
    *(
        Variable(name, kind, default, f"the local test cluster's {what}", ("scripts", "ssebench.jobs"))
        for name, kind, default, what in (
            ("SSEBENCH_KUBE_DIR", "path", "/var/lib/ssebench/kube", "state: certificates, etcd, admin.kubeconfig"),
            ("SSEBENCH_KUBE_API_PORT", "port", "16443", "API server port on 127.0.0.1"),
            ("SSEBENCH_KUBE_START_TIMEOUT", "seconds", "120", "start-up limit for each of its parts"),
            ("SSEBENCH_KUBE_CACHE", "path", "~/.cache/ssebench/kube", "Kubernetes source, build and binaries"),
        )
    ),
    Variable(
        "SSEBENCH_CACHE",
        "path",
        "$XDG_CACHE_HOME/ssebench",
        "ssebench's cache: agent CLIs, images' wheels, view indexes, install records",
        ("ssebench", "agents"),
    ),
    Variable(
        "SSEBENCH_CHECK_TOKEN",
        "text",
        "",
        "set by the daemon for every check process: the mark it finds that check's processes by",
        ("ssebench.daemon",),
    ),
    # Variables of the system that ssebench reads by name (read here too, for the same reason).
    Variable("XDG_CACHE_HOME", "path", "~/.cache", "the user's cache folder (system)", ("ssebench", "agents")),
    Variable("XDG_RUNTIME_DIR", "path", "", "the user's runtime folder: the daemon's socket (system)", ("ssebench",)),
    Variable("NO_COLOR", "bool", "", "set: no colours in any output (system; no-color.org)", ("ssebench",)),
    Variable("DOCKER_HOST", "text", "", "the Docker engine to use (system; Docker's own)", ("ssebench.container",)),
    Variable("PATH", "text", "", "where programs are found (system)", ("ssebench.daemon",)),
)
BY_NAME: dict[str, Variable] = {v.name: v for v in VARIABLES}


def raw(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The unparsed value of a variable in the table (``None`` when unset); the one read of os.environ."""
    if name not in BY_NAME:
        raise KeyError(f"{name} is not in ssebench.settings.VARIABLES")
    return (os.environ if environ is None else environ).get(name)


T = TypeVar("T")


def text(name: str, environ: Mapping[str, str] | None = None) -> str:
    """A variable's value, or its table default when it is unset or blank (plain text)."""
    got = raw(name, environ)
    return got.strip() if got is not None and got.strip() else BY_NAME[name].default


def cache_dir(*parts: str, environ: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """ssebench's cache folder (``SSEBENCH_CACHE``, else ``$XDG_CACHE_HOME/ssebench``, else
    ``HOME/.cache/ssebench``) joined with *parts*; a relative XDG_CACHE_HOME is ignored (the
    XDG spec), so the cache never depends on the current folder. *environ*/*home*: another
    user's environment (a run's private HOME), default this process's."""
    own = raw("SSEBENCH_CACHE", environ)
    if own:
        return Path(own).joinpath(*parts)
    xdg = raw("XDG_CACHE_HOME", environ) or ""
    base = Path(xdg) if os.path.isabs(xdg) else (home or Path.home()) / ".cache"
    return base.joinpath("ssebench", *parts)


def value(name: str, parse: Callable[[str, str], T], default: T, environ: Mapping[str, str] | None = None) -> T:
    """The variable *name* parsed by *parse* (one of the parsers below); *default* when it
    is unset or blank. Raises :class:`SettingsError`."""
    got = raw(name, environ)
    return default if got is None or not got.strip() else parse(name, got)


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
        "SSE_AGENT",
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
