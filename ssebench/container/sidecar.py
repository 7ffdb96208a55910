"""The daemon's container: its user and ``docker run`` options, and the sidecar layout.

The sidecar holds the task, serves the daemon on a socket in a shared folder and grades
at the end; the agent's container beside it gets only the tree. The daemon's container
(the sidecar, or the one container of ``sidecar=False``) alone gets what the check
sandbox (bwrap) needs: a seccomp profile letting namespaces and mounts through, an
unmasked /proc, no capabilities, a non-root user. docs/docker.md has the layout.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from ssebench import runrecord
from ssebench.container import results as record
from ssebench.container.dockerfile import CONTAINER_RESULTS_DIR, CONTAINER_TASK_DIR, TEMPLATES_DIR
from ssebench.container.engine import DockerEngine, DockerRunError
from ssebench.container.workspace import DAEMON_SOCKET, TaskCopies
from ssebench.daemon.limits import DEFAULT_MEMORY_LIMIT, DEFAULT_PIDS_LIMIT
from ssebench.runrecord import Grading
from ssebench.supervise import StartupError, tail_lines, wait_for_daemon

CONTAINER_TREE_DIR = "/tree"  # the agent's tree in sidecar mode (both containers)
SIDECAR_SOCKET_DIR = "/run/ssebench"  # the daemon's socket folder, shared by both containers
GRADING_TIMEOUT = 4 * 3600  # seconds; every check's own timeout applies inside
SIDECAR_START_TIMEOUT = 120  # seconds for the sidecar's daemon to answer /health
SANDBOX_SECCOMP_PROFILE = TEMPLATES_DIR / "sandbox-seccomp.json"
UNPRIVILEGED_ID = 65534  # the daemon's uid and gid in its container when the host user is root
# What the check sandbox (bwrap) needs in the daemon's container, and nothing more
# (docs/docker.md, "The check sandbox in a container", has the measurements): a seccomp
# profile that lets namespaces, mount and pivot_root through; an unmasked /proc, so bwrap
# can mount a fresh one (safe only because the container is not root: /proc/sys is
# writable there); AppArmor's docker-default denies mount. No capability, no new privileges.
SANDBOX_OPTIONS = (
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
    "--security-opt",
    "systempaths=unconfined",
    "--security-opt",
    "apparmor=unconfined",
)
# A backstop for the whole sidecar (daemon, checks, grading): the per-check limits there
# come from the daemon's watchdog, a poll (cgroups are read-only in a container), which a
# fork bomb can outrun (seen here without this backstop: the bomb outlived its check and
# the next grade could not start a thread; the host's pid_max is 32768).
# Room for one check at its default limits plus the daemon.
SIDECAR_PIDS_LIMIT = 2 * DEFAULT_PIDS_LIMIT
SIDECAR_MEMORY_LIMIT = DEFAULT_MEMORY_LIMIT + (2 << 30)
# The daemon's workspace (its /tmp) on an anonymous volume: it lives on the engine's data
# root, which holds overlay2's own upper folders, so the sandbox's copy-on-write overlays
# work there (not on the container's overlayfs root); removed with the container.
WORKSPACE_MOUNT = ("--mount", "type=volume,dst=/tmp")


def run_with_sidecar(
    engine: DockerEngine,
    space: TaskCopies,
    *,
    task_image: str,
    image: str,
    command: Sequence[str],
    results_dir: Path,
    env: Mapping[str, str],
    network: str,
    timeout: float | None,
    log_path: Path,
    task_file: str,
    mounts: Mapping[Path, str] | None = None,
) -> tuple[int, Grading | str | None]:
    """Daemon in a sidecar (no network, the task read-only, checks sandboxed), agent beside
    it, sidecar grades. The agent's container starts once the daemon answers, so a daemon
    that cannot start (no sandbox possible) is reported with its own line at once.

    Returns the agent container's exit status and the sidecar's grading (None when none
    was due), which the caller merges into the record
    (:func:`ssebench.container.results.with_grading`)."""
    sidecar = f"ssebench-{uuid.uuid4().hex[:12]}-daemon"
    socket = f"{SIDECAR_SOCKET_DIR}/{DAEMON_SOCKET}"
    uid, gid = daemon_user()
    if (uid, gid) != (os.getuid(), os.getgid()):  # root on the host: hand the copies to the daemon's user
        for path in (space.task, space.tree, space.sockets):
            chown_tree(path, uid, gid)
    try:
        _start_sidecar(engine, space, sidecar, socket, task_image, task_file, env["SSE_DIFFICULTY"], (uid, gid))
        wait_for_sidecar(engine, sidecar, space.sockets / DAEMON_SOCKET)
        exit_code = engine.run_container(
            image=image,
            command=["--sidecar", "--", *command],
            mounts={
                space.tree: CONTAINER_TREE_DIR,
                space.sockets: SIDECAR_SOCKET_DIR,
                results_dir: CONTAINER_RESULTS_DIR,
                **(mounts or {}),
            },
            env={**env, "SSE_TREE": CONTAINER_TREE_DIR, "SSE_DAEMON_SOCKET": socket},
            network=network,
            timeout=timeout,
            log_path=log_path,
        )
        # Grading is due when the agent ran to an end (as in process mode, also after a
        # failure or a timeout: the tree may hold a patch); not after a start-up failure.
        try:
            result = runrecord.read_if_any(results_dir)
        except runrecord.RecordError as error:
            raise DockerRunError(str(error)) from None
        if result is not None and result.exit_code in record.GRADING_DUE:
            return exit_code, _grade_in_sidecar(engine, sidecar, results_dir, task_file)
        return exit_code, None
    finally:
        engine.save_logs(sidecar, results_dir / "daemon.log")
        engine.docker("rm", "--force", "--volumes", sidecar)  # --volumes: its workspace too


def _start_sidecar(
    engine: DockerEngine,
    space: TaskCopies,
    name: str,
    socket: str,
    image: str,
    task_file: str,
    difficulty: str,
    user: tuple[int, int],
) -> None:
    """The sidecar's container, detached: the daemon on the task (read-only) and the tree."""
    engine.start_detached(
        name=name,
        image=image,
        command=[
            "daemon",
            "--task",
            task_file,
            "--tree",
            CONTAINER_TREE_DIR,
            "--socket",
            socket,
        ],
        mounts={
            space.task: f"{CONTAINER_TASK_DIR}:ro",
            space.tree: CONTAINER_TREE_DIR,
            space.sockets: SIDECAR_SOCKET_DIR,
        },
        env={"SSE_DIFFICULTY": difficulty},
        options=sandbox_options(*user),
    )


def daemon_user() -> tuple[int, int]:
    """The uid and gid of the sidecar (and of the whole one-container layout): never root,
    because its /proc is unmasked for bwrap (root could write /proc/sys there). The host
    user's own ids keep the shared copies theirs; for root on the host, 65534 (nobody), and
    the copies are handed to it."""
    if os.getuid() != 0:
        return os.getuid(), os.getgid()
    return UNPRIVILEGED_ID, UNPRIVILEGED_ID


def sandbox_options(uid: int, gid: int) -> list[str]:
    """``docker run`` options of the daemon's container: the sidecar, or the one container
    of ``sidecar=False`` (the sidecar layout's agent container gets none of them)."""
    if not SANDBOX_SECCOMP_PROFILE.is_file():
        raise DockerRunError(f"the sandbox's seccomp profile is missing: {SANDBOX_SECCOMP_PROFILE} does not exist")
    return [
        "--user",
        f"{uid}:{gid}",
        *SANDBOX_OPTIONS,
        "--security-opt",
        f"seccomp={SANDBOX_SECCOMP_PROFILE}",
        *WORKSPACE_MOUNT,
        "--pids-limit",
        str(SIDECAR_PIDS_LIMIT),
        "--memory",
        str(SIDECAR_MEMORY_LIMIT),
        "--memory-swap",
        str(SIDECAR_MEMORY_LIMIT),
    ]


def chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid, follow_symlinks=False)
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)


def wait_for_sidecar(engine: DockerEngine, name: str, sock: Path, timeout: float = SIDECAR_START_TIMEOUT) -> dict:
    """The daemon's ``/health`` (over its socket, from the host) once it answers; a sidecar
    that exits first (e.g. the daemon refusing to start without a sandbox) or stays silent
    raises DockerRunError with the container's last lines."""

    def gone() -> str | None:
        state = engine.docker("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name).stdout.split()
        if state[:1] == ["running"]:
            return None
        if len(state) == 2 and state[0] == "exited":
            return f"exited with status {state[1]}"
        return f"is {state[0] if state else 'gone'} instead of running"

    try:
        return wait_for_daemon(
            sock, what="the daemon's container", where="on its socket", timeout=timeout, gone=gone, poll=0.2
        )[0]
    except StartupError as error:
        logs = engine.docker("logs", "--tail", "20", name)
        tail = (logs.stdout + logs.stderr).strip()
        raise DockerRunError(error.message + (f":\n{tail}" if tail else "")) from None


def _grade_in_sidecar(engine: DockerEngine, sidecar: str, results_dir: Path, task_file: str) -> Grading | str:
    """Final grading where the task is: the typed verdict, or why there is none (grading.json
    and grading.log land in RESULTS_DIR)."""
    with open(results_dir / "grading.json", "xb") as out, open(results_dir / "grading.log", "xb") as err:
        code = subprocess.run(
            [
                "docker",
                "exec",
                sidecar,
                "ssebench",
                "grade",
                "--task",
                task_file,
                "--tree",
                CONTAINER_TREE_DIR,
                "--json",
            ],
            env=engine.environ(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            check=False,
            timeout=GRADING_TIMEOUT,
        ).returncode
    return record.grading_of(code, results_dir / "grading.json", tail_lines(results_dir / "grading.log"))
