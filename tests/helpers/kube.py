"""The private one-node Kubernetes cluster of the Kubernetes backend's tests (issue 22).

    from tests.helpers.kube import Cluster, start_cluster
    cluster = start_cluster()        # builds once (scripts/kube-build.sh), starts scripts/kube-cluster.sh
    cluster.kubeconfig               # Path of the admin kubeconfig (127.0.0.1 only)
    cluster.stop()

Where the cluster cannot be built or started (not root, no packages), :func:`start_cluster`
raises :class:`ClusterUnavailable` with one line saying why: the tests skip with it, except
in CI (``CI=true``), where they fail with it. Times (build, start) are printed to stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "scripts" / "kube-build.sh"
CLUSTER = ROOT / "scripts" / "kube-cluster.sh"
BUILD_TIMEOUT = 1800  # seconds: ~7 min on 2 free cores, more while other tests run
START_TIMEOUT = 300


class ClusterUnavailable(RuntimeError):
    """The cluster could not be built or started; the message is one line."""


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path
    started_here: bool

    def stop(self) -> None:
        if self.started_here:
            _script(CLUSTER, "stop", timeout=120)

    def import_image(self, archive: Path) -> None:
        done = _script(CLUSTER, "import", str(archive), timeout=600)
        if done.returncode != 0:
            raise ClusterUnavailable(f"ctr images import {archive.name} failed: {_last(done)}")


def _script(*argv: object, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, check=False)


def _last(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def _timed(label: str, began: float) -> None:
    print(f"[kube] {label}: {time.monotonic() - began:.1f} s", file=sys.stderr)


def build() -> None:
    """The server binaries, built once per machine (cached in ~/.cache/ssebench/kube)."""
    if _script(BUILD, "bindir", timeout=30).returncode == 0:
        return
    if os.geteuid() != 0:
        raise ClusterUnavailable("the Kubernetes cluster needs root (apt-get install, kubelet, containerd)")
    for step, timeout in (("install", 900), ("build", BUILD_TIMEOUT)):
        began = time.monotonic()
        done = _script(BUILD, step, timeout=timeout)
        if done.returncode != 0:
            raise ClusterUnavailable(f"scripts/kube-build.sh {step} failed: {_last(done)}")
        _timed(f"kube-build.sh {step}", began)


def start_cluster() -> Cluster:
    """A Ready cluster: ours if it already runs, else built and started here."""
    build()
    status = _script(CLUSTER, "status", timeout=30)
    if status.returncode == 0:
        return Cluster(_kubeconfig(status.stdout), started_here=False)
    began = time.monotonic()
    start = _script(CLUSTER, "start", timeout=START_TIMEOUT)
    if start.returncode != 0:
        _script(CLUSTER, "stop", timeout=120)
        raise ClusterUnavailable(f"scripts/kube-cluster.sh start failed: {_last(start)}")
    _timed("kube-cluster.sh start", began)
    return Cluster(_kubeconfig(start.stdout), started_here=True)


def _kubeconfig(output: str) -> Path:
    return Path(output.strip().splitlines()[-1].removeprefix("KUBECONFIG="))
