"""``task verify --docker``: verify inside the task image, as ``jobs run --backend docker``
runs a task, and record the image's digest.

Nothing here runs a check. The image is the one ``run --docker`` builds
(:func:`~ssebench.container.images.build_task_image`, reused when unchanged); one container
of it, with the options the Docker path gives the daemon's container (a non-root user, the
sandbox's seccomp profile, no network, the pids and memory backstops), runs the image's own
``ssebench task verify --json`` on a private read-only copy of the task, with the fix
mounted read-only; that verify drives the same runner and sandbox as ``test_patch``. Its
``--json`` object comes back through the results folder and becomes the host's typed
verdict, with the host's paths and the image's digest: its image ID (docs/datasets.md).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.checks import Check, State
from ssebench.task import Task
from ssebench.taskverify import Expectation, TaskVerdict, VerifyUsageError, fixed_tree

CONTAINER_FIX_DIR = "/fix"
VERDICT_FILE = "verdict.json"  # in the results folder: the container's --json, whole
RUN_TIMEOUT = 4 * 3600  # seconds per run of every check; each check's own timeout applies inside


@dataclass(frozen=True)
class TaskImage:
    """The task image a verify runs in: the engine, its tag and its digest (the image ID)."""

    engine: Any  # ssebench.container.engine.DockerEngine
    tag: str
    digest: str


def task_image() -> TaskImage:
    """The engine and the task image, built or reused as ``run --docker`` does; raises
    VerifyUsageError with ``run --docker``'s preflight line (no engine, no base image) or
    the build's failure."""
    from ssebench import settings
    from ssebench.container.engine import DockerEngine, DockerRunError
    from ssebench.container.images import build_task_image
    from ssebench.preflight import docker_problems

    problems = docker_problems()
    if problems:
        raise VerifyUsageError("; ".join(p.line() for p in problems))
    try:
        engine = DockerEngine.locate()
        tag = build_task_image(engine, settings.text("SSEBENCH_BASE_IMAGE"))
    except DockerRunError as error:
        raise VerifyUsageError(f"docker: {error}") from None
    found = engine.docker("image", "inspect", "--format", "{{.Id}}", tag)
    if found.returncode != 0:
        raise VerifyUsageError(f"docker: image {tag}: {found.stderr.strip()}")
    return TaskImage(engine, tag, found.stdout.strip())


def cache_key(task_hash: str, digest: str) -> str:
    """The verdict cache's key of a verdict made in the image *digest*: a new image is
    verified again."""
    return f"{task_hash}:docker:{digest}"


def verify_in_docker(
    task: Task, fix: Path | None, *, repeat: int = 1, limits: list[str] | None = None, image: TaskImage | None = None
) -> TaskVerdict:
    """Verify *task* (with *fix*) in the task image; *limits*: ``task verify``'s limit
    flags, passed on. Raises VerifyUsageError (bad input, no engine, no base image, a
    build that fails) and DockerVerifyError (the container gave no verdict)."""
    if repeat < 1:
        raise VerifyUsageError(f"--repeat must be at least 1, got {repeat}")
    if not task.source.resolve().is_relative_to(task.dir.resolve()):
        raise VerifyUsageError(
            f"--docker: the task's source {task.source} lies outside its folder {task.dir}; "
            "a task image sees the task folder alone"
        )
    if fix is not None:
        with tempfile.TemporaryDirectory(prefix="ssebench-verify-") as tmp:
            fixed_tree(task, fix, Path(tmp) / "fixed")  # git's own message, with the host's paths
    from ssebench.container.docker import container_task_file

    argv = ["ssebench", "task", "verify", container_task_file(task), "--json", "--repeat", str(repeat)]
    if fix is not None:
        argv += ["--fix", f"{CONTAINER_FIX_DIR}/{fix.name}"]
    return _in_container(image or task_image(), task, fix, repeat, [*argv, *(limits or [])])


def _in_container(image: TaskImage, task: Task, fix: Path | None, repeat: int, argv: list[str]) -> TaskVerdict:
    """ARGV in one container of IMAGE on private copies (removed after, also on Ctrl-C:
    ``run_container`` kills the container, ``--rm`` removes it and its /tmp volume)."""
    from ssebench.container.dockerfile import CONTAINER_RESULTS_DIR, CONTAINER_TASK_DIR
    from ssebench.container.sidecar import chown_tree, daemon_user, sandbox_options
    from ssebench.container.workspace import workspace

    script = f"exec {shlex.join(argv)} > {CONTAINER_RESULTS_DIR}/{VERDICT_FILE}"
    uid, gid = daemon_user()
    with workspace(task.dir, task.source) as space:
        fixes = space.task.parent / "fix"
        fixes.mkdir(mode=0o700)
        if fix is not None:
            shutil.copyfile(fix, fixes / fix.name)
        if (uid, gid) != (os.getuid(), os.getgid()):  # root on the host: the copies are the container user's
            for path in (space.task, space.results, fixes):
                chown_tree(path, uid, gid)
        log = space.task.parent / "container.log"
        code = image.engine.run_container(
            image=image.tag,
            command=["-c", script],
            mounts={
                space.task: f"{CONTAINER_TASK_DIR}:ro",
                fixes: f"{CONTAINER_FIX_DIR}:ro",
                space.results: CONTAINER_RESULTS_DIR,
            },
            # The user has no passwd entry (HOME would be /nonexistent): the inner verify's
            # cache goes to the container's /tmp, a volume removed with it.
            env={"HOME": "/tmp"},
            network="none",
            timeout=RUN_TIMEOUT * repeat,
            log_path=log,
            options=[*sandbox_options(uid, gid), "--entrypoint", "sh", "--label", VERIFY_LABEL],
        )
        return _read_back(task, fix, repeat, image.digest, code, space.results / VERDICT_FILE, log)


#: every verify container carries it: `docker ps --filter label=...` finds them, and only them
VERIFY_LABEL = "ssebench.role=task-verify"


class DockerVerifyError(RuntimeError):
    """The container gave no verdict (it was killed, or verify failed inside); says why."""


def _read_back(
    task: Task, fix: Path | None, repeat: int, digest: str, code: int, verdict: Path, log: Path
) -> TaskVerdict:
    """The container's verdict, typed, with the host's paths; its usage error as the host's."""
    from ssebench.supervise import tail_lines

    said = [line for line in tail_lines(log, 20) if line.strip()]
    if code == 2:  # a usage error inside (a PoC missing...): its own line, the host's paths
        message = said[-1].removeprefix("ssebench task verify: ") if said else "exit status 2"
        raise VerifyUsageError(_host_paths(message, task, fix))
    try:
        data = json.loads(verdict.read_text(encoding="utf-8")) if code in (0, 1) else None
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict):
        tail = "\n".join(said[-10:])
        raise DockerVerifyError(f"the verify container exited with status {code} and gave no verdict:\n{tail}")
    return TaskVerdict(
        task.id,
        task.file,
        fix,
        repeat,
        tuple(_expectation(e) for e in data["expectations"]),
        image=digest,
    )


def _expectation(data: dict[str, Any]) -> Expectation:
    """One row of ``task verify --json`` (Expectation.to_json) back as the typed row."""
    return Expectation(
        tree=data["tree"],
        check=Check(data["check"]),
        poc=data["poc"],
        expected=State(data["expected"]),
        got=tuple(State(g) for g in data["got"]),
        seconds=tuple(float(s) for s in data["seconds"]),
        timed_out=tuple(bool(t) for t in data["timed_out"]),
    )


def _host_paths(message: str, task: Task, fix: Path | None) -> str:
    """*message* with the container's task and fix paths said as the host's."""
    from ssebench.container.dockerfile import CONTAINER_TASK_DIR

    if fix is not None:
        message = message.replace(f"{CONTAINER_FIX_DIR}/{fix.name}", str(fix))
    return message.replace(f"{CONTAINER_TASK_DIR}/", f"{task.dir}/").replace(f"{CONTAINER_TASK_DIR}:", f"{task.dir}:")
