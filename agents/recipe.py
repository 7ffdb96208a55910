"""An agent's run recipe (:func:`get_recipe`: its record, agents/agent.py) and the preflight
that checks, before anything starts, what a run needs from this machine.

The MCP server itself is registered beforehand by ``ssebench agents install AGENT --url URL``
(agents/actions.py); the record's ``launch`` only adds what a headless run needs on top: flags
that allow the one tool without a prompt, timeouts that outlast a long ``test_patch`` call, and
the model API. The model API comes from the environment, the same variables each CLI reads
itself (``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_KEY``, ``OPENAI_BASE_URL``/``OPENAI_API_KEY``,
``GOOGLE_GEMINI_BASE_URL``/``GEMINI_API_KEY``); ``SSE_AGENT_MODEL`` picks the model. A launch
reads the environment and never writes files: it also runs on the host for a container
(``home`` is then the container's HOME), so anything a CLI needs on disk beyond the MCP entry
is done by the record's ``prepare``, run where the agent runs: in a container both when its
layer is built and, with the run's variables, by the entrypoint just before the agent starts
(``SSE_AGENT``); so it must be idempotent.

:func:`preflight` checks the model API variables each record names (``Agent.model_api``) and
the CLI on PATH at the version ssebench pins (configs/agent-clis/package.json). Without it a
CLI with no key either fails with a vague "exited with status 1" (Claude Code) or retries
until the agent timeout (Codex, opencode: an hour by default).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from ssebench.agents.agent import Agent


def get_recipe(agent: str) -> Agent:
    """The record of the registered ``agent`` (its launch, prepare and model API); ValueError
    naming the known agents otherwise."""
    from ssebench.agents import registry

    return registry.agent(agent)


# -- preflight ---------------------------------------------------------------------------

VERSION_TIMEOUT = 15.0  # seconds for ``CLI --version`` when the installed package.json is not found
_VERSION = re.compile(r"\d+\.\d+\.\d+[0-9A-Za-z.+-]*")


class PreflightError(Exception):
    """The agent cannot run here; the message lists every problem found and what to do."""


def preflight(agent: str, env: Mapping[str, str], *, cli: bool = True) -> None:
    """Check in well under a second what ``agent`` needs, before anything starts.

    The model API variables (every run), then, with ``cli``, the CLI on ``env``'s PATH at
    the pinned version (not in a container, whose image has the pinned CLI). The version
    is read from the installed package's package.json; only a CLI installed some other
    way is asked ``--version``, and only once everything else passed.
    """
    from ssebench.agents import registry, runtime
    from ssebench.resources import PinError

    record = registry.agent(agent)
    problems = model_api_problems(record, env)
    if cli:
        try:
            pin = record.pin()
        except PinError as error:
            raise PreflightError(str(error)) from None
        install = record.install_hint()
        found = shutil.which(record.binary, path=env.get("PATH", os.defpath))
        if found is None:
            problems.append(f"{record.binary}: not found on PATH; install the {agent} CLI: {install}")
        elif not problems:
            version = installed_version(record, Path(found))
            if version != pin:
                problems.append(
                    f"{found} is version {version or 'unknown'}; ssebench runs {agent} at {pin} "
                    f"(the version its tests prove): {install}"
                )
            else:
                node = runtime.node_problem(record, env)
                problems.extend([f"{node}: {runtime.fix(record)}"] if node else [])
    if problems:
        raise PreflightError(f"{agent} cannot run:\n" + "\n".join(f"  - {p}" for p in problems))


def model_api_problems(record: Agent, env: Mapping[str, str]) -> list[str]:
    """What is missing or malformed in ``env`` for the agent's model API."""
    api = record.model_api(env)
    problems = []
    if api.keys and not any((env.get(k) or "").strip() for k in api.keys):
        names = api.keys[0] if len(api.keys) == 1 else ", ".join(api.keys[:-1]) + " or " + api.keys[-1]
        where = f" (and {api.base_url} for another endpoint)" if api.base_url else ""
        problems.append(f"no model API key: set {names}{where}")
    raw = (env.get(api.base_url) or "").strip() if api.base_url else ""
    if raw:
        parts = urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            problems.append(f"{api.base_url}={raw!r} is not an http:// or https:// URL")
    return problems


def installed_version(record: Agent, binary: Path) -> str | None:
    """The version of the CLI at ``binary``: its venv's dist-info (a PyPI agent), its npm
    package.json, else ``--version``."""
    if record.registry == "pypi":
        from ssebench.agents.pypi import installed_version as in_venv

        found = in_venv(record.package, binary)
        if found is not None:
            return found
    resolved = binary.resolve()
    for folder in resolved.parents:
        manifest = folder / "package.json"
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                break
            if isinstance(data, dict) and data.get("name") == record.package:
                version = data.get("version")
                return version if isinstance(version, str) else None
            if isinstance(data, dict) and data.get("name"):
                break  # another package's folder: not an npm install of this CLI
    owner = _npm_owner_version(record.package, resolved)
    if owner is not None:
        return owner
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _VERSION.search(done.stdout)
    return match.group(0) if match else None


def _npm_owner_version(package: str, resolved: Path) -> str | None:
    """The version of ``package`` in the ``node_modules`` folder holding ``resolved``: a CLI
    whose postinstall points its command at a platform package's binary (Cline CLI:
    ``.bin/cline`` -> ``@cline/cli-linux-x64/bin/cline``) is still that install's."""
    folder = next((f for f in resolved.parents if f.name == "node_modules"), None)
    if folder is None:
        return None
    try:
        data = json.loads((folder / package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("name") == package and isinstance(data.get("version"), str):
        return str(data["version"])
    return None
