"""Run one task in a Docker container: the engine side of ``ssebench run --docker``.

Images are built by images.py from the jinja2 templates (dockerfile.py) with contexts made
on the host, so a build never needs a registry or the network; the engine is engine.py's.
The base image is the offline Debian one scripts/docker-base-image.sh imports (override:
SSEBENCH_BASE_IMAGE).

A run works on private copies (the user's folders are never written). By default the task's
hidden parts stay out of the agent's reach: a sidecar container holds the task, serves the
daemon on a socket in a shared folder and grades at the end, while the agent's container
gets only the tree and runs ``ssebench entrypoint --sidecar``. The sidecar alone gets what
the check sandbox (bwrap) needs: a seccomp profile letting namespaces and mounts through, an
unmasked /proc, no capabilities, a non-root user (sidecar.py). The one-container layout
(``sidecar=False``) gets the same options for its whole container, agent included, which runs
non-root too. The results folder is mounted at ``/results``, where the entrypoint writes
``results.json`` and ``dialog.jsonl``.
docs/docker.md has the layout and the measured costs.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench import settings
from ssebench.container.dockerfile import (
    CONTAINER_RESULTS_DIR,
    CONTAINER_TASK_DIR,
    DockerfileError,
    agent_cli,
)
from ssebench.container.engine import DockerEngine, DockerRunError, cache_dir, read_results
from ssebench.container.images import build_agent_image, build_task_image
from ssebench.container.sidecar import chown_tree, daemon_user, run_with_sidecar, sandbox_options
from ssebench.resources import script
from ssebench.settings import DEFAULT_MCP_PORT

__all__ = [
    "MCP_PORT",
    "DockerEngine",
    "DockerRunError",
    "DockerRunResult",
    "build_agent_image",
    "build_task_image",
    "cache_dir",
    "chown_tree",
    "daemon_user",
    "run_in_docker",
    "sandbox_options",
]
MCP_PORT = DEFAULT_MCP_PORT  # the port `ssebench agents install` registers in the agent layers
CONTAINER_HOME = "/root"  # HOME in the one-container layout (its user is not root, but the layers open /root)


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
    network: str | None = None,
    timeout: float | None = None,
    base_image: str | None = None,
    progress: Callable[[str], None] | None = None,
    sidecar: bool = True,
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
    network: the agent container's ``docker run --network``; default SSEBENCH_DOCKER_NETWORK,
        else "host", which lets the agent reach services on the host's 127.0.0.1 (the
        scripted model servers in the tests; ssebench's private engine has no bridge) but
        puts the MCP server on the host's port 3000 (or env's SSE_MCP_PORT, for a command
        that does not use an agent layer's registered URL): checked free before anything starts.
    timeout: seconds for the whole container; then it is killed and exit_code is 124.
    base_image: overrides SSEBENCH_BASE_IMAGE / ssebench-base:bookworm.
    progress: called with each stage's name as it starts ("engine", "task image",
        "agent image", "container", "results") for the live display.

    sidecar: True (the default) keeps the task's hidden parts out of the agent's container
        (:func:`ssebench.container.sidecar.run_with_sidecar`); False: one container with the
        whole task at /task, sandboxed as a whole (:func:`_run_one_container`).

    Raises DockerRunError with one clear message when no engine answers, the base image is
    missing, or a build fails (with the build's last lines).
    """
    task = _load_task(task_dir)
    network = _check_before_building(agent, network, env)
    stage = progress or (lambda _name: None)
    engine, task_image, image = _images(agent, base_image, stage)
    stage("container")
    settings = {**(env or {}), "SSE_RESULTS_DIR": CONTAINER_RESULTS_DIR, "SSE_DIFFICULTY": str(difficulty)}
    layout = dict(command=agent_command, env=settings, network=network, timeout=timeout)
    exit_code = _run_containers(engine, task_dir, task, results_dir, sidecar, task_image, image, layout)
    stage("results")
    return DockerRunResult(
        exit_code=exit_code,
        image=image,
        results_dir=results_dir,
        results=read_results(results_dir / "results.json"),
        dialog_path=(results_dir / "dialog.jsonl") if (results_dir / "dialog.jsonl").is_file() else None,
        log_path=results_dir / "container.log",
    )


def _run_containers(
    engine: DockerEngine,
    task_dir: Path,
    task: Any,
    results_dir: Path,
    sidecar: bool,
    task_image: str,
    image: str,
    layout: dict[str, Any],
) -> int:
    """The chosen layout on private copies of the task; the entrypoint's exit status."""
    results_dir.mkdir(parents=True, exist_ok=True)
    for name in ("results.json", "dialog.jsonl", "container.log", "grading.json", "grading.log", "daemon.log"):
        (results_dir / name).unlink(missing_ok=True)  # never report a previous run's files
    log_path = results_dir / "container.log"
    with _workspace(task_dir, task.source) as space:
        if sidecar:
            return run_with_sidecar(
                engine,
                space,
                task_image=task_image,
                image=image,
                results_dir=results_dir.resolve(),
                log_path=log_path,
                task_id=task.id,
                **layout,
            )
        return _run_one_container(engine, space, image=image, results_dir=results_dir, log_path=log_path, **layout)


def _check_before_building(agent: str | None, network: str | None, env: Mapping[str, str] | None) -> str:
    """What can fail before anything is built (an unknown agent, a busy port); the network.

    The agent first: a mistake in the command is named whatever the machine's state."""
    if agent is not None:
        try:
            agent_cli(agent)
        except DockerfileError as error:
            raise DockerRunError(str(error)) from None
    network = network or settings.text("SSEBENCH_DOCKER_NETWORK")
    if network == "host":
        port = settings.raw("SSE_MCP_PORT", env or {}) or ""
        _check_port_free(int(port) if port.isdigit() else MCP_PORT)  # a bad value: the entrypoint says so
    return network


def _images(agent: str | None, base_image: str | None, stage: Callable[[str], None]) -> tuple[DockerEngine, str, str]:
    """The engine, the task image and the image to run (AGENT's layer, else the task image)."""
    stage("engine")
    engine = DockerEngine.locate()
    base = base_image or settings.text("SSEBENCH_BASE_IMAGE")
    if not engine.has_image(base):
        raise DockerRunError(
            f"the base image {base} is not in the Docker engine at {engine.host}; "
            f"build it with {script('docker-base-image.sh')} (offline, from Debian's packages) "
            "or set SSEBENCH_BASE_IMAGE"
        )
    stage("task image")
    task_image = image = build_task_image(engine, base)
    if agent is not None:
        stage("agent image")
        image = build_agent_image(engine, agent, task_image)
    return engine, task_image, image


def _check_port_free(port: int) -> None:
    """With the host's network the container's MCP server binds 127.0.0.1:PORT of this host."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # as the server binds (SO_REUSEADDR): old TIME_WAIT connections do not count as in use
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            raise DockerRunError(
                f"port {port} on 127.0.0.1 is in use; with --network host the task container's MCP server "
                f"needs it (another run, or ssebench up?). Free it or set SSEBENCH_DOCKER_NETWORK=bridge"
            ) from None


def _load_task(task_dir: Path):
    """The task, checked on the host before anything is built (a bad task.toml fails here)."""
    from ssebench.task import TaskError, load_task

    if not (task_dir / "task.toml").is_file():
        raise DockerRunError(f"{task_dir}: no task.toml in this folder")
    try:
        return load_task(task_dir / "task.toml")
    except TaskError as error:
        raise DockerRunError(str(error)) from None


@dataclass(frozen=True)
class _Workspace:
    task: Path  # a full copy of the task folder (hidden parts included)
    tree: Path  # a copy of the task's source: the agent's tree in sidecar mode
    sockets: Path  # shared by the sidecar (daemon socket) and the agent container
    results: Path  # the one-container layout's /results, copied to the user's folder after


@contextmanager
def _workspace(task_dir: Path, source: Path) -> Iterator[_Workspace]:
    """Private copies for the containers to change; the user's folders stay as they are."""
    holder = Path(tempfile.mkdtemp(prefix="ssebench-task-"))  # 0700, ours alone
    try:
        space = _Workspace(
            task=holder / "task", tree=holder / "tree", sockets=holder / "sockets", results=holder / "results"
        )
        shutil.copytree(task_dir, space.task, symlinks=True)
        shutil.copytree(source, space.tree, symlinks=True)
        space.sockets.mkdir(mode=0o700)
        space.results.mkdir(mode=0o700)
        yield space
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _run_one_container(
    engine: DockerEngine,
    space: _Workspace,
    *,
    image: str,
    command: Sequence[str],
    results_dir: Path,
    env: Mapping[str, str],
    network: str,
    timeout: float | None,
    log_path: Path,
) -> int:
    """Agent, daemon and checks in one container with the whole task at /task (this layout
    hides nothing from the agent). bwrap needs an unmasked /proc here as in the sidecar,
    which leaves /proc/sys writable; so the whole container runs as :func:`daemon_user`,
    never root, with :func:`sandbox_options`, and its checks are sandboxed. The container
    writes a private results folder (that user's), copied into RESULTS_DIR afterwards, so
    the user's folder never changes owner."""
    uid, gid = daemon_user()
    if (uid, gid) != (os.getuid(), os.getgid()):  # root on the host: hand the copies to that user
        for path in (space.task, space.results):
            chown_tree(path, uid, gid)
    try:
        return engine.run_container(
            image=image,
            command=["--", *command],
            mounts={space.task: CONTAINER_TASK_DIR, space.results: CONTAINER_RESULTS_DIR},
            # HOME: the image's /root (the agent layers open it to every user); the user has
            # no passwd entry, so Docker would set HOME to / or /nonexistent.
            env={"HOME": CONTAINER_HOME, **env, "SSE_TASK": f"{CONTAINER_TASK_DIR}/task.toml"},
            network=network,
            timeout=timeout,
            log_path=log_path,
            options=sandbox_options(uid, gid),
        )
    finally:
        shutil.copytree(space.results, results_dir, symlinks=True, dirs_exist_ok=True)
