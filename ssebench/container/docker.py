"""Run one task in a Docker container: the engine side of ``ssebench run --docker``.

Images are built from the jinja2 templates (dockerfile.py) with build contexts made here, on
the host, so a build never needs a registry or the network: the ssebench wheels come from
``pip wheel`` on the host and the agent CLI from ``npm install`` on the host, both using the
host's package caches. The base image is the offline Debian one scripts/docker-base-image.sh
imports (override: SSEBENCH_BASE_IMAGE). Images are tagged with a hash of their Dockerfile
and context, so an unchanged image is reused without calling ``docker build``.

A run works on private copies (the user's folders are never written). By default the task's
hidden parts stay out of the agent's reach: a sidecar container holds the task, serves the
daemon on a socket in a shared folder and grades at the end, while the agent's container
gets only the tree and runs ``ssebench entrypoint --sidecar``. The sidecar alone gets what
the check sandbox (bwrap) needs: a seccomp profile letting namespaces and mounts through, an
unmasked /proc, no capabilities, a non-root user. The one-container layout (``sidecar=False``)
gets the same options for its whole container, agent included, which runs non-root too.
The results folder is mounted
at ``/results``, where the entrypoint writes ``results.json`` and ``dialog.jsonl``.
docs/docker.md has the layout and the measured costs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ssebench import __version__
from ssebench.container.dockerfile import (
    CONTAINER_RESULTS_DIR,
    CONTAINER_TASK_DIR,
    DEFAULT_BASE_IMAGE,
    NODE_MAJOR,
    TEMPLATES_DIR,
    DockerfileError,
    agent_cli,
    pinned_version,
    render_agent_dockerfile,
    render_task_dockerfile,
)
from ssebench.daemon.sandbox import DEFAULT_MEMORY_LIMIT, DEFAULT_PIDS_LIMIT
from ssebench.resources import script

PRIVATE_ENGINE_SOCKET = Path(os.environ.get("SSEBENCH_DOCKER_DIR", "/var/lib/ssebench/docker")) / "docker.sock"
TIMEOUT_EXIT = 124  # like timeout(1)
MCP_PORT = 3000  # the port `ssebench agents install` registers in the agent layers (and SSE_MCP_PORT's default)
CONTAINER_TREE_DIR = "/tree"  # the agent's tree in sidecar mode (both containers)
SIDECAR_SOCKET_DIR = "/run/ssebench"  # the daemon's socket folder, shared by both containers
CONTAINER_HOME = "/root"  # HOME in the one-container layout (its user is not root, but the layers open /root)
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
    "--cap-drop", "ALL",
    "--security-opt", "no-new-privileges",
    "--security-opt", "systempaths=unconfined",
    "--security-opt", "apparmor=unconfined",
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


def cache_dir() -> Path:
    root = os.environ.get("SSEBENCH_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ssebench"
    return Path(root)


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

    sidecar: True (the default) keeps the task's hidden parts (task.toml, PoCs, intent diff)
        out of the agent's container: a sidecar container of the task image holds the task
        and serves the daemon on a socket in a shared folder; the agent's container gets only
        the tree (/tree), runs ``ssebench entrypoint --sidecar``, and the sidecar grades the
        tree when the agent is done. Only the sidecar gets what the check sandbox needs
        (:func:`sandbox_options`; non-root, no capabilities). False: one container with the
        whole task at /task (simpler, but the agent can read the hidden parts); that whole
        container, agent included, gets :func:`sandbox_options` and runs as
        :func:`daemon_user` with HOME=/root (opened to every user in the agent layers), so
        its checks run in the sandbox too.

    The Docker engine is the one DOCKER_HOST names, else ssebench's private engine
    (scripts/docker-engine.sh) when it answers, else Docker's default socket.
    Raises DockerRunError with one clear message when no engine answers, the base image is
    missing, or a build fails (with the build's last lines).
    """
    task = _load_task(task_dir)
    network = network or os.environ.get("SSEBENCH_DOCKER_NETWORK") or "host"
    if network == "host":
        port = (env or {}).get("SSE_MCP_PORT", "")
        _check_port_free(int(port) if port.isdigit() else MCP_PORT)  # a bad value: the entrypoint says so
    if agent is not None:
        try:
            agent_cli(agent)
        except DockerfileError as error:
            raise DockerRunError(str(error)) from None
    stage = progress or (lambda _name: None)
    stage("engine")
    engine = DockerEngine.locate()
    base = base_image or os.environ.get("SSEBENCH_BASE_IMAGE") or DEFAULT_BASE_IMAGE
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
    stage("container")
    results_dir.mkdir(parents=True, exist_ok=True)
    for name in ("results.json", "dialog.jsonl", "container.log", "grading.json", "grading.log", "daemon.log"):
        (results_dir / name).unlink(missing_ok=True)  # never report a previous run's files
    log_path = results_dir / "container.log"
    settings = {**(env or {}), "SSE_RESULTS_DIR": CONTAINER_RESULTS_DIR, "SSE_DIFFICULTY": str(difficulty)}
    with _workspace(task_dir, task.source) as space:
        if sidecar:
            exit_code = _run_with_sidecar(
                engine, space, task_image=task_image, image=image, command=agent_command,
                results_dir=results_dir.resolve(), env=settings, network=network, timeout=timeout,
                log_path=log_path, task_id=task.id,
            )
        else:
            exit_code = _run_one_container(
                engine, space, image=image, command=agent_command, results_dir=results_dir, env=settings,
                network=network, timeout=timeout, log_path=log_path,
            )
    stage("results")
    return DockerRunResult(
        exit_code=exit_code,
        image=image,
        results_dir=results_dir,
        results=_read_results(results_dir / "results.json"),
        dialog_path=(results_dir / "dialog.jsonl") if (results_dir / "dialog.jsonl").is_file() else None,
        log_path=log_path,
    )


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


def _load_task(task_dir: Path):  # noqa: ANN202 - ssebench.task.Task, imported lazily
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
        space = _Workspace(task=holder / "task", tree=holder / "tree", sockets=holder / "sockets",
                           results=holder / "results")
        shutil.copytree(task_dir, space.task, symlinks=True)
        shutil.copytree(source, space.tree, symlinks=True)
        space.sockets.mkdir(mode=0o700)
        space.results.mkdir(mode=0o700)
        yield space
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _run_with_sidecar(
    engine: DockerEngine,
    space: _Workspace,
    *,
    task_image: str,
    image: str,
    command: Sequence[str],
    results_dir: Path,
    env: Mapping[str, str],
    network: str,
    timeout: float | None,
    log_path: Path,
    task_id: str,
) -> int:
    """Daemon in a sidecar (no network, the task read-only, checks sandboxed), agent beside
    it, sidecar grades. The agent's container starts once the daemon answers, so a daemon
    that cannot start (no sandbox possible) is reported with its own line at once."""
    sidecar = f"ssebench-{uuid.uuid4().hex[:12]}-daemon"
    socket = f"{SIDECAR_SOCKET_DIR}/daemon.sock"
    uid, gid = daemon_user()
    if (uid, gid) != (os.getuid(), os.getgid()):  # root on the host: hand the copies to the daemon's user
        for path in (space.task, space.tree, space.sockets):
            _chown_tree(path, uid, gid)
    try:
        engine.start_detached(
            name=sidecar,
            image=task_image,
            command=["daemon", "--task", f"{CONTAINER_TASK_DIR}/task.toml", "--tree", CONTAINER_TREE_DIR,
                     "--socket", socket],
            mounts={space.task: f"{CONTAINER_TASK_DIR}:ro", space.tree: CONTAINER_TREE_DIR,
                    space.sockets: SIDECAR_SOCKET_DIR},
            env={"SSE_DIFFICULTY": env["SSE_DIFFICULTY"]},
            options=sandbox_options(uid, gid),
        )
        wait_for_sidecar(engine, sidecar, space.sockets / "daemon.sock")
        exit_code = engine.run_container(
            image=image,
            command=["--sidecar", "--", *command],
            mounts={space.tree: CONTAINER_TREE_DIR, space.sockets: SIDECAR_SOCKET_DIR,
                    results_dir: CONTAINER_RESULTS_DIR},
            env={**env, "SSE_TREE": CONTAINER_TREE_DIR, "SSE_DAEMON_SOCKET": socket},
            network=network,
            timeout=timeout,
            log_path=log_path,
        )
        from ssebench.container.entrypoint import EXIT_AGENT_FAILED, EXIT_AGENT_TIMEOUT, EXIT_PASSED

        # Grading is due when the agent ran to an end (as in process mode, also after a
        # failure or a timeout: the tree may hold a patch); not after a start-up failure.
        results = _read_results(results_dir / "results.json")
        if results is not None and results.get("exit_code") in (EXIT_PASSED, EXIT_AGENT_TIMEOUT, EXIT_AGENT_FAILED):
            exit_code = _grade_in_sidecar(engine, sidecar, results_dir, results, task_id)
        return exit_code
    finally:
        engine.save_logs(sidecar, results_dir / "daemon.log")
        engine.docker("rm", "--force", "--volumes", sidecar)  # --volumes: its workspace too


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
            _chown_tree(path, uid, gid)
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


def daemon_user() -> tuple[int, int]:
    """The uid and gid of the sidecar (and of the whole one-container layout): never root,
    because its /proc is unmasked for bwrap (root could write /proc/sys there). The host user's own ids keep the shared copies
    theirs; for root on the host, 65534 (nobody), and the copies are handed to it."""
    if os.getuid() != 0:
        return os.getuid(), os.getgid()
    return UNPRIVILEGED_ID, UNPRIVILEGED_ID


def sandbox_options(uid: int, gid: int) -> list[str]:
    """``docker run`` options of the daemon's container: the sidecar, or the one container
    of ``sidecar=False`` (the sidecar layout's agent container gets none of them)."""
    if not SANDBOX_SECCOMP_PROFILE.is_file():
        raise DockerRunError(f"the sandbox's seccomp profile is missing: {SANDBOX_SECCOMP_PROFILE} does not exist")
    return ["--user", f"{uid}:{gid}", *SANDBOX_OPTIONS,
            "--security-opt", f"seccomp={SANDBOX_SECCOMP_PROFILE}", *WORKSPACE_MOUNT,
            "--pids-limit", str(SIDECAR_PIDS_LIMIT),
            "--memory", str(SIDECAR_MEMORY_LIMIT), "--memory-swap", str(SIDECAR_MEMORY_LIMIT)]


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid, follow_symlinks=False)
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)


def wait_for_sidecar(engine: DockerEngine, name: str, sock: Path, timeout: float = SIDECAR_START_TIMEOUT) -> dict:
    """The daemon's ``/health`` (over its socket, from the host) once it answers; a sidecar
    that exits first (e.g. the daemon refusing to start without a sandbox) or stays silent
    raises DockerRunError with the container's last lines."""
    import httpx

    deadline = time.monotonic() + timeout
    transport = httpx.HTTPTransport(uds=str(sock))
    with httpx.Client(transport=transport, base_url="http://daemon", timeout=2.0) as client:
        while True:
            if sock.exists():
                try:
                    answer = client.get("/health")
                    if answer.status_code == 200:
                        return answer.json()
                except (httpx.HTTPError, ValueError):
                    pass
            state = engine.docker("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name).stdout.split()
            if state[:1] != ["running"] or time.monotonic() > deadline:
                logs = engine.docker("logs", "--tail", "20", name)
                tail = (logs.stdout + logs.stderr).strip()
                if len(state) == 2 and state[0] == "exited":
                    what = f"exited with status {state[1]}"
                elif state[:1] == ["running"]:
                    what = f"did not answer on its socket within {timeout:.0f} s"
                else:
                    what = f"is {state[0] if state else 'gone'} instead of running"
                raise DockerRunError(f"the daemon's container {what}" + (f":\n{tail}" if tail else ""))
            time.sleep(0.2)


def _grade_in_sidecar(engine: DockerEngine, sidecar: str, results_dir: Path, results: dict, task_id: str) -> int:
    """Final grading where the task is, merged into the agent container's results.json.

    The status follows the entrypoint's rule (docs/container.md, "Exit status"): the
    agent's outcome first, then grading's verdict.
    """
    from ssebench.container.entrypoint import (
        EXIT_CHECKS_FAILED,
        EXIT_GRADING_ERROR,
        EXIT_PASSED,
        STATUS_BY_EXIT,
        write_results_json,
    )

    task_file = f"{CONTAINER_TASK_DIR}/task.toml"
    with open(results_dir / "grading.json", "xb") as out, open(results_dir / "grading.log", "xb") as err:
        code = subprocess.run(
            ["docker", "exec", sidecar, "ssebench", "grade", "--task", task_file, "--tree", CONTAINER_TREE_DIR,
             "--json"],
            env=engine.environ(), stdin=subprocess.DEVNULL, stdout=out, stderr=err, check=False,
            timeout=GRADING_TIMEOUT,
        ).returncode
    report = _read_results(results_dir / "grading.json") if code in (0, 1) else None
    if report is None:
        tail = (results_dir / "grading.log").read_text(encoding="utf-8", errors="replace").strip()
        detail = f"grading failed (ssebench grade exited {code})" + (f":\n{tail[-2000:]}" if tail else "")
        stage, passed = {"state": "failed", "detail": detail}, None
    else:
        passed = code == 0
        stage = {"state": "done", "detail": "every check passed" if passed else "a check failed", "passed": passed}
    results["stages"]["grading"] = {**stage, "where": "sidecar"}
    results["grading"] = report
    results["passed"] = passed
    results["task"] = {**results.get("task", {}), "id": task_id, "file": task_file}
    if results["exit_code"] == EXIT_PASSED:  # the agent finished: grading decides
        new = EXIT_GRADING_ERROR if passed is None else EXIT_PASSED if passed else EXIT_CHECKS_FAILED
        results.update(exit_code=new, status=STATUS_BY_EXIT[new])
        if new == EXIT_GRADING_ERROR:
            results["error"] = stage["detail"]
    write_results_json(results_dir / "results.json", results)
    return results["exit_code"]


def _read_results(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as error:
        raise DockerRunError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise DockerRunError(f"{path}: expected a JSON object")
    return data


@dataclass(frozen=True)
class DockerEngine:
    """The docker CLI pointed at one engine (DOCKER_HOST), with the calls ssebench needs."""

    host: str

    @classmethod
    def locate(cls) -> DockerEngine:
        if shutil.which("docker") is None:
            raise DockerRunError(f"the docker command is not installed ({script('docker-engine.sh')} install)")
        candidates = [os.environ["DOCKER_HOST"]] if os.environ.get("DOCKER_HOST") else []
        if not candidates:
            if PRIVATE_ENGINE_SOCKET.is_socket():
                candidates.append(f"unix://{PRIVATE_ENGINE_SOCKET}")
            candidates.append("unix:///var/run/docker.sock")
        for host in candidates:
            engine = cls(host)
            if engine.answers():
                return engine
        raise DockerRunError(
            f"no Docker engine answers at {' or '.join(candidates)}; "
            f"start ssebench's own with {script('docker-engine.sh')} start, or set DOCKER_HOST"
        )

    def environ(self) -> dict[str, str]:
        # DOCKER_BUILDKIT=0: the classic builder is part of every engine; BuildKit needs the
        # buildx plugin, which Debian's docker.io does not ship.
        return {**os.environ, "DOCKER_HOST": self.host, "DOCKER_BUILDKIT": "0"}

    def docker(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", *args], env=self.environ(), capture_output=True, text=True, timeout=timeout, check=False
        )

    def answers(self) -> bool:
        try:
            return self.docker("version", "--format", "{{.Server.Version}}", timeout=20).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def has_image(self, image: str) -> bool:
        return self.docker("image", "inspect", image).returncode == 0

    def remove_older(self, tag: str) -> None:
        """Remove the other tags of TAG's repository (a new build replaced them), so each code
        change does not leave another agent layer of hundreds of MB behind. Never forced:
        an image a container still uses stays."""
        repository = tag.rsplit(":", 1)[0]
        listed = self.docker("image", "ls", repository, "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
        older = [name for name in listed if name != tag]
        if older:
            self.docker("image", "rm", *older)

    def build(self, tag: str, context: Path, dockerfile: str) -> None:
        """docker build with no network at all: the context holds everything the image needs."""
        (context / "Dockerfile").write_text(dockerfile, encoding="utf-8")
        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as log:
            status = subprocess.run(
                ["docker", "build", "--network", "none", "--force-rm", "--tag", tag, str(context)],
                env=self.environ(), stdout=log, stderr=subprocess.STDOUT, check=False,
            ).returncode
            if status != 0:
                raise DockerRunError(f"docker build of {tag} failed (exit {status}); last lines:\n{_tail(log)}")
        self.remove_older(tag)

    def start_detached(
        self, *, name: str, image: str, command: Sequence[str], mounts: Mapping[Path, str], env: Mapping[str, str],
        options: Sequence[str] = (),
    ) -> None:
        """A background container with no network (the sidecar), with OPTIONS (``docker run``
        flags); removed by the caller."""
        args = ["run", "--detach", "--init", "--name", name, "--network", "none", *options, "--entrypoint", "ssebench"]
        for host_path, container_path in mounts.items():
            args += ["--volume", f"{host_path}:{container_path}"]
        for key, value in env.items():
            args += ["--env", f"{key}={value}"]
        started = self.docker(*args, image, *command)
        if started.returncode != 0:
            raise DockerRunError(f"the sidecar container did not start: {started.stderr.strip()}")

    def save_logs(self, name: str, path: Path) -> None:
        """Container NAME's output into PATH (streamed: never held in memory)."""
        with open(path, "wb") as out:
            subprocess.run(["docker", "logs", name], env=self.environ(), stdin=subprocess.DEVNULL, stdout=out,
                           stderr=subprocess.STDOUT, check=False, timeout=60)

    def run_container(
        self,
        *,
        image: str,
        command: Sequence[str],
        mounts: Mapping[Path, str],
        env: Mapping[str, str],
        network: str,
        timeout: float | None,
        log_path: Path,
        options: Sequence[str] = (),
    ) -> int:
        """docker run IMAGE COMMAND with OPTIONS (``docker run`` flags); its output goes to
        LOG_PATH; returns its exit status. ``--rm`` removes its anonymous volumes too.

        Environment values reach docker through its own environment (``-e NAME``), never on
        its command line, where any user could read an API key in the process list.
        """
        name = f"ssebench-{uuid.uuid4().hex[:12]}"
        args = ["docker", "run", "--rm", "--init", "--name", name, "--network", network, *options]
        for host_path, container_path in mounts.items():
            args += ["--volume", f"{host_path}:{container_path}"]
        for key in env:
            args += ["--env", key]
        args += [image, *command]
        with open(log_path, "xb") as log:
            process = subprocess.Popen(
                args, env={**self.environ(), **env}, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
            try:
                return process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.docker("kill", name)
                process.wait()
                return TIMEOUT_EXIT
            except BaseException:
                self.docker("kill", name)  # Ctrl-C or anything else: leave no container running
                process.wait()
                raise


def _tail(log, lines: int = 25) -> str:  # noqa: ANN001 - a text file object
    log.seek(0)
    return "".join(deque(log, maxlen=lines)).rstrip()


def _digest(*parts: bytes | Path) -> str:
    """sha256 over byte strings and files (content and name), short enough for a tag."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            digest.update(part.name.encode())
            with open(part, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
        else:
            digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()[:12]


def _pip(*args: str, env: Mapping[str, str] | None = None) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", *args, "--quiet", "--disable-pip-version-check"],
        env={**os.environ, **(env or {})}, capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise DockerRunError(f"pip {' '.join(args[:1])} failed (exit {result.returncode}):\n{tail}")


def _requirements(wheel: Path) -> list[str]:
    """The ssebench wheel's own dependencies (no extras), from its METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode("utf-8")
    return sorted(
        line.split(":", 1)[1].strip()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    )


def _link_tree(source: Path, target: Path) -> None:
    """Copy SOURCE to TARGET by hard links where the file system allows (contexts are big)."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=link)


def prepare_task_context(context: Path) -> None:
    """wheels/project/ (ssebench without the example task: selfwheel.py) and wheels/deps/ (cached by requirements)."""
    from ssebench.container.selfwheel import SelfWheelError, build_image_wheel

    try:
        wheel = build_image_wheel(context / "wheels" / "project")
    except SelfWheelError as error:
        raise DockerRunError(str(error)) from None
    requirements = _requirements(wheel)
    deps_cache = cache_dir() / "wheels" / _digest("\n".join(requirements).encode(), sys.version.encode())
    if not deps_cache.is_dir():
        deps_cache.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="staging-", dir=deps_cache.parent))
        try:
            _pip("wheel", "--wheel-dir", str(staging), *requirements)
        except DockerRunError:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        try:
            staging.rename(deps_cache)
        except OSError:  # another run filled the cache first
            shutil.rmtree(staging, ignore_errors=True)
    _link_tree(deps_cache, context / "wheels" / "deps")


def build_task_image(engine: DockerEngine, base_image: str) -> str:
    """The task image for this checkout on BASE_IMAGE; built only when its inputs changed."""
    with tempfile.TemporaryDirectory(prefix="ssebench-context-") as tmp:
        context = Path(tmp)
        prepare_task_context(context)
        dockerfile = render_task_dockerfile(base_image)
        files = sorted(p for p in context.rglob("*") if p.is_file())
        base_id = engine.docker("image", "inspect", "--format", "{{.Id}}", base_image).stdout.strip()
        tag = f"ssebench-task:{__version__}-{_digest(dockerfile.encode(), base_id.encode(), *files)}"
        if not engine.has_image(tag):
            engine.build(tag, context, dockerfile)
        return tag


def host_node() -> Path:
    """The host's Node binary, copied into agent layers; it must be Node NODE_MAJOR or newer."""
    found = shutil.which("node")
    if found is None:
        raise DockerRunError(f"agent layers need Node {NODE_MAJOR} on this machine; no node command found")
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        raise DockerRunError(f"{found} --version printed {version!r}, not a Node version") from None
    if major < NODE_MAJOR:
        raise DockerRunError(f"agent layers need Node {NODE_MAJOR} or newer; {found} is {version}")
    return Path(found).resolve()


def agent_cli_dir(agent: str) -> Path:
    """AGENT's pinned CLI installed with npm on the host, cached per package@version."""
    cli = agent_cli(agent)
    version = pinned_version(agent)
    target = cache_dir() / "agent-cli" / f"{agent}-{version}"
    if (target / "node_modules" / ".bin" / cli.bin).exists():
        return target
    if shutil.which("npm") is None:
        raise DockerRunError(f"installing {cli.package}@{version} for the {agent} layer needs npm; none found")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{agent}-", dir=target.parent))
    (staging / "package.json").write_text(
        json.dumps({"private": True, "dependencies": {cli.package: version}}, indent=2) + "\n", encoding="utf-8"
    )
    result = subprocess.run(
        ["npm", "install", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=staging, capture_output=True, text=True, check=False,
    )
    if result.returncode != 0 or not (staging / "node_modules" / ".bin" / cli.bin).exists():
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise DockerRunError(f"npm install {cli.package}@{version} failed (exit {result.returncode}):\n{tail}")
    try:
        staging.rename(target)
    except OSError:  # another run filled the cache first
        shutil.rmtree(staging, ignore_errors=True)
    return target


def build_agent_image(engine: DockerEngine, agent: str, task_image: str) -> str:
    """AGENT's layer on TASK_IMAGE: host Node + the pinned CLI + ``ssebench agents install``."""
    try:
        dockerfile = render_agent_dockerfile(agent, task_image)
    except DockerfileError as error:
        raise DockerRunError(str(error)) from None
    node = host_node()
    cli_dir = agent_cli_dir(agent)
    lock = cli_dir / "package-lock.json"
    tag = f"ssebench-{agent}:{__version__}-{_digest(dockerfile.encode(), node, lock)}"
    if engine.has_image(tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="ssebench-context-") as tmp:
        context = Path(tmp)
        _link_tree(cli_dir, context / "cli")
        try:
            os.link(node, context / "node")
        except OSError:
            shutil.copy2(node, context / "node")
        engine.build(tag, context, dockerfile)
    return tag
