"""The images of a Kubernetes run, built from the Docker layers (ssebench/container/images.py).

The agent layer (or the task image for a custom command) runs the agent; the *data image*
is the task image plus the task itself (``/ssebench-data/task``, hidden parts included) and
its tree (``/ssebench-data/tree``): only the ``stage`` and ``daemon`` containers run it.
Images reach the cluster by ``docker push`` to the registry the user names (``--registry``;
the Pods then pull them, ``imagePullPolicy: IfNotPresent``) or, for a local cluster, by
``docker save`` into its containerd (``ctr images import``, ``imagePullPolicy: Never``).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from ssebench.container.engine import DockerEngine, DockerRunError
from ssebench.container.sidecar import UNPRIVILEGED_ID
from ssebench.jobs.backends.kube_manifests import DATA_DIR

DATA_REPOSITORY = "ssebench-data"


def _tree_digest(*roots: Path) -> str:
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:12]


def data_dockerfile(task_image: str) -> str:
    owner = f"{UNPRIVILEGED_ID}:{UNPRIVILEGED_ID}"
    return f"FROM {task_image}\nCOPY --chown={owner} task {DATA_DIR}/task\nCOPY --chown={owner} tree {DATA_DIR}/tree\n"


def build_data_image(engine: DockerEngine, task_image: str, task_dir: Path, source: Path) -> str:
    """The task image with TASK_DIR and its SOURCE tree baked in; reused while unchanged."""
    tag = f"{DATA_REPOSITORY}:{_tree_digest(task_dir, source)}-{hashlib.sha256(task_image.encode()).hexdigest()[:8]}"
    if engine.has_image(tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="ssebench-data-") as context:
        shutil.copytree(task_dir, Path(context) / "task", symlinks=True)
        shutil.copytree(source, Path(context) / "tree", symlinks=True)
        (Path(context) / "Dockerfile").write_text(data_dockerfile(task_image))
        done = engine.docker("build", "--network", "none", "-q", "-t", tag, context, timeout=1800)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-10:])
            raise DockerRunError(f"docker build of the data image {tag} failed:\n{tail}")
    return tag


def publish(engine: DockerEngine, image: str, registry: str | None, load: Callable[[Path], None] | None) -> str:
    """IMAGE where the cluster can run it: REGISTRY/IMAGE pushed, or loaded by LOAD (a local
    cluster's containerd); the reference the manifests name."""
    if registry:
        return push(engine, image, f"{registry.rstrip('/')}/{image}")
    if load is None:
        raise DockerRunError("no --registry and no local cluster to load images into")
    with tempfile.TemporaryDirectory(prefix="ssebench-image-") as scratch:
        archive = Path(scratch) / "image.tar"
        with open(archive, "wb") as out:
            saved = subprocess.run(
                ["docker", "save", image], env=engine.environ(), stdout=out, stderr=subprocess.PIPE, check=False
            )
        if saved.returncode != 0:
            raise DockerRunError(f"docker save {image} failed: {saved.stderr.decode(errors='replace').strip()}")
        load(archive)
    return f"docker.io/library/{image}" if "/" not in image.split(":")[0] else image


def push(engine: DockerEngine, image: str, remote: str) -> str:
    """IMAGE tagged REMOTE and pushed there; the tag is removed again (the image stays), so
    the engine keeps no tag per registry and data image."""
    try:
        for argv in (("tag", image, remote), ("push", remote)):
            done = engine.docker(*argv, timeout=1800)
            if done.returncode != 0:
                lines = (done.stderr or done.stdout).strip().splitlines() or [f"exit status {done.returncode}"]
                raise DockerRunError(f"docker {argv[0]} {remote} failed: {lines[-1]}")
    finally:
        engine.docker("rmi", remote, timeout=120)
    return remote


def ctr_loader(script: Path) -> Callable[[Path], None]:
    """LOAD for ssebench's own local cluster (scripts/kube-cluster.sh import)."""

    def load(archive: Path) -> None:
        from ssebench.jobs.backends.kube_setup import cluster_env

        done = subprocess.run(
            [str(script), "import", str(archive)], capture_output=True, text=True, check=False, env=cluster_env()
        )
        if done.returncode != 0:
            raise DockerRunError(f"importing {archive.name} into the cluster failed: {done.stderr.strip()}")

    return load
