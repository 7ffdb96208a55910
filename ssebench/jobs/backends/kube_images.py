"""The images of a Kubernetes run, built from the Docker layers (ssebench/container/images.py).

The agent layer (or the task image for a custom command) runs the agent; the *data image*
is the task image plus the task itself (``/ssebench-data/task``, hidden parts included) and
its tree (``/ssebench-data/tree``): only the ``stage`` and ``daemon`` containers run it.
Images reach the cluster by ``docker push`` to the registry the user names (``--registry``;
the Pods then pull them, ``imagePullPolicy: IfNotPresent``) or, for a local cluster, by
``docker save`` into its containerd (``ctr images import``, ``imagePullPolicy: Never``) —
only when its containerd does not already hold the reference as this very image (its
Docker image ID among the reference's digests: issue 34, a 600 MB import per task and per
``jobs run`` of an image the node had).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from ssebench import settings
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


def publish(engine: DockerEngine, image: str, registry: str | None, cluster: LocalCluster | None) -> str:
    """IMAGE where the cluster can run it: REGISTRY/IMAGE pushed, or imported into a local
    CLUSTER's containerd unless it holds it already; the reference the manifests name."""
    if registry:
        return push(engine, image, f"{registry.rstrip('/')}/{image}")
    if cluster is None:
        raise DockerRunError("no --registry and no local cluster to load images into")
    ref = f"docker.io/library/{image}" if "/" not in image.split(":")[0] else image
    if held(image_id(engine, image), cluster.digests(ref)):
        return ref
    with tempfile.TemporaryDirectory(prefix="ssebench-image-") as scratch:
        archive = Path(scratch) / "image.tar"
        with open(archive, "wb") as out:
            saved = subprocess.run(
                ["docker", "save", image], env=engine.environ(), stdout=out, stderr=subprocess.PIPE, check=False
            )
        if saved.returncode != 0:
            raise DockerRunError(f"docker save {image} failed: {saved.stderr.decode(errors='replace').strip()}")
        cluster.load(archive)
    return ref


def image_id(engine: DockerEngine, image: str) -> str:
    """IMAGE's ID in the Docker engine (``sha256:...``: its config's digest, or with
    containerd's image store its index's); "" when the engine does not say."""
    done = engine.docker("image", "inspect", "--format", "{{.Id}}", image)
    return done.stdout.strip() if done.returncode == 0 else ""


def held(wanted: str, digests: set[str]) -> bool:
    """Does the node hold the image whose ID is WANTED under the reference whose DIGESTS
    (target, manifests, configs) its containerd lists? An unknown ID never is."""
    return wanted.startswith("sha256:") and wanted in digests


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


class LocalCluster:
    """ssebench's own local cluster (scripts/kube-cluster.sh): imports into its containerd,
    and what a reference there is (the ``ctr`` the script runs on the node's socket)."""

    def __init__(self, script: Path) -> None:
        self.script = script

    def _run(self, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:

        return subprocess.run(
            [str(self.script), *argv], capture_output=True, text=True, check=False, env=cluster_env(), timeout=timeout
        )

    def load(self, archive: Path) -> None:
        done = self._run("import", str(archive))
        if done.returncode != 0:
            raise DockerRunError(f"importing {archive.name} into the cluster failed: {done.stderr.strip()}")

    def digests(self, ref: str) -> set[str]:
        """REF's digests in the node's containerd: its target, and below it every manifest
        and config (a docker-save import's config digest is Docker's image ID); empty when
        REF is not there or the node does not answer (then the image is imported)."""
        listed = self._run("ctr", "images", "ls", f"name=={ref}", timeout=60)
        rows = [line.split() for line in listed.stdout.splitlines()[1:]] if listed.returncode == 0 else []
        found: set[str] = set()
        todo = [row[2] for row in rows if len(row) > 2 and row[0] == ref and row[2].startswith("sha256:")]
        while todo and len(found) < 64:
            digest = todo.pop()
            found.add(digest)
            got = self._run("ctr", "content", "get", digest, timeout=60)
            if got.returncode != 0:
                continue
            todo += [d for d in _children(got.stdout) if d not in found]
        return found


def _children(text: str) -> list[str]:
    """The digests an index or manifest (JSON) names: its manifests, its config."""
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    if not isinstance(doc, dict):
        return []
    items = [m for m in doc.get("manifests", []) if isinstance(m, dict)]
    config = doc.get("config")
    if isinstance(config, dict):
        items.append(config)
    return [d for d in (item.get("digest") for item in items) if isinstance(d, str) and d.startswith("sha256:")]


def ctr_loader(script: Path) -> LocalCluster:
    """The local cluster of scripts/kube-cluster.sh (its ``import`` and ``ctr``)."""
    return LocalCluster(script)


#: the local test cluster's settings (ssebench/settings.py): its scripts read them, so
#: ``jobs run`` hands them on as it read them, and the import lands in the cluster they started
CLUSTER_VARIABLES = (
    "SSEBENCH_KUBE_DIR",
    "SSEBENCH_KUBE_API_PORT",
    "SSEBENCH_KUBE_START_TIMEOUT",
    "SSEBENCH_KUBE_CACHE",
)


def cluster_env() -> dict[str, str]:
    """The environment of scripts/kube-cluster.sh (status, import): this one, with the
    cluster's settings as ssebench/settings.py reads them."""
    import os

    env = dict(os.environ)
    for name in CLUSTER_VARIABLES:
        value = settings.raw(name)
        if value is not None and value.strip():
            env[name] = value.strip()
    return env
