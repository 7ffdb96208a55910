"""``ssebench doctor``: is this machine ready to run ssebench, and if not, what to do.

One line per part a run depends on, each with a fix where there is one: Python, Node,
each bundled agent CLI against its pin (configs/agent-clis/package.json) and its model
API variables, the server's port, the Docker engine and base image, the check sandbox,
and every client registered with ``ssebench agents install`` — whether its URL reaches a
running ssebench server (a real MCP ``initialize`` with a short timeout); last, where the
bundled demo job is (inside the package, for a wheel).

Three states: ``ok``; ``warn`` for an optional part that is missing (a CLI not
installed, no Docker engine, a registered URL nothing serves right now); ``fail`` for
what stops a run (a CLI at another version than the pin, the port taken by something
else, no sandbox, a config file that cannot be read). Exit 1 when anything fails,
else 0. Every check is bounded by a short timeout, so doctor answers in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from ssebench import settings
from ssebench.settings import DEFAULT_MCP_HOST, DEFAULT_MCP_PATH, DEFAULT_MCP_PORT

OK, WARN, FAIL = "ok", "warn", "fail"
DEFAULT_PORT = DEFAULT_MCP_PORT
NODE_MAJOR = 20
PROBE_TIMEOUT = 2.0  # seconds for one MCP initialize
COMMAND_TIMEOUT = 20.0  # seconds for `node --version`, `docker version`


@dataclass
class Finding:
    """One check's result: what was checked, its state, what was found, how to fix it."""

    check: str
    status: str
    detail: str
    fix: str = ""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="check this machine: Python, Node, agent CLIs, port, Docker, sandbox, registered clients",
        description="Check what ssebench needs on this machine and say what to fix. "
        "Exit status 1 when a check fails, 0 otherwise (warnings included).",
    )
    p.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        metavar="N",
        help=f"the MCP server's port to check (default {DEFAULT_PORT})",
    )
    p.add_argument("--name", default="ssebench", help="the server's name in the clients' configs (default ssebench)")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(func=_doctor)


def run_checks(port: int = DEFAULT_PORT, name: str = "ssebench", env: Mapping[str, str] | None = None) -> list[Finding]:
    """Every check, in the order printed."""
    env = dict(os.environ if env is None else env)
    findings = [check_python(), check_node(env)]
    findings += check_agent_clis(env)
    findings.append(check_port(port))
    findings += check_docker()
    findings.append(check_sandbox(env))
    findings.append(check_build_trace(env))
    findings += check_registrations(name)
    findings.append(check_examples())
    return findings


# -- the checks ---------------------------------------------------------------------------------


def check_python() -> Finding:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info < (3, 11):  # noqa: UP036 - doctor reports an old interpreter, it does not assume one
        return Finding("python", FAIL, f"{version} at {sys.executable}", "ssebench needs Python 3.11 or newer")
    return Finding("python", OK, f"{version} at {sys.executable}")


def check_node(env: Mapping[str, str]) -> Finding:
    found = shutil.which("node", path=env.get("PATH", os.defpath))
    fix = f"install Node {NODE_MAJOR} or newer (the agent CLIs and Docker agent layers need it)"
    if found is None:
        return Finding("node", WARN, "not found on PATH", fix)
    version = _output([found, "--version"])
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        return Finding("node", FAIL, f"{found} --version printed {version!r}", fix)
    if major < NODE_MAJOR:
        return Finding("node", FAIL, f"{version} at {found}", fix)
    return Finding("node", OK, f"{version} at {found}")


def check_agent_clis(env: Mapping[str, str]) -> list[Finding]:
    """Each bundled agent's CLI against its pin, and its model API variables."""
    from ssebench.agents import runtime
    from ssebench.agents.recipe import installed_version, model_api_problems
    from ssebench.agents.registry import AGENTS
    from ssebench.resources import PinError

    findings = []
    for agent, record in AGENTS.items():
        try:
            pin = record.pin()
        except PinError as error:
            findings.append(Finding(agent, FAIL, str(error)))
            continue
        install = record.install_hint()
        found = shutil.which(record.binary, path=env.get("PATH", os.defpath))
        if found is None:
            findings.append(Finding(agent, WARN, f"not installed ({record.binary} is not on PATH)", install))
            continue
        version = installed_version(record, Path(found))
        if version != pin:
            findings.append(
                Finding(agent, FAIL, f"{found} is version {version or 'unknown'}, ssebench runs {pin}", install)
            )
            continue
        node = runtime.node_problem(record, env)
        if node:
            findings.append(Finding(agent, FAIL, f"{version} (pinned) at {found}; {node}", runtime.fix(record)))
            continue
        problems = model_api_problems(record, env)
        if problems:
            findings.append(
                Finding(
                    agent,
                    WARN,
                    f"{version} (pinned) at {found}; " + "; ".join(problems),
                    "ssebench run --agent " + agent + " needs it",
                )
            )
        else:
            on_node = runtime.node_note(record, env)
            findings.append(Finding(agent, OK, f"{version} (pinned) at {found}; model API variables set{on_node}"))
    return findings


def check_port(port: int) -> Finding:
    """Free, or held by a running ssebench server; anything else would stop `ssebench up`."""
    label = f"port {port}"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            probe.bind(("127.0.0.1", port))
            return Finding(label, OK, "free on 127.0.0.1")
        except OSError:
            pass
    owner = port_owner(port)
    by = f" (by PID {owner})" if owner else ""
    if mcp_server_name(f"http://{DEFAULT_MCP_HOST}:{port}{DEFAULT_MCP_PATH}") == "ssebench":
        return Finding(label, OK, f"in use by a running ssebench server{by}")
    return Finding(label, FAIL, f"port {port} is in use{by}", "stop that program, or serve on another port with --port")


def check_docker() -> list[Finding]:
    """The engine `run --docker` would use, and the offline base image it builds on."""
    from ssebench.container.docker import DockerEngine, DockerRunError
    from ssebench.resources import script

    try:
        engine = DockerEngine.locate()
    except DockerRunError as error:
        return [
            Finding(
                "docker",
                WARN,
                str(error).split(";")[0],
                "only `ssebench run --docker` needs it: "
                f"{script('docker-engine.sh')} install && {script('docker-engine.sh')} start",
            )
        ]
    server = engine.docker("version", "--format", "{{.Server.Version}}", timeout=COMMAND_TIMEOUT).stdout.strip()
    found = [Finding("docker", OK, f"engine {server} at {engine.host}")]
    base = settings.text("SSEBENCH_BASE_IMAGE")
    if engine.has_image(base):
        found.append(Finding("base image", OK, base))
    else:
        found.append(
            Finding(
                "base image",
                WARN,
                f"{base} is not in the engine",
                f"build it with {script('docker-base-image.sh')} (offline, from Debian's packages)",
            )
        )
    return found


def check_sandbox(env: Mapping[str, str]) -> Finding:
    """The daemon runs every check in bubblewrap and refuses to start without it."""
    ok, detail = sandbox_probe(env)
    if ok:
        return Finding("sandbox", OK, detail)
    return Finding("sandbox", FAIL, detail, "see docs/security.md")


def check_build_trace(env: Mapping[str, str]) -> Finding:
    """The daemon reuses a build only where strace's trace shows it equals a clean one."""
    strace = shutil.which("strace", path=env.get("PATH", os.defpath))
    if strace is None:
        return Finding(
            "build trace",
            WARN,
            "no strace: every build in the daemon is clean (slower)",
            "install strace (Debian: apt-get install strace)",
        )
    version = _output([strace, "-V"]).split()
    return Finding(
        "build trace",
        OK,
        f"strace {version[3] if len(version) > 3 else '?'} at {strace}: "
        "incremental builds are checked against a clean build",
    )


def sandbox_probe(env: Mapping[str, str]) -> tuple[bool, str]:
    """(works, what): the daemon's own probe (ssebench.daemon.sandbox_setup.detect)."""
    from ssebench.daemon import sandbox, sandbox_setup

    try:
        box = sandbox_setup.detect(environ=env)
    except sandbox.SandboxUnavailable as error:
        return False, str(error)
    if not box.enabled:
        return True, "off (SSE_NO_SANDBOX is set): checks run without a sandbox"
    return True, f"bubblewrap {box.version} at {box.bwrap} works here"


def check_registrations(name: str) -> list[Finding]:
    """Each client config holding the server: readable, and whether its URL answers."""
    from ssebench.agents import actions
    from ssebench.agents.base import Env, ServerSettings
    from ssebench.agents.registry import CLIENTS

    findings = []
    rows = actions.registrations(list(CLIENTS.values()), ServerSettings(name=name), Env.current())
    for row in rows:
        label = f"{row.client.name} config"
        if row.error:
            fix = "fix the file, or re-register with ssebench agents install"
            findings.append(Finding(label, FAIL, row.error, fix))
            continue
        if not row.registered:
            continue
        where = f"{row.path} ({row.scope.value} scope)"
        if not row.url:
            findings.append(Finding(label, WARN, f"{where}: the {name} entry has no URL"))
            continue
        server = mcp_server_name(row.url)
        if server == "ssebench":
            findings.append(Finding(label, OK, f"{where}: {row.url} reaches a running ssebench server"))
        elif server is not None:
            findings.append(Finding(label, WARN, f"{where}: {row.url} answers as {server!r}, not ssebench"))
        else:
            fix = "start one: ssebench up --task FILE (the agent cannot call test_patch until then)"
            findings.append(Finding(label, WARN, f"{where}: no server answers at {row.url}", fix))
    if not any(f.check.endswith(" config") for f in findings):
        findings.append(Finding("clients", WARN, f"no client has the {name} server registered", _install_hint()))
    return findings


def check_examples() -> Finding:
    """The bundled demo task and job: a wheel keeps them inside the package, so say where."""
    from ssebench.resources import demo_job

    job = demo_job()
    return Finding("examples", OK if job.is_file() else WARN, f"the demo job: ssebench jobs run {job}")


def _install_hint() -> str:
    """``ssebench agents install claude (or codex, gemini, ...)``, from the registered agents."""
    from ssebench.agents.registry import names

    first, *others = names()
    return f"ssebench agents install {first} (or {', '.join(others[:2])}, ...)"


# -- probes ---------------------------------------------------------------------------------


def mcp_server_name(url: str, timeout: float = PROBE_TIMEOUT) -> str | None:
    """The serverInfo name of the MCP server at URL (Streamable HTTP ``initialize``), or None.

    The session it opens is closed again (DELETE), so a probe leaves nothing on the server.
    """
    import httpx

    from ssebench import __version__

    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "ssebench-doctor", "version": __version__},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    try:
        with httpx.Client(timeout=timeout, trust_env=False) as client:
            reply = client.post(url, json=request, headers=headers)
            session = reply.headers.get("mcp-session-id")
            if session:
                client.delete(url, headers={"mcp-session-id": session})
    except (httpx.HTTPError, ValueError):
        return None
    if reply.status_code != 200:
        return None
    message = _first_json(reply.text, reply.headers.get("content-type", ""))
    info = (message.get("result") or {}).get("serverInfo") if isinstance(message, dict) else None
    return str(info.get("name")) if isinstance(info, dict) and info.get("name") else None


def _first_json(body: str, content_type: str) -> object:
    """A JSON-RPC reply, sent as plain JSON or as the first SSE ``data:`` event."""
    texts = (
        [body]
        if "json" in content_type
        else [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
    )
    for text in texts:
        try:
            return json.loads(text)
        except ValueError:
            continue
    return None


def port_owner(port: int) -> int | None:
    """The PID listening on PORT, when this user may see it."""
    import psutil

    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
                return conn.pid
    except (psutil.Error, OSError):
        return None
    return None


def _output(argv: list[str]) -> str:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False, stdin=subprocess.DEVNULL
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


# -- output ---------------------------------------------------------------------------------


def _doctor(args: argparse.Namespace) -> int:
    findings = run_checks(args.port, args.name)
    failed = [f for f in findings if f.status == FAIL]
    if args.json:
        print(json.dumps({"ok": not failed, "checks": [asdict(f) for f in findings]}, indent=2))
    else:
        print_findings(findings)
    return 1 if failed else 0


def print_findings(findings: list[Finding], echo: Callable[..., None] | None = None) -> None:
    """One line per check (state, check, what was found), the fix indented under it."""
    from ssebench import ui

    echo = echo or ui.echo
    width = max(len(f.check) for f in findings)
    meaning = {OK: "ok", WARN: "warn", FAIL: "fail"}
    for f in findings:
        echo((f"{f.status:<4}", meaning[f.status]), "  ", (f.check.ljust(width), "head"), "  ", f.detail)
        if f.fix and f.status != OK:
            echo(" " * (width + 8), ("fix: " + f.fix, "dim"))
    failed = sum(f.status == FAIL for f in findings)
    warned = sum(f.status == WARN for f in findings)
    summary = (
        f"{failed} problem{'s' * (failed != 1)}, {warned} warning{'s' * (warned != 1)}"
        if failed or warned
        else "everything ssebench needs is here"
    )
    echo((summary, "fail" if failed else "warn" if warned else "ok"))
