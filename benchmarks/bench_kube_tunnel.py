"""What a Kubernetes run's tunnel to the model gateway adds to each model request.

On ssebench's one-node cluster (scripts/kube-cluster.sh start; this checkout's task image built
on the Docker engine, DOCKER_HOST, and imported): a Pod of the task image runs the entrypoint's relay (gatewayroute.
relayed_in_container with SSE_GATEWAY_TUNNEL_PORT), the backend's pool (kube_tunnel.py) keeps
its port-forwards through the API server, and a script in the Pod (over the exec API) sends N
sequential chat requests to its 127.0.0.1 at the scripted OpenAI API's port, each one carried
to the API on this machine. The same script here, straight to the API, is the baseline; the
difference of the medians is the tunnel's cost (no LiteLLM in between: bench_gateway.py has
the proxy's own).

    .venv/bin/python benchmarks/bench_kube_tunnel.py [N]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ssebench.container.gatewayroute import PORT_VAR, TUNNEL_VAR
from ssebench.jobs.backends import kube_pod, kube_tunnel
from tests.e2e.models import OpenAIChatModel

ROOT = Path(__file__).resolve().parent.parent
NAME = "sse-bench-tunnel"
RELAY = "import time\nfrom ssebench.container.gatewayroute import relayed_in_container\nwith relayed_in_container():\n    time.sleep(3600)\n"
CLIENT = """\
import json, statistics, sys, time, urllib.request
url, n, took = sys.argv[1], int(sys.argv[2]), []
body = json.dumps({"model": "scripted-model", "messages": [{"role": "user", "content": "fix it"}]}).encode()
for _ in range(n):
    started = time.perf_counter()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=60).read()
    took.append(time.perf_counter() - started)
print(json.dumps(took))
"""


def task_image() -> str:
    """This checkout's task image, imported into the cluster (as tests/e2e/test_kubernetes.py does)."""
    from ssebench.container import docker
    from ssebench.jobs.backends import kube_images as ki

    base = subprocess.run([str(ROOT / "scripts/docker-base-image.sh")], capture_output=True, text=True, check=True)
    engine = docker.DockerEngine.locate()
    image = docker.build_task_image(engine, base.stdout.strip().splitlines()[-1])
    return ki.publish(engine, image, None, ki.ctr_loader(ROOT / "scripts/kube-cluster.sh"))


def pod(image: str, port: int) -> dict:
    env = [{"name": PORT_VAR, "value": str(port)}, {"name": TUNNEL_VAR, "value": "47161"}]
    container = {"name": "agent", "image": image, "imagePullPolicy": "Never", "command": ["python3", "-c", RELAY]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": NAME, "labels": {"job-name": NAME, "app.kubernetes.io/managed-by": "ssebench"}},
        "spec": {"automountServiceAccountToken": False, "containers": [{**container, "env": env}]},
    }


def stats(took: list[float]) -> str:
    ms = sorted(t * 1000 for t in took)
    return f"median {statistics.median(ms):.1f} ms, p90 {ms[max(0, int(len(ms) * 0.9) - 1)]:.1f} ms"


def main() -> None:
    from kubernetes import client, config

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    kubeconfig = subprocess.run([str(ROOT / "scripts/kube-cluster.sh"), "status"], capture_output=True, text=True)
    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig.stdout.split("=", 1)[1].strip()))
    with OpenAIChatModel() as model, tempfile.TemporaryDirectory() as scratch:
        port = int(model.url.rsplit(":", 1)[1])
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        here = subprocess.run([sys.executable, "-c", CLIENT, url, str(n)], capture_output=True, text=True, check=True)
        direct = json.loads(here.stdout)
        core.create_namespaced_pod("default", pod(task_image(), port))
        try:
            while core.read_namespaced_pod(NAME, "default").status.phase != "Running":
                time.sleep(0.2)
            with kube_tunnel.tunnelled(
                core, "default", NAME, {PORT_VAR: str(port), TUNNEL_VAR: "47161"}, Path(scratch)
            ):
                out, err = Path(scratch) / "out", Path(scratch) / "err"
                argv = ["python3", "-c", CLIENT, url, str(n)]
                code = kube_pod.exec_to_file(core, "default", NAME, "agent", argv, out, err)
                if code != 0:
                    raise SystemExit(f"the client in the Pod exited {code}: {err.read_text()}")
                tunnelled = json.loads(out.read_text())
        finally:
            core.delete_namespaced_pod(NAME, "default", grace_period_seconds=0)
    print(f"{n} sequential chat requests to the scripted API")
    print(f"  straight, here:              {stats(direct)}")
    print(f"  from the Pod, tunnelled:     {stats(tunnelled)}")
    print(f"  the tunnel adds (medians):   {(statistics.median(tunnelled) - statistics.median(direct)) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
