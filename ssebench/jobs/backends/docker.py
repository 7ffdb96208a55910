"""The Docker backend: each run is one ``ssebench run --docker`` child (the sidecar layout).

The child is started like the local backend's (its own process group, PR_SET_PDEATHSIG,
the run's marks in its environment); ssebench/container/engine.py turns those marks into
the labels ``ssebench.job=<job>`` and ``ssebench.run=<job>/<run>`` on both of the run's
containers. So whatever a stopped or killed run leaves is found by label and removed: after
every run, and for a whole job on resume and after Ctrl-C.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from ssebench.jobs.backend import Capacity, JobRun
from ssebench.jobs.backends.local import JOB_VAR, RUN_VAR, LocalBackend, machine
from ssebench.jobs.outcome import CANCELLED, START_FAILED, Clock, stopped_reason, written
from ssebench.runrecord import Backend as RunsOn
from ssebench.runrecord import RunResult

LABELS = {JOB_VAR: "ssebench.job", RUN_VAR: "ssebench.run"}
NETWORK_VAR = "SSEBENCH_DOCKER_NETWORK"
# On the host's network every run's MCP server binds the host's port 3000 (the port the agent
# layers register): such runs go one at a time; a custom command gets no network instead.
_HOST_PORT = threading.Lock()


class DockerBackend(LocalBackend):
    """Runs in task containers on the engine ``ssebench run --docker`` finds (DOCKER_HOST...)."""

    name: ClassVar[str] = "docker"
    runs_as: ClassVar[RunsOn] = "docker"
    extra_args: ClassVar[tuple[str, ...]] = ("--docker",)

    def capacity(self) -> Capacity:
        return machine()  # the engine is on this machine (its CPUs and memory are ours)

    def run(self, run: JobRun, cancel: threading.Event) -> RunResult:
        from ssebench.container.engine import DockerEngine, DockerRunError

        clock = Clock()
        try:
            DockerEngine.locate()
        except DockerRunError as error:
            return written(run, START_FAILED, str(error), clock)
        try:
            if self.env(run).get(NETWORK_VAR, "host") != "host":
                with gateway_socket(run) as routed:
                    return super().run(routed, cancel)
            while not _HOST_PORT.acquire(timeout=0.5):
                if cancel.is_set():
                    return written(run, CANCELLED, stopped_reason(run, CANCELLED), clock)
            try:
                return super().run(run, cancel)
            finally:
                _HOST_PORT.release()
        finally:  # after every run, however it ended: a container costs too much to leave
            remove_labelled(f"{LABELS[RUN_VAR]}={run.job_id}/{run.run_id}")

    def cleanup(self, run: JobRun) -> None:
        """The run's processes here and its containers (an agent container stopped late
        would otherwise write its record over the one the backend wrote)."""
        super().cleanup(run)
        remove_labelled(f"{LABELS[RUN_VAR]}={run.job_id}/{run.run_id}")

    def env(self, run: JobRun) -> dict[str, str]:
        """A custom command's containers get no network (its server is inside its own container)
        unless SSEBENCH_DOCKER_NETWORK says otherwise; a bundled agent keeps the default."""
        env = super().env(run)
        if run.spec.command is not None and NETWORK_VAR not in run.env and not env.get(NETWORK_VAR):
            env[NETWORK_VAR] = "none"
        return env

    def sweep(self, job_id: str) -> None:
        super().sweep(job_id)
        remove_labelled(f"{LABELS[JOB_VAR]}={job_id}")

    def abort(self, job_id: str) -> None:
        super().abort(job_id)
        remove_labelled(f"{LABELS[JOB_VAR]}={job_id}")


def labelled(label: str) -> list[str]:
    """Ids of the containers (running or not) carrying LABEL (``key=value``)."""
    from ssebench.container.engine import DockerEngine, DockerRunError

    try:
        engine = DockerEngine.locate()
    except DockerRunError:
        return []  # no engine: no container of ours can be left on it
    listed = engine.docker("ps", "--all", "--quiet", "--filter", f"label={label}")
    return listed.stdout.split() if listed.returncode == 0 else []


def remove_labelled(label: str) -> None:
    """Remove every container carrying LABEL, with its anonymous volumes."""
    from ssebench.container.engine import DockerEngine

    ids = labelled(label)
    if ids:
        DockerEngine.locate().docker("rm", "--force", "--volumes", *ids, timeout=120)


@contextlib.contextmanager
def gateway_socket(run: JobRun) -> Iterator[JobRun]:
    """RUN with a Unix socket of its own relayed to the job's model gateway (SSE_GATEWAY_SOCKET:
    ``ssebench run --docker`` mounts it into the agent's container) while the block runs; RUN
    as it is when it does not go through a gateway. The socket's folder is private (0700, in
    /tmp: a socket's path has at most 107 bytes) and removed with the relay."""
    from ssebench import relay
    from ssebench.container.gatewayroute import PORT_VAR, SOCKET_VAR

    port = run.env.get(PORT_VAR)
    if not port:
        yield run
        return
    folder = Path(tempfile.mkdtemp(prefix="ssebench-gw-", dir="/tmp"))
    try:
        path = folder / "gateway.sock"
        with relay.relayed(relay.unix_listener(path), relay.to_tcp(int(port))):
            yield replace(run, env={**run.env, SOCKET_VAR: str(path)})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
