"""Images reach a local cluster once (issue 34, item 6): is a reference in the node's
containerd already this very image?

A real containerd (Debian's, private: its own root, state and socket in a temporary
folder, no CRI), reached the way ``jobs run`` reaches the local cluster's: through
scripts/kube-cluster.sh (``import``, ``ctr``), with images made by
scripts/kube-oci-image.py. The whole path with Docker and the cluster is
tests/e2e/test_kubernetes.py's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.jobs.backends import kube_images as ki

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "scripts" / "kube-cluster.sh"
REF = "ssebench.local/probe:1"

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(os.geteuid() != 0, reason="containerd needs root"),
    pytest.mark.skipif(not (shutil.which("containerd") and shutil.which("ctr")), reason="no containerd here"),
]


@pytest.fixture
def containerd(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private containerd; SSEBENCH_KUBE_DIR names its folder, as the cluster's does."""
    folder = Path(tempfile.mkdtemp(prefix="sse-ctrd-"))  # short: a socket path has 108 bytes
    (folder / "containerd.toml").write_text(
        f'version = 2\nroot = "{folder}/root"\nstate = "{folder}/state"\n'
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
        f'[grpc]\n  address = "{folder}/containerd.sock"\n'
    )
    with open(folder / "log", "wb") as log:
        proc = subprocess.Popen(["containerd", "--config", str(folder / "containerd.toml")], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(
            ["ctr", "--address", str(folder / "containerd.sock"), "version"], capture_output=True
        ).returncode:
            assert proc.poll() is None and time.monotonic() < deadline, (folder / "log").read_text()[-2000:]
            time.sleep(0.1)
        monkeypatch.setenv("SSEBENCH_KUBE_DIR", str(folder))
        yield folder
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        subprocess.run(["umount", "-R", str(folder / "root")], capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _image(tmp: Path, content: str) -> tuple[Path, str]:
    """An OCI archive of REF with one file; (the archive, its config's digest)."""
    rootfs = tmp / f"rootfs-{content}"
    rootfs.mkdir()
    (rootfs / "probe").write_text(content)
    archive = tmp / f"{content}.tar"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "kube-oci-image.py"), str(rootfs), REF, "/probe", str(archive)],
        check=True,
    )
    with tarfile.open(archive) as tar:

        def blob(digest: str) -> dict:
            member = tar.extractfile(f"blobs/sha256/{digest.removeprefix('sha256:')}")
            assert member is not None
            return json.load(member)

        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        manifest = blob(index["manifests"][0]["digest"])
        return archive, manifest["config"]["digest"]


def test_the_node_holds_an_image_only_as_the_same_image(containerd, tmp_path):
    cluster = ki.ctr_loader(CLUSTER)
    first, first_id = _image(tmp_path, "one")
    assert cluster.digests(REF) == set()
    assert not ki.held(first_id, cluster.digests(REF))  # not there: import it
    cluster.load(first)
    digests = cluster.digests(REF)
    assert first_id in digests and len(digests) == 2  # the manifest, its config
    assert ki.held(first_id, digests)  # there: no second import
    assert not ki.held("", digests)  # an engine that did not say: import
    # The same reference, another image (rebuilt): the node's is not it any more.
    second, second_id = _image(tmp_path, "two")
    assert not ki.held(second_id, cluster.digests(REF))
    cluster.load(second)
    assert ki.held(second_id, cluster.digests(REF)) and not ki.held(first_id, cluster.digests(REF))
    assert cluster.digests("ssebench.local/probe:other") == set()


def test_a_node_that_does_not_answer_holds_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("SSEBENCH_KUBE_DIR", str(tmp_path / "absent"))
    assert ki.ctr_loader(CLUSTER).digests(REF) == set()
