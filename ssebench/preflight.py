"""What a run needs from this machine, checked before anything starts; every problem at once.

Why: a job of 100 runs whose agent has no API key used to start each run, have each refused
inside, and say "usage_error" with the reason in a log; a missing base image was a
multi-line build error retried three times. ``ssebench jobs run`` (ssebench/jobs/preflight.py)
and ``ssebench run --docker`` call these checks first and print every :class:`Problem`
(one line each, naming the agent and the variable, the task and the key, the image, the
engine), exit 2, and start nothing. Each check is quick (no build, no network beyond the
local Docker engine or the cluster's API).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ssebench import settings


@dataclass(frozen=True)
class Problem:
    """One thing that would make runs fail: what it is about (``agent claude``, ``task FILE``,
    ``docker``...) and one line saying what is wrong and what to do."""

    subject: str
    text: str

    def line(self) -> str:
        return f"{self.subject}: {self.text}"


def agent_problems(agent: str, env: Mapping[str, str], *, cli: bool) -> list[Problem]:
    """A bundled agent's model API variables in ENV and, with CLI, its program on ENV's PATH
    at the pinned version (agents/recipe.py's preflight; each of its problems one line)."""
    from ssebench.agents.recipe import PreflightError, preflight

    try:
        preflight(agent, env, cli=cli)
    except PreflightError as error:
        head, *items = str(error).splitlines()
        listed = [item.strip().removeprefix("- ") for item in items if item.strip()]
        return [Problem(f"agent {agent}", text) for text in listed or [head]]
    return []


def command_problems(name: str, command: Sequence[str], cwd: Path, env: Mapping[str, str]) -> list[Problem]:
    """A custom agent command's program: found (relative to CWD, else on ENV's PATH) and executable."""
    program = command[0]
    if "/" in program:
        path = Path(program) if os.path.isabs(program) else cwd / program
        if not path.is_file():
            return [Problem(f"agent {name}", f"command {program!r}: {path} does not exist")]
        if not os.access(path, os.X_OK):
            return [Problem(f"agent {name}", f"command {program!r}: {path} is not executable (chmod +x)")]
        return []
    if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        return [Problem(f"agent {name}", f"command {program!r}: not found on PATH")]
    return []


def docker_problems(agents: Sequence[str] = ()) -> list[Problem]:
    """The Docker engine answers and holds the base image; each bundled agent's layer can be
    built (its CLI cached or npm to install it, the Node it copies in)."""
    from ssebench.container.engine import DockerEngine, DockerRunError

    try:
        engine = DockerEngine.locate()
    except DockerRunError as error:
        return [Problem("docker", str(error))]
    from ssebench.container.docker import missing_base_image

    base = settings.text("SSEBENCH_BASE_IMAGE")
    problems = [] if engine.has_image(base) else [Problem("docker", missing_base_image(engine, base))]
    for agent in dict.fromkeys(agents):
        problems += layer_problems(agent)
    return problems


def layer_problems(agent: str) -> list[Problem]:
    """Why AGENT's Docker layer could not be built here (ssebench/container/images.py's needs)."""
    from ssebench.container import images
    from ssebench.container.dockerfile import DockerfileError, agent_cli, node_runtime, pinned_version
    from ssebench.container.engine import DockerRunError, cache_dir

    subject = f"agent {agent}"
    try:
        cli, version, runtime = agent_cli(agent), pinned_version(agent), node_runtime(agent)
    except DockerfileError as error:
        return [Problem(subject, str(error))]
    problems = []
    cached = cache_dir() / "agent-cli"
    if not any(cached.glob(f"{agent}-{version}*")) and shutil.which("npm") is None:
        problems.append(Problem(subject, f"its layer installs {cli.package}@{version} with npm; no npm found"))
    if not runtime:
        try:
            images.host_node()
        except DockerRunError as error:
            problems.append(Problem(subject, str(error)))
    return problems


def render(problems: Sequence[Problem], what: str) -> str:
    """The lines ``ssebench jobs`` / ``ssebench run`` print for PROBLEMS (WHAT: who is refusing)."""
    from ssebench.plural import count

    head = f"{what}: preflight found {count(len(problems), 'problem')}; nothing was started:"
    return "\n".join([head, *(f"  {p.line()}" for p in problems)])
