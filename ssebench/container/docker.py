"""Run one task in a Docker container: the engine side of ``ssebench run --docker``.

Images are built from the jinja2 templates (dockerfile.py) with build contexts made here, on
the host, so a build never needs a registry or the network: the ssebench wheels come from
``pip wheel`` on the host and the agent CLI from ``npm install`` on the host, both using the
host's package caches. The base image is the offline Debian one scripts/docker-base-image.sh
imports (override: SSEBENCH_BASE_IMAGE). Images are tagged with a hash of their Dockerfile
and context, so an unchanged image is reused without calling ``docker build``.

The container gets a private copy of the task (the user's folder is never written) at
``/task`` and the results folder at ``/results``; the entrypoint inside writes
``results.json`` and ``dialog.jsonl`` there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


class DockerRunError(Exception):
    """The run could not happen (no engine, no base image, a build failed); says why."""


@dataclass(frozen=True)
class DockerRunResult:
    """What a container run left behind, read back from the mounted results folder."""

    exit_code: int  # the entrypoint's exit status (the container's)
    image: str  # the image that ran (agent layer, or task image for a custom command)
    results_dir: Path  # the host folder mounted at /results
    results: dict | None  # results.json parsed; None when the entrypoint wrote none
    dialog_path: Path | None  # results_dir/dialog.jsonl when it exists
    log_path: Path  # results_dir/container.log: the container's stdout and stderr


def run_in_docker(
    *,
    task_dir: Path,
    agent: str | None,
    agent_command: Sequence[str],
    results_dir: Path,
    difficulty: int,
    env: Mapping[str, str] | None = None,
    network: str = "host",
    timeout: float | None = None,
    base_image: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> DockerRunResult:
    """Run AGENT_COMMAND in a task container on TASK_DIR and collect its results.

    task_dir: folder holding task.toml; copied (never written), mounted at /task.
    agent: "claude" | "codex" | "gemini" | "opencode" selects that agent's image layer
        (its pinned CLI, registered by ``ssebench agents install``); None runs
        agent_command in the bare task image (``ssebench run -- CMD``).
    agent_command: what the entrypoint runs after ``--`` (the agent's run recipe).
    results_dir: host folder (created) mounted at /results: results.json, dialog.jsonl,
        and container.log (the container's output) end up there.
    difficulty: SSE_DIFFICULTY inside the container.
    env: more environment for the container (model base URL, API key, recipe variables).
    network: ``docker run --network`` value; "host" lets the agent reach services on the
        host's 127.0.0.1 (the scripted model servers in the tests).
    timeout: seconds for the whole container; then it is killed and exit_code is 124.
    base_image: overrides SSEBENCH_BASE_IMAGE / ssebench-base:bookworm.
    progress: called with each stage's name as it starts ("engine", "task image",
        "agent image", "container", "results") for the live display.

    The Docker engine is the one DOCKER_HOST names, else ssebench's private engine
    (scripts/docker-engine.sh) when it answers, else Docker's default socket.
    Raises DockerRunError with one clear message when no engine answers, the base image is
    missing, or a build fails (with the build's last lines).
    """
    raise NotImplementedError
