"""The docker CLI pointed at one engine: where it is, and the calls ssebench makes.

The engine is the one DOCKER_HOST names, else ssebench's private engine
(scripts/docker-engine.sh) when it answers, else Docker's default socket. Used by
``ssebench run --docker`` (ssebench/container/docker.py) and ``ssebench doctor``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ssebench import settings
from ssebench.resources import script
from ssebench.supervise import tail_lines

TIMEOUT_EXIT = 124  # like timeout(1)
# remove_older keeps another tag built this recently: someone else may be about to use it
KEEP_RECENT_SECONDS = 3600
#: labels of a run's containers, from the variables ``ssebench jobs`` sets for each run, so
#: the job finds (and removes) every container of a run or of a job (docs/jobs.md)
JOB_LABELS = (("SSE_JOB_ID", "ssebench.job"), ("SSE_JOB_RUN", "ssebench.run"))


def job_labels() -> list[str]:
    """``--label`` options naming the job and the run this container belongs to (none outside a job)."""
    from ssebench.settings import raw

    return [f"--label={label}={value}" for var, label in JOB_LABELS if (value := raw(var))]


def private_engine_socket() -> Path:
    """The socket of ssebench's own engine (scripts/docker-engine.sh), under SSEBENCH_DOCKER_DIR."""
    return Path(settings.text("SSEBENCH_DOCKER_DIR")) / "docker.sock"


def cache_dir() -> Path:
    return settings.cache_dir()


def fill_cache(target: Path, prefix: str, fill: Callable[[Path], None]) -> Path:
    """TARGET, a cache folder filled once: *fill* writes into a private staging folder beside
    it, renamed into place when done, so a failure (the error goes on) leaves nothing and a
    reader never sees a half-filled cache; a concurrent run that filled it first wins."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))
    try:
        fill(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    try:
        staging.rename(target)
    except OSError:  # another run filled the cache first
        shutil.rmtree(staging, ignore_errors=True)
    return target


class DockerRunError(Exception):
    """The run could not happen (no engine, no base image, a build failed); says why."""


def _created_at(text: str) -> datetime | None:
    """``docker image ls``'s CreatedAt ("2026-12-02 17:08:31 +0000 UTC"); None if unreadable (kept)."""
    try:
        return datetime.strptime(" ".join(text.split()[:3]), "%Y-%m-%d %H:%M:%S %z")
    except ValueError:
        return None


@dataclass(frozen=True)
class DockerEngine:
    """The docker CLI pointed at one engine (DOCKER_HOST), with the calls ssebench needs."""

    host: str

    @classmethod
    def locate(cls) -> DockerEngine:
        if shutil.which("docker") is None:
            raise DockerRunError(f"the docker command is not installed ({script('docker-engine.sh')} install)")
        named = settings.raw("DOCKER_HOST")
        candidates = [named] if named else []
        if not candidates:
            if (private := private_engine_socket()).is_socket():
                candidates.append(f"unix://{private}")
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
        """Remove the other tags of TAG's repository built over KEEP_RECENT_SECONDS ago (a new
        build replaced them), so each code change does not leave another agent layer of
        hundreds of MB behind. A recent one stays: another checkout or a plain install on the
        same engine may be about to start a container from it, or to build on it. Never
        forced: an image a container still uses stays. Housekeeping only: an engine too busy
        to answer in time leaves them for the next build, never fails the run (seen in CI:
        ``docker image rm`` over 60 s on a loaded machine)."""
        repository = tag.rsplit(":", 1)[0]
        try:
            listed = self.docker(
                "image", "ls", repository, "--format", "{{.Repository}}:{{.Tag}}\t{{.CreatedAt}}"
            ).stdout
            cutoff = datetime.now(UTC) - timedelta(seconds=KEEP_RECENT_SECONDS)
            rows = (line.partition("\t") for line in listed.splitlines())
            older = [name for name, _, created in rows if name != tag and (_created_at(created) or cutoff) < cutoff]
            if older:
                self.docker("image", "rm", *older)
        except subprocess.TimeoutExpired:
            pass

    def build(self, tag: str, context: Path, dockerfile: str) -> None:
        """docker build with no network at all: the context holds everything the image needs."""
        (context / "Dockerfile").write_text(dockerfile, encoding="utf-8")
        with tempfile.TemporaryFile() as log:
            status = subprocess.run(
                ["docker", "build", "--network", "none", "--force-rm", "--tag", tag, str(context)],
                env=self.environ(),
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
            ).returncode
            if status != 0:
                raise DockerRunError(
                    f"docker build of {tag} failed (exit {status}); last lines:\n"
                    + "\n".join(tail_lines(log, 25)).rstrip()
                )
        self.remove_older(tag)

    def start_detached(
        self,
        *,
        name: str,
        image: str,
        command: Sequence[str],
        mounts: Mapping[Path, str],
        env: Mapping[str, str],
        options: Sequence[str] = (),
    ) -> None:
        """A background container with no network (the sidecar), with OPTIONS (``docker run``
        flags); removed by the caller."""
        args = ["run", "--detach", "--init", "--name", name, "--network", "none", *job_labels(), *options]
        args += ["--entrypoint", "ssebench"]
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
            subprocess.run(
                ["docker", "logs", name],
                env=self.environ(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
                timeout=60,
            )

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
        args = ["docker", "run", "--rm", "--init", "--name", name, "--network", network, *job_labels(), *options]
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
