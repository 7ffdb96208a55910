"""Publishing the task image into the local cluster (issue 34, item 6): imported again
every time (as before) vs skipped because the node's containerd holds it, side by side.

Run by hand (not a test; ~3 min: the cluster's start, two imports of ~600 MB), as root,
with ssebench's Docker engine and base image (tests/e2e/test_docker.py's):

    .venv/bin/python benchmarks/bench_kube_images.py [--rounds 2]

Starts the local cluster (tests/helpers/kube.py) unless it runs, and stops it again if
it started it. Each round: ``kube_images.publish`` of the task image with the node's
digests ignored (``docker save`` + ``ctr images import``, what every task and every
``jobs run`` did), then as it is (the node's containerd asked first). Prints the medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ssebench import settings
from ssebench.container import docker
from ssebench.jobs.backends import kube_images as ki
from tests.helpers.kube import CLUSTER, start_cluster


class ImportsAlways(ki.LocalCluster):
    """The node's digests ignored: every publish imports (before issue 34)."""

    def digests(self, ref: str) -> set[str]:
        return set()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    cluster = start_cluster()
    try:
        engine = docker.DockerEngine.locate()
        image = docker.build_task_image(engine, settings.text("SSEBENCH_BASE_IMAGE"))
        times: dict[str, list[float]] = {"imported again": [], "skipped (the node holds it)": []}
        for _ in range(args.rounds):
            for label, target in zip(times, (ImportsAlways(CLUSTER), ki.LocalCluster(CLUSTER)), strict=True):
                t0 = time.monotonic()
                ki.publish(engine, image, None, target)
                times[label].append(time.monotonic() - t0)
                print(f"  {label}: {times[label][-1]:.2f} s", file=sys.stderr, flush=True)
    finally:
        cluster.stop()
    med = {label: statistics.median(values) for label, values in times.items()}
    print(f"publish of {image}, medians of {args.rounds}:")
    for label, value in med.items():
        print(f"  {label:30s} {value:7.2f} s")
    print(f"  ratio: {med['imported again'] / med['skipped (the node holds it)']:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
