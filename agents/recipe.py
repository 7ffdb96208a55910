"""Run recipes: how ssebench launches a bundled agent CLI headless in a task container.

A recipe turns (prompt, MCP server URL, the agent's HOME, the environment) into a
:class:`Launch`: the argv, the environment to add, and the stream format the CLI writes
on stdout (the dialog converters in ``agents/*/dialog.py`` read it). The facts a recipe
shares with the rest of ssebench (command, npm package, stream format) are its agent's record
(agents/agent.py); a recipe holds only how to launch. The MCP server itself
is registered beforehand by ``ssebench agents install AGENT --url URL`` (agents/base.py);
a recipe only adds what a headless run needs on top: flags that allow the one tool
without a prompt, timeouts that outlast a long ``test_patch`` call, and the model API.

The model API comes from the environment, the same variables each CLI reads itself
(``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_KEY``, ``OPENAI_BASE_URL``/``OPENAI_API_KEY``,
``GOOGLE_GEMINI_BASE_URL``/``GEMINI_API_KEY``); ``SSE_AGENT_MODEL`` picks the model.
Recipes read the environment and never write files: ``launch`` also runs on the host for
a container (``home`` is then the container's HOME), so anything a CLI needs on disk
beyond the MCP entry is done by :meth:`Recipe.prepare`, run where the agent runs: in a
container both when its layer is built and, with the run's variables, by the entrypoint
just before the agent starts (``SSE_AGENT``); so it must be idempotent.

:func:`preflight` checks, before anything starts, what a run needs from this machine: the
model API variables each recipe names (:meth:`Recipe.model_api`) and the CLI on PATH at
the version ssebench pins (configs/agent-clis/package.json). Without it a CLI with no key
either fails with a vague "exited with status 1" (Claude Code) or retries until the agent
timeout (Codex, opencode: an hour by default).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable
from urllib.parse import urlsplit

from ssebench import settings

if TYPE_CHECKING:
    from ssebench.agents.agent import Agent

#: the model name for the agent; unset, each CLI uses its own default
MODEL_VAR = "SSE_AGENT_MODEL"


@dataclass(frozen=True)
class Launch:
    """Everything needed to start the agent: run ``argv`` with ``env`` added to the
    environment, standard input empty (opencode waits for stdin otherwise), in the tree."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    stream_format: str = ""
    #: the limits this launch sets, for the docs and the run log: name -> value with unit
    timeouts: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelApi:
    """The variables a CLI reads to reach its model: one of ``keys`` must be set (none
    listed: ssebench cannot tell, nothing is required); ``base_url``, when set, must be an
    http(s) URL (it points the CLI at another endpoint, e.g. a gateway or a local model)."""

    keys: tuple[str, ...]
    base_url: str | None = None


@runtime_checkable
class Recipe(Protocol):
    agent: str  # the AGENT name of ``ssebench agents install``
    dialog: str  # the name of the agent whose converter reads the stream (ssebench.dialog.convert)
    stream_format: str
    binary: str  # the CLI's program name
    package: str  # the npm package that installs it (pinned in configs/agent-clis/package.json)

    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        """The model API variables this run needs (they may depend on the chosen model)."""
        ...

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        """The command line and environment for one headless run."""
        ...

    def prepare(self, *, home: Path, env: Mapping[str, str]) -> None:
        """One-time setup in the agent's HOME beyond the MCP entry (most recipes: nothing)."""
        ...


@dataclass(frozen=True)
class AgentRecipe:
    """A recipe's facts (name, command, package, stream format) read from its agent's record,
    so they are written once (agents/<agent>/__init__.py); subclasses add ``model_api`` and
    ``launch``, and ``prepare`` where the CLI needs something on disk beyond the MCP entry."""

    record: Agent

    @property
    def agent(self) -> str:
        return self.record.name

    @property
    def dialog(self) -> str:
        return self.record.name

    @property
    def stream_format(self) -> str:
        return self.record.stream_format

    @property
    def binary(self) -> str:
        return self.record.binary

    @property
    def package(self) -> str:
        return self.record.package

    def prepare(self, *, home: Path, env: Mapping[str, str]) -> None:
        return None


def get_recipe(agent: str) -> Recipe:
    """The run recipe of the registered ``agent``; ValueError naming the known agents otherwise."""
    from ssebench.agents import registry

    return registry.agent(agent).load_recipe()


def model_from(env: Mapping[str, str]) -> str | None:
    """The model the run asked for (``SSE_AGENT_MODEL``); None leaves the CLI's default."""
    value = (settings.raw(MODEL_VAR, env) or "").strip()
    return value or None


def pick(env: Mapping[str, str], *names: str) -> dict[str, str]:
    """The named variables that are set, so a launch passes on the model API settings."""
    return {n: env[n] for n in names if env.get(n)}


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
    recipe = record.load_recipe()
    problems = model_api_problems(recipe, env)
    if cli:
        try:
            pin = record.pin()
        except PinError as error:
            raise PreflightError(str(error)) from None
        install = f"npm install -g {recipe.package}@{pin}"
        found = shutil.which(recipe.binary, path=env.get("PATH", os.defpath))
        if found is None:
            problems.append(f"{recipe.binary}: not found on PATH; install the {agent} CLI: {install}")
        elif not problems:
            version = installed_version(recipe, Path(found))
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


def model_api_problems(recipe: Recipe, env: Mapping[str, str]) -> list[str]:
    """What is missing or malformed in ``env`` for the recipe's model API."""
    api = recipe.model_api(env)
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


def installed_version(recipe: Recipe, binary: Path) -> str | None:
    """The version of the CLI at ``binary``: its npm package.json, else ``--version``."""
    resolved = binary.resolve()
    for folder in resolved.parents:
        manifest = folder / "package.json"
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                break
            if isinstance(data, dict) and data.get("name") == recipe.package:
                version = data.get("version")
                return version if isinstance(version, str) else None
            if isinstance(data, dict) and data.get("name"):
                break  # another package's folder: not an npm install of this CLI
    owner = _npm_owner_version(recipe.package, resolved)
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
