"""Jobs per minute of the Kubernetes backend on ssebench's local cluster (issue 22).

N runs of an instant agent (``true``) on a task whose checks are all ``true``, WORKERS at
a time (the scheduler's threads), each a whole Job: Secret, NetworkPolicy, Job, watch,
grade in the daemon, tar of the results, delete. Prints Jobs per minute, the process's
peak memory (ru_maxrss) and the API requests per run (counted at the client).

    scripts/kube-cluster.sh start   # once (root; scripts/kube-build.sh build first)
    .venv/bin/python benchmarks/bench_kubernetes.py [N] [WORKERS] [CPUS]   # default: 500 4 0.5

CPUS is each run's CPUs (requests = limits, split between the agent and the daemon): at
0.2 the Python start-ups of the entrypoint and the daemon, throttled to 0.1 CPU each,
took most of a run (4.9 Jobs/minute).
"""

from __future__ import annotations

import resource
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TASK_TOML = """id = "instant"
source = "src"
[build]
run = "true"
[pocs]
run = "true"
files = ["pocs/one"]
[functional]
run = "true"
"""


def instant_task(folder: Path) -> Path:
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "README").write_text("nothing to fix\n")
    (folder / "pocs").mkdir()
    (folder / "pocs" / "one").write_text("x\n")
    (folder / "task.toml").write_text(TASK_TOML)
    return folder / "task.toml"


def images(task: Path) -> tuple[str, str]:
    from ssebench.container import docker
    from ssebench.jobs.backends import kube_images as ki
    from tests.helpers.kube import CLUSTER

    engine = docker.DockerEngine.locate()
    task_image = docker.build_task_image(engine, "ssebench-base:bookworm")
    data = ki.build_data_image(engine, task_image, task.parent, task.parent / "src")
    load = ki.ctr_loader(CLUSTER)
    return ki.publish(engine, data, None, load), ki.publish(engine, task_image, None, load)


def main(count: int, workers: int, cpus: float) -> None:
    from ssebench.jobs.backend import Capacity, JobRun
    from ssebench.jobs.backends.kubernetes import KubernetesBackend
    from ssebench.runrecord import RunSpec
    from tests.helpers.kube import start_cluster

    cluster = start_cluster()
    with tempfile.TemporaryDirectory(prefix="bench-kube-") as scratch:
        task = instant_task(Path(scratch) / "task")
        data, agent = images(task)
        backend = KubernetesBackend(images=lambda _s: (data, agent), kubeconfig=cluster.kubeconfig, pull_policy="Never")
        calls = [0]
        original = backend.api_client.call_api

        def counted(*args, **kwargs):
            calls[0] += 1
            return original(*args, **kwargs)

        backend.api_client.call_api = counted
        from ssebench.jobs.backends import kube_pod

        exec_to_file = kube_pod.exec_to_file

        def counted_exec(*args, **kwargs):  # exec streams run on a client of their own
            calls[0] += 1
            return exec_to_file(*args, **kwargs)

        kube_pod.exec_to_file = counted_exec

        def one(i: int) -> str:
            folder = Path(scratch) / "runs" / str(i)
            folder.mkdir(parents=True)
            spec = RunSpec(
                task_file=str(task), task_id="instant", command=("true",), level=2, backend="kubernetes",
                agent_timeout=60.0, job_id="bench", run_id=f"r{i}", attempt=1,
            )  # fmt: skip
            run = JobRun(spec, "custom", {}, Capacity(cpus, 256 << 20), folder)
            return backend.run(run, threading.Event()).status

        began = time.monotonic()
        with ThreadPoolExecutor(workers) as pool:
            statuses = list(pool.map(one, range(count)))
        took = time.monotonic() - began
        backend.sweep("bench")
    cluster.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{count} Jobs, {workers} at a time, {cpus:g} CPUs each: {took:.1f} s, {count / took * 60:.1f} Jobs/minute")
    print(f"statuses: { {s: statuses.count(s) for s in sorted(set(statuses))} }")
    print(f"API requests per run: {calls[0] / count:.1f} (exec streams included); peak memory: {peak:.0f} MiB")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]) if args else 500, int(args[1]) if len(args) > 1 else 4, float(args[2]) if len(args) > 2 else 0.5)
