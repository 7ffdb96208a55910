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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench import runrecord, settings
from ssebench.container import results as record
from ssebench.container.dockerfile import (
    CONTAINER_RESULTS_DIR,
    CONTAINER_TASK_DIR,
    DockerfileError,
    agent_cli,
)
from ssebench.container.engine import DockerEngine, DockerRunError, cache_dir
from ssebench.container.images import build_agent_image, build_task_image
from ssebench.container.sidecar import chown_tree, daemon_user, run_with_sidecar, sandbox_options
from ssebench.container.workspace import TaskCopies, workspace
from ssebench.resources import script
from ssebench.runrecord import Grading, RunResult, RunSpec
from ssebench.settings import DEFAULT_MCP_PORT

__all__ = [
    "MCP_PORT",
    "DockerEngine",
    "DockerPlan",
    "DockerRunError",
    "DockerRunResult",
    "build_agent_image",
    "build_task_image",
    "cache_dir",
    "chown_tree",
    "container_task_file",
    "daemon_user",
    "execute",
    "plan_run",
    "run_in_docker",
    "sandbox_options",
]
MCP_PORT = DEFAULT_MCP_PORT  # the port `ssebench agents install` registers in the agent layers
CONTAINER_HOME = "/root"  # HOME in the one-container layout (its user is not root, but the layers open /root)
#: a previous run's files, removed before a run so that none is reported as this one's
STALE_FILES = (runrecord.RESULTS_FILE, "dialog.jsonl", "container.log", "grading.json", "grading.log", "daemon.log")


@dataclass(frozen=True)
class DockerRunResult:
    """What a container run left behind, read back from the mounted results folder."""

    exit_code: int  # the entrypoint's exit status (the container's)
    image: str  # the image that ran (agent layer, or task image for a custom command)
    results_dir: Path  # the host folder mounted at /results
    record: RunResult | None  # results.json; None when the entrypoint wrote none
    dialog_path: Path | None  # results_dir/dialog.jsonl when it exists
    log_path: Path  # results_dir/container.log: the container's stdout and stderr


@dataclass(frozen=True)
class DockerPlan:
    """One ``run --docker``, decided and checked before anything is built (:func:`plan_run`),
    then carried out by :func:`execute`: images, containers, the record."""

    task: Any  # ssebench.task.Task, loaded once
    agent: str | None
    command: tuple[str, ...]
    results_dir: Path
    env: dict[str, str]  # the containers' settings (SSE_DIFFICULTY, SSE_RESULTS_DIR, the recipe's)
    network: str
    timeout: float | None
    base_image: str
    sidecar: bool
    spec: RunSpec | None = None  # copied into the record (the host's paths, backend docker)
    mounts: Mapping[Path, str] = field(default_factory=dict)  # more for the agent's container (a gateway's socket)

    @property
    def task_file(self) -> str:
        return container_task_file(self.task)


def container_task_file(task: Any) -> str:
    """The task file's path inside a container: the task folder is mounted at /task, and the
    file keeps its own name (any name, not only task.toml)."""
    return f"{CONTAINER_TASK_DIR}/{Path(task.file).name}"


def plan_run(
    task: Any,
    *,
    agent: str | None,
    agent_command: Sequence[str],
    results_dir: Path,
    difficulty: int | None = None,
    env: Mapping[str, str] | None = None,
    network: str | None = None,
    timeout: float | None = None,
    base_image: str | None = None,
    sidecar: bool = True,
    spec: RunSpec | None = None,
    mounts: Mapping[Path, str] | None = None,
) -> DockerPlan:
    """Everything that can fail before building (the task, the agent, the port), checked once.

    task: a loaded Task, or the path of a task file (any name) or of a folder holding task.toml.
    difficulty: SSE_DIFFICULTY inside the containers (default: the spec's level, else 2).
    The rest as :func:`run_in_docker` says.
    """
    loaded = _load_task(task)
    network = _check_before_building(agent, network, env)
    level = difficulty if difficulty is not None else (spec.level if spec is not None else 2)
    containers = {**(env or {}), "SSE_RESULTS_DIR": CONTAINER_RESULTS_DIR, "SSE_DIFFICULTY": str(level)}
    return DockerPlan(
        task=loaded,
        agent=agent,
        command=tuple(agent_command),
        results_dir=results_dir,
        env=containers,
        network=network,
        timeout=timeout,
        base_image=base_image or settings.text("SSEBENCH_BASE_IMAGE"),
        sidecar=sidecar,
        spec=spec,
        mounts=dict(mounts or {}),
    )


def execute(plan: DockerPlan, progress: Callable[[str], None] | None = None) -> DockerRunResult:
    """Build (or reuse) the images, run the containers, write the record; *progress* is called
    with each stage's name as it starts ("engine", "task image", "agent image", "container",
    "results")."""
    stage = progress or (lambda _name: None)
    engine, task_image, image = _images(plan.agent, plan.base_image, stage)
    stage("container")
    exit_code, grading = _run_containers(engine, plan, task_image, image)
    stage("results")
    result = _final_record(plan, grading)
    dialog = plan.results_dir / "dialog.jsonl"
    return DockerRunResult(
        exit_code=result.exit_code if result is not None and result.exit_code is not None else exit_code,
        image=image,
        results_dir=plan.results_dir,
        record=result,
        dialog_path=dialog if dialog.is_file() else None,
        log_path=plan.results_dir / "container.log",
    )


def run_in_docker(
    *,
    task: Any,
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
    """Run AGENT_COMMAND in a task container on TASK and collect its results.

    task: the task file (any name; its folder is copied, never written, and mounted at
        /task), a folder holding task.toml, or a loaded Task.
    agent: a bundled agent's name selects its image layer (its pinned CLI, registered by
        ``ssebench agents install``); None runs agent_command in the bare task image
        (``ssebench run -- CMD``).
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
    progress: called with each stage's name as it starts, for the live display.
    sidecar: True (the default) keeps the task's hidden parts out of the agent's container
        (:func:`ssebench.container.sidecar.run_with_sidecar`); False: one container with the
        whole task at /task, sandboxed as a whole (:func:`_run_one_container`).

    Raises DockerRunError with one clear message when no engine answers, the base image is
    missing, or a build fails (with the build's last lines).
    """
    plan = plan_run(
        task,
        agent=agent,
        agent_command=agent_command,
        results_dir=results_dir,
        difficulty=difficulty,
        env=env,
        network=network,
        timeout=timeout,
        base_image=base_image,
        sidecar=sidecar,
    )
    return execute(plan, progress)


def _run_containers(
    engine: DockerEngine, plan: DockerPlan, task_image: str, image: str
) -> tuple[int, Grading | str | None]:
    """The chosen layout on private copies of the task: the entrypoint's exit status and the
    sidecar's grading (None: none ran there)."""
    results_dir = plan.results_dir
    results_dir.mkdir(parents=True, exist_ok=True)
    for name in STALE_FILES:
        (results_dir / name).unlink(missing_ok=True)  # never report a previous run's files
    log_path = results_dir / "container.log"
    with workspace(plan.task.dir, plan.task.source) as space:
        if plan.sidecar:
            return run_with_sidecar(
                engine,
                space,
                task_image=task_image,
                image=image,
                command=plan.command,
                results_dir=results_dir.resolve(),
                env=plan.env,
                network=plan.network,
                timeout=plan.timeout,
                log_path=log_path,
                task_file=plan.task_file,
                mounts=plan.mounts,
            )
        return _run_one_container(engine, space, plan, image=image, log_path=log_path), None


def _final_record(plan: DockerPlan, grading: Grading | str | None) -> RunResult | None:
    """The container's record with the sidecar's grading merged in and the host's spec; written."""
    try:
        result = runrecord.read_if_any(plan.results_dir)
    except runrecord.RecordError as error:
        raise DockerRunError(str(error)) from None
    if result is None:
        return None
    if grading is not None:
        result = record.with_grading(result, grading, "sidecar", task_file=plan.task_file, task_id=plan.task.id)
    if plan.spec is not None:
        result = result.model_copy(update={"spec": plan.spec})
    runrecord.write(plan.results_dir, result)
    return result


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


def missing_base_image(engine: DockerEngine, base: str) -> str:
    """What to do when BASE is not in ENGINE (also ssebench/preflight.py's line)."""
    return (
        f"the base image {base} is not in the Docker engine at {engine.host}; "
        f"build it with {script('docker-base-image.sh')} (offline, from Debian's packages) "
        "or set SSEBENCH_BASE_IMAGE"
    )


def _images(agent: str | None, base: str, stage: Callable[[str], None]) -> tuple[DockerEngine, str, str]:
    """The engine, the task image and the image to run (AGENT's layer, else the task image)."""
    stage("engine")
    engine = DockerEngine.locate()
    if not engine.has_image(base):
        raise DockerRunError(missing_base_image(engine, base))
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


def _load_task(task: Any) -> Any:
    """The task, checked on the host before anything is built (a bad task file fails here)."""
    from ssebench.task import Task, TaskError, load_task

    if isinstance(task, Task):
        return task
    try:
        return load_task(task)
    except TaskError as error:
        raise DockerRunError(str(error)) from None


def _run_one_container(engine: DockerEngine, space: TaskCopies, plan: DockerPlan, *, image: str, log_path: Path) -> int:
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
            command=["--", *plan.command],
            mounts={space.task: CONTAINER_TASK_DIR, space.results: CONTAINER_RESULTS_DIR, **plan.mounts},
            # HOME: the image's /root (the agent layers open it to every user); the user has
            # no passwd entry, so Docker would set HOME to / or /nonexistent.
            env={"HOME": CONTAINER_HOME, **plan.env, "SSE_TASK": plan.task_file},
            network=plan.network,
            timeout=plan.timeout,
            log_path=log_path,
            options=sandbox_options(uid, gid),
        )
    finally:
        shutil.copytree(space.results, plan.results_dir, symlinks=True, dirs_exist_ok=True)
