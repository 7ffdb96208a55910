"""Dockerfiles for task containers, rendered from the jinja2 templates in configs/docker/.

Two images: the task image (ssebench, its daemon, server and entrypoint on an offline-built
Debian base) and, on top of it, one layer per bundled agent with that agent's pinned CLI,
registered by ``ssebench agents install``. The CLI versions are read from the one place that
pins them, configs/agent-clis/package.json (shipped in the wheel; the same file the
end-to-end tests install, so a Dockerfile can never name a version the tests did not run).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from ssebench import __version__
from ssebench.resources import PinError, cli_pins_file, data_dir
from ssebench.resources import pinned_version as _pinned
from ssebench.settings import DEFAULT_BASE_IMAGE

TEMPLATES_DIR = data_dir("configs") / "docker"
PINS_FILE = cli_pins_file()

# Where the task copy and the results folder are mounted inside a task container.
CONTAINER_TASK_DIR = "/task"
CONTAINER_RESULTS_DIR = "/results"

DEFAULT_TASK_IMAGE = "ssebench-task:latest"
NODE_MAJOR = 20


@dataclass(frozen=True)
class AgentCli:
    """The npm package that brings an agent's CLI, and the command it installs."""

    package: str
    bin: str


def agent_clis() -> dict[str, AgentCli]:
    """Each registered agent's npm package and command (its record, agents/<agent>/__init__.py)."""
    from ssebench.agents.registry import AGENTS

    return {name: AgentCli(record.package, record.binary) for name, record in AGENTS.items()}


AGENT_CLIS: dict[str, AgentCli] = agent_clis()  # the bundled agents, as this module was imported


class DockerfileError(Exception):
    """A Dockerfile cannot be rendered; the message says what and where."""


@cache
def _environment() -> jinja2.Environment:
    if not TEMPLATES_DIR.is_dir():
        raise DockerfileError(f"the Dockerfile templates are missing: {TEMPLATES_DIR} is not a folder")
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def agent_cli(agent: str) -> AgentCli:
    clis = agent_clis()
    try:
        return clis[agent]
    except KeyError:
        known = ", ".join(clis)
        raise DockerfileError(f"no agent layer for {agent!r}: the bundled agents are {known}") from None


def pinned_version(agent: str) -> str:
    """The exact version of AGENT's CLI pinned in configs/agent-clis/package.json."""
    from ssebench.agents.registry import AGENTS

    cli = agent_cli(agent)
    try:
        return _pinned(cli.package, AGENTS[agent].pins_file or PINS_FILE)
    except PinError as error:
        raise DockerfileError(str(error)) from None


def render_task_dockerfile(base_image: str = DEFAULT_BASE_IMAGE) -> str:
    """The task image's Dockerfile (build context: see prepare_task_context in docker.py)."""
    return (
        _environment()
        .get_template("task.Dockerfile.j2")
        .render(
            base_image=base_image,
            version=__version__,
            task_dir=CONTAINER_TASK_DIR,
        )
    )


def render_agent_dockerfile(agent: str, task_image: str = DEFAULT_TASK_IMAGE) -> str:
    """AGENT's layer on top of TASK_IMAGE: its pinned CLI, registered with the server."""
    from ssebench.agents.registry import AGENTS

    cli = agent_cli(agent)
    record = AGENTS[agent]
    python = own_python(record.python_min)
    return (
        _environment()
        .get_template(record.layer_template)
        .render(
            agent=agent,
            package=cli.package,
            bin=cli.bin,
            version=pinned_version(agent),
            task_image=task_image,
            node_major=NODE_MAJOR,
            node_runtime=node_runtime(agent),
            pins=_pins_name(record.pins_file),
            python=python,
            interpreter=f"{OWN_PYTHON_DIR}/bin/python{python}" if python else "python3",
        )
    )


IMAGE_PYTHON = (3, 11)  # the task image's python3: Debian bookworm's
OWN_PYTHON_DIR = "/opt/ssebench-python"  # a PyPI agent's own Python in its layer (configs/docker/agent-pypi...)


def own_python(minimum: tuple[int, ...]) -> str:
    """``3.N``: the Python a PyPI agent's layer carries beside the image's (it needs a newer
    one than bookworm's 3.11); "" when the image's does."""
    return "" if tuple(minimum[:2]) <= IMAGE_PYTHON else ".".join(map(str, minimum[:2]))


def node_runtime(agent: str) -> str:
    """``PACKAGE@VERSION`` of the Node AGENT's layer carries instead of the host's; "" for none."""
    from ssebench.agents.registry import AGENTS

    record = AGENTS[agent]
    if not record.node_runtime:
        return ""
    try:
        return f"{record.node_runtime}@{_pinned(record.node_runtime, record.pins_file)}"
    except PinError as error:
        raise DockerfileError(str(error)) from None


def _pins_name(pins_file: Path | None) -> str:
    """The pin file as the layer's comment names it (configs/agent-clis/...)."""
    path = pins_file or PINS_FILE
    return "/".join(path.parts[path.parts.index("configs") :]) if "configs" in path.parts else path.name


EXAMPLES_DIR = data_dir("configs") / "examples" / "docker"


def rendered_examples() -> dict[str, str]:
    """File name → text of every rendered Dockerfile checked in under configs/examples/docker/."""
    examples = {"task.Dockerfile": render_task_dockerfile()}
    for agent in agent_clis():
        examples[f"{agent}.Dockerfile"] = render_agent_dockerfile(agent)
    return examples


def write_examples(folder: Path = EXAMPLES_DIR) -> None:
    """Regenerate the checked-in examples: python -m ssebench.container.dockerfile."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in rendered_examples().items():
        (folder / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write_examples()
