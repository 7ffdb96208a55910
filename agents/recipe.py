"""Run recipes: how ssebench launches a bundled agent CLI headless in a task container.

A recipe turns (prompt, MCP server URL, the agent's HOME, the environment) into a
:class:`Launch`: the argv, the environment to add, and the stream format the CLI writes
on stdout (the dialog converters in ``agents/*/dialog.py`` read it). The MCP server itself
is registered beforehand by ``ssebench agents install AGENT --url URL`` (agents/base.py);
a recipe only adds what a headless run needs on top: flags that allow the one tool
without a prompt, timeouts that outlast a long ``test_patch`` call, and the model API.

The model API comes from the environment, the same variables each CLI reads itself
(``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_KEY``, ``OPENAI_BASE_URL``/``OPENAI_API_KEY``,
``GOOGLE_GEMINI_BASE_URL``/``GEMINI_API_KEY``); ``SSE_AGENT_MODEL`` picks the model.
Recipes read the environment and never write files: ``launch`` also runs on the host for
a container (``home`` is then the container's HOME), so anything a CLI needs on disk
beyond the MCP entry is done by :meth:`Recipe.prepare`, run where the agent runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

#: the model name for the agent; unset, each CLI uses its own default
MODEL_VAR = "SSE_AGENT_MODEL"

#: Stream formats a recipe can produce (what the dialog converters read).
CLAUDE_STREAM_JSON = "claude-stream-json"  # claude -p --output-format stream-json --verbose
CODEX_JSON = "codex-json"  # codex exec --json
GEMINI_STREAM_JSON = "gemini-stream-json"  # gemini -p --output-format stream-json
OPENCODE_JSON = "opencode-json"  # opencode run --format json


@dataclass(frozen=True)
class Launch:
    """Everything needed to start the agent: run ``argv`` with ``env`` added to the
    environment, standard input empty (opencode waits for stdin otherwise), in the tree."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    stream_format: str = ""
    #: the limits this launch sets, for the docs and the run log: name -> value with unit
    timeouts: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class Recipe(Protocol):
    agent: str  # the AGENT name of ``ssebench agents install``
    dialog: str  # the key of the agent's converter in ssebench.dialog.convert.CONVERTERS
    stream_format: str
    binary: str  # the CLI's program name

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        """The command line and environment for one headless run."""
        ...

    def prepare(self, *, home: Path, env: Mapping[str, str]) -> None:
        """One-time setup in the agent's HOME beyond the MCP entry (most recipes: nothing)."""
        ...


class NoPrepare:
    """For recipes whose CLI needs nothing on disk beyond the MCP entry."""

    def prepare(self, *, home: Path, env: Mapping[str, str]) -> None:
        return None


# agent name -> module holding ``RECIPE`` (claude/codex) or ``RECIPES[agent]`` (generic)
_MODULES = {
    "claude": "ssebench.agents.claude.recipe",
    "codex": "ssebench.agents.codex.recipe",
    "gemini": "ssebench.agents.generic.recipes",
    "opencode": "ssebench.agents.generic.recipes",
}

AGENTS: tuple[str, ...] = tuple(_MODULES)


def get_recipe(agent: str) -> Recipe:
    """The bundled run recipe for ``agent``; ValueError naming the known agents otherwise."""
    module_name = _MODULES.get(agent)
    if module_name is None:
        raise ValueError(f"no run recipe for agent {agent!r}; ssebench can run: {', '.join(AGENTS)}")
    module = importlib.import_module(module_name)
    recipes = getattr(module, "RECIPES", None)
    return recipes[agent] if recipes is not None else module.RECIPE


def model_from(env: Mapping[str, str]) -> str | None:
    """The model the run asked for (``SSE_AGENT_MODEL``); None leaves the CLI's default."""
    value = (env.get(MODEL_VAR) or "").strip()
    return value or None


def pick(env: Mapping[str, str], *names: str) -> dict[str, str]:
    """The named variables that are set, so a launch passes on the model API settings."""
    return {n: env[n] for n in names if env.get(n)}
