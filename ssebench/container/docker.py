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

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ssebench import __version__
from ssebench.container.dockerfile import (
    CHECKOUT,
    CONTAINER_RESULTS_DIR,
    CONTAINER_TASK_DIR,
    DEFAULT_BASE_IMAGE,
    NODE_MAJOR,
    DockerfileError,
    agent_cli,
    pinned_version,
    render_agent_dockerfile,
    render_task_dockerfile,
)

PRIVATE_ENGINE_SOCKET = Path(os.environ.get("SSEBENCH_DOCKER_DIR", "/var/lib/ssebench/docker")) / "docker.sock"
TIMEOUT_EXIT = 124  # like timeout(1)
# A fixed date for the ssebench wheel, so an unchanged tree gives the same bytes and the
# task image's tag (a hash of its context) stays the same: no rebuild.
WHEEL_EPOCH = "315532800"


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
    if not (task_dir / "task.toml").is_file():
        raise DockerRunError(f"{task_dir}: no task.toml in this folder")
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
            "build it with scripts/docker-base-image.sh (offline, from Debian's packages) "
            "or set SSEBENCH_BASE_IMAGE"
        )
    stage("task image")
    image = build_task_image(engine, base)
    if agent is not None:
        stage("agent image")
        image = build_agent_image(engine, agent, image)
    stage("container")
    results_dir.mkdir(parents=True, exist_ok=True)
    for name in ("results.json", "dialog.jsonl", "container.log"):
        (results_dir / name).unlink(missing_ok=True)  # never report a previous run's files
    log_path = results_dir / "container.log"
    with _task_copy(task_dir) as task_copy:
        exit_code = engine.run_container(
            image=image,
            command=["--", *agent_command],
            mounts={task_copy: CONTAINER_TASK_DIR, results_dir.resolve(): CONTAINER_RESULTS_DIR},
            env={
                **(env or {}),
                "SSE_TASK": f"{CONTAINER_TASK_DIR}/task.toml",
                "SSE_RESULTS_DIR": CONTAINER_RESULTS_DIR,
                "SSE_DIFFICULTY": str(difficulty),
            },
            network=network,
            timeout=timeout,
            log_path=log_path,
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


@contextmanager
def _task_copy(task_dir: Path) -> Iterator[Path]:
    """A private copy of the task for the container to change; the user's folder stays as it is."""
    holder = Path(tempfile.mkdtemp(prefix="ssebench-task-"))  # 0700, ours alone
    try:
        copy = holder / "task"
        shutil.copytree(task_dir, copy, symlinks=True)
        yield copy
    finally:
        shutil.rmtree(holder, ignore_errors=True)


@dataclass(frozen=True)
class DockerEngine:
    """The docker CLI pointed at one engine (DOCKER_HOST), with the calls ssebench needs."""

    host: str

    @classmethod
    def locate(cls) -> DockerEngine:
        if shutil.which("docker") is None:
            raise DockerRunError("the docker command is not installed (scripts/docker-engine.sh install)")
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
            "start ssebench's own with scripts/docker-engine.sh start, or set DOCKER_HOST"
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
    ) -> int:
        """docker run IMAGE COMMAND; its output goes to LOG_PATH; returns its exit status.

        Environment values reach docker through its own environment (``-e NAME``), never on
        its command line, where any user could read an API key in the process list.
        """
        name = f"ssebench-{uuid.uuid4().hex[:12]}"
        args = ["docker", "run", "--rm", "--init", "--name", name, "--network", network]
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
    from collections import deque

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
    """wheels/project/ (ssebench, built from this checkout) and wheels/deps/ (cached by requirements)."""
    if not (CHECKOUT / "pyproject.toml").is_file():
        raise DockerRunError(
            f"the task image is built from an ssebench source checkout; {CHECKOUT} has no pyproject.toml"
        )
    project = context / "wheels" / "project"
    _pip("wheel", "--no-deps", "--wheel-dir", str(project), str(CHECKOUT), env={"SOURCE_DATE_EPOCH": WHEEL_EPOCH})
    (wheel,) = project.glob("*.whl")
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
