"""``--backend kubernetes``: its command-line flags and the backend they make (docs/kubernetes.md).

The jobs command (ssebench/jobs/cli.py) calls :func:`add_arguments` on its ``run`` parser
and :func:`from_arguments` when ``--backend kubernetes`` is chosen. Images are built once
per job and task (a lock makes the scheduler's worker threads wait for one build).
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ssebench import settings
from ssebench.jobs.backend import JobRun
from ssebench.resources import script

if TYPE_CHECKING:
    from ssebench.jobs.backends.kubernetes import KubernetesBackend


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("kubernetes backend (--backend kubernetes; docs/kubernetes.md)")
    group.add_argument("--namespace", default="default", help="namespace of the runs' Jobs (default: default)")
    group.add_argument(
        "--registry", default=None, help="push the images there (REG/IMAGE); default: load them into a local cluster"
    )
    group.add_argument(
        "--kubeconfig", type=Path, default=None, help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"
    )
    group.add_argument(
        "--model-cidr",
        action="append",
        type=_cidr,
        default=[],
        metavar="CIDR",
        help="where the agent may connect, TCP 443: its model API (repeat; default: nowhere outside the Pod)",
    )


def _cidr(text: str) -> str:
    import ipaddress

    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an address range (CIDR): {text!r}") from error


class ImageCache:
    """(data image, agent image) of a run, built from the Docker layers and published once:
    each image once per ``jobs run`` (the agent image is every task's), and into a local
    cluster only when its containerd does not hold it already (``kube_images.publish``)."""

    def __init__(self, registry: str | None) -> None:
        self.registry = registry
        self.lock = threading.Lock()
        self.done: dict[tuple[str, str], tuple[str, str]] = {}
        self.published: dict[str, str] = {}  # image -> the reference the manifests name

    def __call__(self, run: JobRun) -> tuple[str, str]:
        key = (run.spec.task_file, run.spec.agent or "")
        with self.lock:
            if key not in self.done:
                self.done[key] = self._build_twice(run)
            return self.done[key]

    def _build_twice(self, run: JobRun) -> tuple[str, str]:
        """Another build on the same engine may remove our tag between build and save
        (DockerEngine.remove_older): then build it again, once."""
        from ssebench.container.engine import DockerRunError

        try:
            return self._build(run)
        except DockerRunError:
            return self._build(run)

    def _build(self, run: JobRun) -> tuple[str, str]:
        from ssebench.container import docker
        from ssebench.jobs.backends import kube_images
        from ssebench.task import load_task

        engine = docker.DockerEngine.locate()
        task_image = docker.build_task_image(engine, settings.text("SSEBENCH_BASE_IMAGE"))
        agent = run.spec.agent
        agent_image = docker.build_agent_image(engine, agent, task_image) if agent else task_image
        task = load_task(run.task)
        data = kube_images.build_data_image(engine, task_image, run.task.parent, task.source)
        cluster = None if self.registry else kube_images.ctr_loader(script("kube-cluster.sh"))
        for image in (data, agent_image):
            if image not in self.published:  # the tags name their content
                self.published[image] = kube_images.publish(engine, image, self.registry, cluster)
        return self.published[data], self.published[agent_image]


def from_arguments(args: argparse.Namespace) -> KubernetesBackend:
    """The backend of ``--backend kubernetes``, from the parsed flags; RuntimeError (one
    line) when the client is not installed or the cluster cannot be reached."""
    try:
        from ssebench.jobs.backends.kubernetes import KubernetesBackend
    except ImportError as error:
        raise RuntimeError(
            f"the kubernetes client is not installed ({error}): pip install 'ssebench[kubernetes]'"
        ) from error
    try:
        return KubernetesBackend(
            images=ImageCache(args.registry),
            namespace=args.namespace,
            kubeconfig=args.kubeconfig,
            pull_policy="IfNotPresent" if args.registry else "Never",
            model_cidrs=args.model_cidr,
        )
    except Exception as error:  # the client's many failures (config, TLS, connection) as one line
        raise RuntimeError(f"cannot reach the cluster: {unreachable(error, args.kubeconfig)}") from error


def unreachable(error: BaseException, kubeconfig: Path | None) -> str:
    """Why the cluster did not answer, in one line (the client's errors span many)."""
    where = f"--kubeconfig {kubeconfig}" if kubeconfig else "$KUBECONFIG or ~/.kube/config"
    reason = getattr(error, "reason", None) or error
    text = " ".join(str(reason).split())
    return f"{type(error).__name__}: {text[:300]} (kubeconfig: {where})"
