"""The one protocol an agent ``ssebench run`` can launch satisfies: an :class:`Agent` record.

An agent is one module (agents/claude.py, agents/codex.py, ...) that builds one record of five
parts, and agents/registry.py lists the records:

- **install**: the ``package`` and the ``binary`` it installs, from npm (the version stays in the
  one pin file, configs/agent-clis/package.json, unless ``pins_file`` names another) or from PyPI
  (``registry="pypi"``: a venv of its own from a hashed lock beside ``pins_file``, agents/pypi.py),
  the Node it runs on when it needs its own (``node_runtime``, ``node_min``: agents/runtime.py),
  and its Docker layer template (configs/docker/);
- **MCP config**: its ``client`` (agents/base.py), what ``ssebench agents install NAME`` writes;
- **headless launch**: ``launch(prompt=, mcp_url=, home=, env=)`` gives the :class:`AgentCommand`
  (argv and the variables to add); ``prepare(home=, env=)`` does what the CLI needs on disk
  beyond the MCP entry (idempotent: in a container it runs when the layer is built and again,
  with the run's variables, just before the agent starts); ``config_vars`` are the variables
  that would point the CLI at the user's own config instead of the run's HOME;
- **model API**: ``model_api(env)`` names the variables the run needs (:class:`ModelApi`, checked
  by preflight), ``model_vars`` says the same for the README;
- **dialog reader**: the ``stream_format`` the CLI prints on stdout and ``reader``, the
  :class:`~ssebench.dialog.stream.StreamConverter` class that turns it into dialog events and
  reports the CLI's own token and cost counts (``StreamConverter.usage()``, None where the CLI
  reports none; agents/usage.py reads them from a saved stream).

Everything that lists agents (argparse choices, help texts, ``SSE_DIALOG``, Docker layers and
their examples, doctor, preflight, the README's and docs/adding-an-agent.md's tables) reads the
registry, so one record is one agent everywhere. An agent that shares another's stream format
or launch rules (Qwen Code prints Claude Code's stream-json; Kilo is an opencode fork) uses the
shared helper in agents/shared/, never another agent's module. This module and the agent
modules import nothing heavy at start-up (no format editor, no dialog pipeline): ``prepare``
functions import the file layer when they run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ssebench import settings
from ssebench.agents.base import Client

if TYPE_CHECKING:
    from ssebench.dialog.stream import StreamConverter

#: the Dockerfile template of an agent layer (configs/docker/), unless a record names another
AGENT_LAYER_TEMPLATE = "agent.Dockerfile.j2"
#: the model name for the agent; unset, each CLI uses its own default
MODEL_VAR = "SSE_AGENT_MODEL"


@dataclass(frozen=True)
class AgentCommand:
    """Everything needed to start the agent: run ``argv`` with ``env`` added to the
    environment, standard input empty (opencode waits for stdin otherwise), in the tree."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    #: the limits this launch sets, for the docs and the run log: name -> value with unit
    timeouts: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelApi:
    """The variables a CLI reads to reach its model: one of ``keys`` must be set (none
    listed: ssebench cannot tell, nothing is required); ``base_url``, when set, must be an
    http(s) URL (it points the CLI at another endpoint, e.g. a gateway or a local model)."""

    keys: tuple[str, ...]
    base_url: str | None = None


class Launcher(Protocol):
    def __call__(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
        """The command line and environment for one headless run (reads ``env``, writes nothing)."""
        ...


class Preparer(Protocol):
    def __call__(self, *, home: Path, env: Mapping[str, str]) -> None:
        """One-time setup in the agent's HOME beyond the MCP entry."""
        ...


def no_setup(*, home: Path, env: Mapping[str, str]) -> None:
    """``prepare`` of a CLI that needs nothing on disk beyond its MCP entry."""


@dataclass(frozen=True, kw_only=True)
class Agent:
    """An agent ``ssebench run --agent NAME`` can launch (its name is its client's)."""

    # install
    package: str  # the npm (or PyPI) package that installs the CLI; its version: the pin file
    binary: str  # the command that package installs
    pins_file: Path | None = None  # None: configs/agent-clis/package.json
    registry: str = "npm"  # "pypi": installed in a venv of its own from the lock beside pins_file
    # a PyPI agent's oldest Python (its Requires-Python); (): the Python running ssebench will do
    python_min: tuple[int, ...] = ()
    # the npm package in its pin file that brings the Node it runs on (agents/runtime.py), and
    # the oldest Node it runs on; "" / (): the machine's node, whatever its version
    node_runtime: str = ""
    node_min: tuple[int, ...] = ()
    layer_template: str = AGENT_LAYER_TEMPLATE  # its Docker layer (configs/docker/)
    # MCP config
    client: Client  # registers the MCP server (``ssebench agents install NAME``)
    # headless launch
    launch: Launcher
    prepare: Preparer = no_setup
    config_vars: tuple[str, ...] = ()  # variables pointing the CLI at a config outside its HOME
    # model API
    model_api: Callable[[Mapping[str, str]], ModelApi]
    model_vars: str  # the model API variables, as the README's table shows them (markdown)
    # dialog reader
    stream_format: str  # what the CLI prints on stdout, which the reader reads
    reader: Callable[[str], StreamConverter]  # called with the agent's name, once per stream

    @property
    def name(self) -> str:
        return self.client.name

    @property
    def dialog(self) -> str:
        """The ``SSE_DIALOG`` value that picks this agent's reader: its name."""
        return self.name

    def converter(self) -> StreamConverter:
        """A new reader for one stream."""
        return self.reader(self.name)

    def pin(self) -> str:
        """The exact version the pin file holds for the package (PinError otherwise)."""
        from ssebench.resources import pinned_version

        return pinned_version(self.package, self.pins_file)

    def install_hint(self) -> str:
        """How a user installs the CLI at its pin (preflight's and doctor's fix)."""
        if self.registry == "pypi":
            from ssebench.agents import pypi

            return pypi.install_hint(self)
        return f"npm install -g {self.package}@{self.pin()}"


def openai_api(env: Mapping[str, str]) -> ModelApi:
    """``model_api`` of a CLI that reaches its model as OpenAI's SDK does: ``OPENAI_API_KEY``, and
    ``OPENAI_BASE_URL`` for any OpenAI-compatible endpoint."""
    return ModelApi(keys=("OPENAI_API_KEY",), base_url="OPENAI_BASE_URL")


#: ``model_vars`` of such a CLI whose defaults are OpenAI's endpoint and ``gpt-5``
OPENAI_CHAT_VARS = (
    "`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API; default "
    "`https://api.openai.com/v1`, model `gpt-5`)"
)


def model_from(env: Mapping[str, str]) -> str | None:
    """The model the run asked for (``SSE_AGENT_MODEL``); None leaves the CLI's default."""
    value = (settings.raw(MODEL_VAR, env) or "").strip()
    return value or None


def pick(env: Mapping[str, str], *names: str) -> dict[str, str]:
    """The named variables that are set, so a launch passes on the model API settings."""
    return {n: env[n] for n in names if env.get(n)}
