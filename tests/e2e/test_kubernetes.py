"""The Kubernetes backend on a real cluster (issue 22): ssebench's own one-node cluster,
built from Debian's kubernetes 1.20.2 source (tests/helpers/kube.py), on loopback only.

Where it cannot be built or started (not root, no packages), every test here skips saying
why; in CI (CI=true) that fails instead. The images come from the Docker layers
(tests/e2e/test_docker.py's engine and base image) and are imported into the cluster's
containerd (``imagePullPolicy: Never``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench import runrecord
from tests.e2e.test_docker import base_image, docker_host  # noqa: F401  (session fixtures, shared)
from tests.helpers.gatewayagent import GATEWAY_AGENT
from tests.helpers.kube import CLUSTER, Cluster, ClusterUnavailable, start_cluster
from tests.helpers.registry import Registry, RegistryUnavailable, start_registry

# A group of their own (one cluster per worker session). `make test` runs them in a pytest of
# their own beside the other tests (scripts/pytest-all.sh), so the Kubernetes build (make
# test-deps, in the background) overlaps the other tests and these start once it is done; a plain
# pytest runs them last (tests/conftest.py). They share the Docker engine with test_docker.py:
# `make test` starts it before both pytests and stops it after them, so no session's end stops it
# under another (docker_host stops only an engine it started itself).
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(3600), pytest.mark.xdist_group("kubernetes")]
ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "examples" / "tasks" / "demo-overflow"
FIX = ROOT / "examples" / "tasks" / "demo-overflow.fix.patch"


@pytest.fixture(scope="session")
def kube_cluster() -> Iterator[Cluster]:
    pytest.importorskip("kubernetes", reason="the kubernetes client is not installed (pip install -e '.[test]')")
    try:
        cluster = start_cluster()
    except ClusterUnavailable as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no Kubernetes cluster in CI: {error}")
        pytest.skip(f"no Kubernetes cluster: {error}")
    try:
        yield cluster
    finally:
        cluster.stop()


def _clients(cluster: Cluster):
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    return client.CoreV1Api(api), client.BatchV1Api(api), client.NetworkingV1Api(api)


def leftovers(cluster: Cluster, namespace: str = "default") -> dict[str, list[str]]:
    """What ssebench left in the namespace: Jobs, Pods, Secrets, NetworkPolicies by name."""
    core, batch, net = _clients(cluster)
    selector = "app.kubernetes.io/managed-by=ssebench"
    found = {
        "jobs": batch.list_namespaced_job(namespace, label_selector=selector).items,
        "pods": core.list_namespaced_pod(namespace, label_selector=selector).items,
        "secrets": core.list_namespaced_secret(namespace, label_selector=selector).items,
        "networkpolicies": net.list_namespaced_network_policy(namespace, label_selector=selector).items,
    }
    return {kind: [item.metadata.name for item in items] for kind, items in found.items()}


def test_the_cluster_runs_a_pod(kube_cluster: Cluster) -> None:
    """The pause image (the tree's build/pause) as a Pod: scheduled, Running, deleted."""
    core, _, _ = _clients(kube_cluster)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sse-smoke", "labels": {"app.kubernetes.io/managed-by": "ssebench"}},
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [{"name": "p", "image": "ssebench.local/pause:3.4.1", "imagePullPolicy": "Never"}],
        },
    }
    core.create_namespaced_pod("default", pod)
    try:
        deadline = time.monotonic() + 120
        while core.read_namespaced_pod("sse-smoke", "default").status.phase != "Running":
            assert time.monotonic() < deadline, core.read_namespaced_pod("sse-smoke", "default").status
            time.sleep(0.5)
        node = core.read_node("localhost")
        assert node.status.node_info.kubelet_version == "v1.20.2"
    finally:
        core.delete_namespaced_pod("sse-smoke", "default", grace_period_seconds=0)
    deadline = time.monotonic() + 60
    while leftovers(kube_cluster)["pods"]:
        assert time.monotonic() < deadline, leftovers(kube_cluster)
        time.sleep(0.5)


@pytest.fixture(scope="session")
def kube_images(kube_cluster: Cluster, base_image: str) -> dict[str, str]:  # noqa: F811
    """The task image and the demo task's data image, imported into the cluster."""
    from ssebench.container import docker
    from ssebench.jobs.backends import kube_images as ki

    engine = docker.DockerEngine.locate()
    task_image = docker.build_task_image(engine, base_image)
    data = ki.build_data_image(engine, task_image, TASK, TASK / "src")
    load = ki.ctr_loader(CLUSTER)
    return {"task": ki.publish(engine, task_image, None, load), "data": ki.publish(engine, data, None, load)}


def test_images_reach_the_cluster_once(kube_images: dict[str, str], base_image: str) -> None:  # noqa: F811
    """Issue 34: publishing an image the node's containerd holds (the session imported it)
    imports nothing: its Docker image ID is the config digest containerd lists."""
    from ssebench.container import docker
    from ssebench.jobs.backends import kube_images as ki

    class Counted(ki.LocalCluster):
        def __init__(self) -> None:
            super().__init__(CLUSTER)
            self.loads = 0

        def load(self, archive: Path) -> None:
            self.loads += 1
            super().load(archive)

    engine = docker.DockerEngine.locate()
    task_image = docker.build_task_image(engine, base_image)
    cluster = Counted()
    began = time.monotonic()
    assert ki.publish(engine, task_image, None, cluster) == kube_images["task"]
    assert cluster.loads == 0, "imported again"
    assert ki.held(ki.image_id(engine, task_image), cluster.digests(kube_images["task"]))
    print(f"[kube] publish of the task image the node holds: {time.monotonic() - began:.2f} s")


def _run(folder: Path, run_id: str, command: tuple[str, ...], level: int = 2, agent: str | None = None):
    from ssebench.jobs.backend import Capacity, JobRun
    from ssebench.runrecord import RunSpec

    folder.mkdir(parents=True, exist_ok=True)
    spec = RunSpec(
        task_file=str(TASK / "task.toml"),
        task_id="demo-overflow",
        agent=agent,
        command=None if agent else command,
        level=level,
        backend="kubernetes",
        agent_timeout=300.0,
        job_id="kube-e2e",
        run_id=run_id,
        attempt=1,
    )
    return JobRun(spec, agent or "custom", {}, Capacity(1.0, 2 << 30), folder)


def _backend(cluster: Cluster, images: dict[str, str]):
    from ssebench.jobs.backends.kubernetes import KubernetesBackend

    return KubernetesBackend(
        images=lambda spec: (images["data"], images["task"]), kubeconfig=cluster.kubeconfig, pull_policy="Never"
    )


RUN_FOLDER_FILES = [
    "agent-stderr.log",
    "agent-stdout.log",
    "container.log",
    "daemon.log",
    "grading.json",
    "grading.log",
    "results.json",
    "server.log",
]


def _pod_record(folder: Path, status: str, exit_code: int):
    """A run folder collected from a Pod: exactly these files, the record graded in the Pod."""
    from ssebench import runrecord

    assert sorted(p.name for p in folder.iterdir() if p.name != "calls") == RUN_FOLDER_FILES
    if (folder / "calls").exists():  # the agent called test_patch: each call's text (calls/<n>.txt)
        assert all(p.suffix == ".txt" and p.stem.isdigit() for p in (folder / "calls").iterdir())
    record = runrecord.read(folder)
    assert (record.status, record.exit_code, record.passed, record.mode) == (
        status,
        exit_code,
        exit_code == 0,
        "sidecar",
    )
    return record


def test_a_run_that_fixes_the_task_passes(kube_cluster: Cluster, kube_images: dict[str, str], tmp_path: Path) -> None:
    """A custom agent applies the fix in the agent container; grading in the daemon passes."""
    patch = FIX.read_text()
    fix = ("sh", "-c", f"cat > /tmp/fix.patch <<'EOF'\n{patch}EOF\ngit apply /tmp/fix.patch")
    backend = _backend(kube_cluster, kube_images)
    run = _run(tmp_path / "fix", "fix", fix)
    record = backend.run(run, threading.Event())
    assert (record.outcome.value, record.status, record.exit_code) == ("passed", "passed", 0), record
    assert (record.passed, record.task.id, record.spec) == (True, "demo-overflow", run.spec)
    assert record.stages["grading"].where == "pod"
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}


def test_a_run_that_does_nothing_fails_its_checks(
    kube_cluster: Cluster, kube_images: dict[str, str], tmp_path: Path
) -> None:
    backend = _backend(kube_cluster, kube_images)
    record = backend.run(_run(tmp_path / "idle", "idle", ("true",)), threading.Event())
    assert (record.outcome.value, record.status, record.exit_code) == ("failed", "checks_failed", 1)
    folder = tmp_path / "idle"
    assert _pod_record(folder, "checks_failed", 1) == record
    assert (record.task.id, record.task.file, record.task.tree) == ("demo-overflow", "/task/task.toml", "/tree")
    assert record.never_called and record.calls == ()
    grading = record.stages["grading"]
    assert (grading.state, grading.detail, grading.passed, grading.where) == ("done", "a check failed", False, "pod")
    assert record.grading is not None
    assert [(c.check, c.state) for c in record.grading.checks] == [
        ("build", "passed"),
        ("pocs", "failed"),
        ("intent", "failed"),
        ("functional", "passed"),
    ]
    assert (folder / "daemon.log").read_text().startswith("ssebench daemon: task 'demo-overflow' at difficulty 2 ")
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}


def test_an_image_that_is_not_there_is_an_infra_failure(kube_cluster: Cluster, tmp_path: Path) -> None:
    from ssebench import runrecord

    backend = _backend(kube_cluster, {"data": "ssebench.local/nothing:1", "task": "ssebench.local/nothing:1"})
    record = backend.run(_run(tmp_path / "gone", "gone", ("true",)), threading.Event())
    assert (record.outcome.value, record.status) == ("infrastructure", "image_not_found")
    assert record.reason is not None and record.reason.startswith("container stage: ErrImageNeverPull: ")
    assert runrecord.read(tmp_path / "gone") == record
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}
    shutil.rmtree(tmp_path / "gone", ignore_errors=True)


def test_sweep_removes_what_a_killed_scheduler_left(
    kube_cluster: Cluster, kube_images: dict[str, str], tmp_path: Path
) -> None:
    """Resume: the objects of a run whose scheduler died are found by the job's label."""
    from ssebench.jobs.backends import kube_manifests as km

    backend = _backend(kube_cluster, kube_images)
    plan, _ = backend.plan(_run(tmp_path, "orphan", ("sleep", "600")))
    backend._create(km.manifests(plan, {"SOME_API_KEY": "k"}))
    assert leftovers(kube_cluster)["secrets"] == [km.object_name("kube-e2e", "orphan")]
    backend.sweep("kube-e2e")
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}


# --- the jobs command with --backend kubernetes (the Done-when) ------------------------

CLI_TIMEOUT = 1800


def _cli(cluster: Cluster, *args: str | Path, timeout: float = CLI_TIMEOUT):
    from tests.helpers.jobs import jobs

    return jobs(*args, "--backend", "kubernetes", "--kubeconfig", cluster.kubeconfig, timeout=timeout)


def test_jobs_kubernetes_backend_runs_the_job(
    kube_cluster: Cluster, kube_images: dict[str, str], tmp_path: Path
) -> None:
    """The 16-run job of tests/helpers/jobs.py (2 tasks × 2 custom agents × 2 levels × 2
    attempts), two Jobs at a time: every run folder and the report exact, nothing left."""
    from tests.helpers.jobs import assert_report, assert_run_folders, write_job

    job = write_job(tmp_path)
    began = time.monotonic()
    done = _cli(kube_cluster, "run", job, "--results", tmp_path / "out")
    print(f"[kube] ssebench jobs run --backend kubernetes (16 runs, 2 at a time): {time.monotonic() - began:.1f} s")
    assert done.returncode == 0, done.stderr
    assert_run_folders(tmp_path / "out", kube=True)
    assert_report(tmp_path / "out")
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}


def _popen_cli(cluster: Cluster, *args: str | Path):
    import subprocess

    from tests.helpers.jobs import JOBS, jobs_env

    argv = [*JOBS, *map(str, args), "--backend", "kubernetes", "--kubeconfig", str(cluster.kubeconfig)]
    return subprocess.Popen(argv, env=jobs_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _sleeper_job(tmp_path: Path, command: list[str]) -> Path:
    from tests.helpers.jobs import toggle_task

    task = toggle_task(tmp_path / "toggle")
    job = tmp_path / "job.toml"
    job.write_text(f'tasks = ["{task.file}"]\n[[agents]]\nname = "sleeper"\ncommand = {json.dumps(command)}\n')
    return job


def _job_pod(cluster: Cluster, out: Path, proc, deadline: float = 600) -> str:
    """The name of the first Running Pod of the job in OUT (while PROC runs)."""
    from ssebench.jobs.backends import kube_manifests as km
    from ssebench.jobs.state import read

    core, _, _ = _clients(cluster)
    end = time.monotonic() + deadline
    while time.monotonic() < end and proc.poll() is None:
        if (out / "job.json").exists():
            selector = km.job_selector(read(out)["job_id"])
            for pod in core.list_namespaced_pod("default", label_selector=selector).items:
                if pod.status.phase == "Running":
                    return pod.metadata.name
        time.sleep(0.5)
    raise AssertionError(f"no Running pod of the job (exit status {proc.poll()})")


def test_jobs_kubernetes_ctrl_c_then_resume_leave_nothing(
    kube_cluster: Cluster, kube_images: dict[str, str], tmp_path: Path
) -> None:
    """SIGINT while the run's Pod runs: exit 130, the run cancelled, nothing in the
    namespace; resume runs it to its end, and again nothing is left."""
    import signal

    from ssebench.jobs.state import read

    job, out = _sleeper_job(tmp_path, ["sh", "-c", "sleep 20"]), tmp_path / "out"
    proc = _popen_cli(kube_cluster, "run", job, "--results", out)
    try:
        _job_pod(kube_cluster, out, proc)
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    row = read(out)["runs"][0]
    assert row["state"] == "ended"
    assert runrecord.read(out / row["folder"]).status == "cancelled"
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}
    done = _cli(kube_cluster, "resume", out)
    assert done.returncode == 0, done.stderr
    row = read(out)["runs"][0]
    record = runrecord.read(out / row["folder"])
    assert (row["state"], record.status, record.exit_code, row["tries"]) == ("ended", "checks_failed", 1, 2)
    assert runrecord.read(out / "tries" / f"{row['run_id']}.try1").status == "cancelled"
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}


def test_jobs_kubernetes_retries_a_lost_pod(kube_cluster: Cluster, kube_images: dict[str, str], tmp_path: Path) -> None:
    """The run's Pod deleted mid-run the normal way (its grace period: the agent is stopped,
    the Pod turns Failed before it is gone): the try's record says pod_lost, and why; the
    scheduler retries the run, whose second try passes."""
    from ssebench.jobs.state import read

    job, out = _sleeper_job(tmp_path, ["sh", "-c", "sleep 15; echo fixed > state.txt"]), tmp_path / "out"
    proc = _popen_cli(kube_cluster, "run", job, "--results", out)
    try:
        name = _job_pod(kube_cluster, out, proc)
        _clients(kube_cluster)[0].delete_namespaced_pod(name, "default")  # the default grace period
        _, stderr = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    row = read(out)["runs"][0]
    record = runrecord.read(out / row["folder"])
    assert (row["state"], record.status, record.exit_code, row["tries"]) == ("ended", "passed", 0, 2)
    lost = runrecord.read(out / "tries" / f"{row['run_id']}.try1")
    assert (lost.outcome.value, lost.status, lost.reason) == (
        "infrastructure",
        "pod_lost",
        f"pod {name} was deleted before the run ended",
    )
    assert (lost.spec.run_id, lost.spec.attempt, lost.spec.backend) == (row["run_id"], 1, "kubernetes")
    [retried] = [line for line in stderr.splitlines() if line.endswith(" · will be tried again")]
    assert re.fullmatch(
        rf"\[0/1\] toggle · sleeper · L2 · a1 · infrastructure · \d+\.\d s · {re.escape(lost.reason)} · will be tried again",
        retried,
    ), retried
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}


# --- --registry: images pushed to a registry, pulled by the cluster's containerd -----------


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    """Debian's docker-registry on 127.0.0.1:REGISTRY_PORT, its storage in the test's folder."""
    try:
        started = start_registry(tmp_path / "registry")
    except RegistryUnavailable as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no registry in CI: {error}")
        pytest.skip(f"no registry: {error}")
    try:
        yield started
    finally:
        started.stop()


def _node_has_images(cluster: Cluster, wanted: list[str], deadline: float = 120) -> set[str]:
    """The node's image names once they include WANTED (the kubelet refreshes its image list
    in the node status every few seconds); what it reports at DEADLINE otherwise."""
    core, _, _ = _clients(cluster)
    end = time.monotonic() + deadline
    while True:
        names = {name for image in core.read_node("localhost").status.images or [] for name in image.names or []}
        if set(wanted) <= names or time.monotonic() > end:
            return names
        time.sleep(2)


def test_jobs_kubernetes_registry_push_and_pull(
    kube_cluster: Cluster,
    base_image: str,  # noqa: F811
    registry: Registry,
    tmp_path: Path,
) -> None:
    """`--registry 127.0.0.1:PORT/sse`: the data and task images pushed there (docker push, plain
    HTTP on loopback), pulled by the node (imagePullPolicy IfNotPresent, never imported), one
    fixing run graded passed; the catalog lists both, no registry tag stays in the engine."""
    from ssebench.container.engine import DockerEngine
    from ssebench.jobs.state import read
    from tests.helpers.jobs import fixer_command

    job, out = tmp_path / "job.toml", tmp_path / "out"
    job.write_text(
        f"tasks = [{json.dumps(str(TASK))}]\nlevels = [2]\nattempts = 1\n"
        f'[[agents]]\nname = "fixer"\ncommand = {json.dumps(fixer_command(tmp_path))}\n'
    )
    done = _cli(kube_cluster, "run", job, "--results", out, "--registry", f"{registry.address}/sse")
    assert done.returncode == 0, done.stderr
    [row] = read(out)["runs"]
    assert (row["run_id"], row["state"], row["tries"]) == ("demo-overflow.fixer.L2.a1", "ended", 1)
    folder = out / row["folder"]
    record = _pod_record(folder, "passed", 0)
    assert (record.task.id, record.difficulty.level if record.difficulty else None) == ("demo-overflow", 2)
    grading = record.stages["grading"]
    assert (grading.state, grading.detail, grading.passed, grading.where) == ("done", "every check passed", True, "pod")
    assert [c.outcome for c in record.calls] == ["passed"]
    assert (folder / "server.log").read_text().count("test_patch call ") == 1
    assert registry.catalog() == ["sse/ssebench-data", "sse/ssebench-task"]
    pushed = registry.references()
    assert len(pushed) == 2
    assert set(pushed) <= _node_has_images(kube_cluster, pushed)
    tags = DockerEngine.locate().docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    assert [tag for tag in tags if tag.startswith(registry.address)] == []
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}


# --- a bundled agent, its scripted model API one more container of the same Pod ------------

MODEL_PORT = 8900
MODEL_DIR = "/opt/sse-models"


@pytest.fixture(scope="session")
def claude_kube_images(
    kube_images: dict[str, str],
    base_image: str,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, str]:
    """The claude layer and a model image (the task image + tests/e2e/models), imported."""
    from ssebench.container import docker
    from ssebench.jobs.backends import kube_images as ki

    engine = docker.DockerEngine.locate()
    # built (or found) again: another checkout's build on a shared engine may have removed it
    task_image = docker.build_task_image(engine, base_image)
    agent = docker.build_agent_image(engine, "claude", task_image)
    context = tmp_path_factory.mktemp("model-image")
    shutil.copytree(ROOT / "tests" / "e2e" / "models", context / "tests" / "e2e" / "models")
    (context / "Dockerfile").write_text(f"FROM {task_image}\nCOPY tests {MODEL_DIR}/tests\n")
    model = "ssebench-e2e-model:1"
    built = engine.docker("build", "--network", "none", "-q", "-t", model, str(context), timeout=600)
    assert built.returncode == 0, built.stderr
    load = ki.ctr_loader(CLUSTER)
    return {
        **kube_images,
        "agent": ki.publish(engine, agent, None, load),
        "model": ki.publish(engine, model, None, load),
    }


def _model_container(image: str) -> dict:
    """The scripted Anthropic API on the Pod's loopback; it records into the results folder."""
    argv = ["python3", "-m", "tests.e2e.models", "claude", "--port", str(MODEL_PORT)]
    return {
        "name": "model",
        "image": image,
        "imagePullPolicy": "Never",
        "command": [*argv, "--record", "/results/model-requests.jsonl"],
        "workingDir": MODEL_DIR,
        "volumeMounts": [{"name": "results", "mountPath": "/results"}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}},
    }


def test_a_bundled_agent_runs_with_its_model_in_the_pod(
    kube_cluster: Cluster, claude_kube_images: dict[str, str], tmp_path: Path
) -> None:
    """Claude Code (its run recipe) against the scripted model API in the same Pod: it calls
    test_patch once; graded in the daemon; the API key came through the Secret."""
    from dataclasses import replace

    from ssebench.jobs.backends.kubernetes import KubernetesBackend

    images = claude_kube_images
    backend = KubernetesBackend(
        images=lambda spec: (images["data"], images["agent"]),
        kubeconfig=kube_cluster.kubeconfig,
        pull_policy="Never",
        extra_containers=lambda spec: [_model_container(images["model"])],
    )
    env = {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{MODEL_PORT}", "ANTHROPIC_API_KEY": "sk-ant-e2e-scripted"}
    run = replace(_run(tmp_path / "claude", "claude", (), agent="claude"), env=env)
    record = backend.run(run, threading.Event())
    folder = tmp_path / "claude"
    requests = [json.loads(line) for line in (folder / "model-requests.jsonl").read_text().splitlines()]
    assert (record.outcome.value, record.status, record.exit_code) == ("failed", "checks_failed", 1), record
    assert (record.task.id, record.dialog, record.spec.agent) == ("demo-overflow", "dialog.jsonl", "claude")
    assert record.stages["grading"].where == "pod"
    assert len(record.calls) == 1 and record.agent is not None and record.agent.calls == 1
    assert (folder / "server.log").read_text().count("test_patch call ") == 1
    assert any(r.get("headers", {}).get("x-api-key") == "sk-ant-e2e-scripted" for r in requests)
    events = [json.loads(line) for line in (folder / "dialog.jsonl").read_text().splitlines()]
    tools = [e for e in events if e["type"] == "tool"]
    assert [(t["name"], t["status"]) for t in tools] == [
        ("mcp__ssebench__test_patch", "running"),
        ("mcp__ssebench__test_patch", "success"),
    ]
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}


# --- the job's model gateway, reached from the Pods through the API server's port-forward ---


def test_jobs_kubernetes_backend_through_the_model_gateway(
    kube_cluster: Cluster, kube_images: dict[str, str], tmp_path: Path
) -> None:
    """[gateway] with --backend kubernetes: LiteLLM's proxy on this machine's 127.0.0.1, each
    run's model requests carried from its Pod's loopback through the API server's
    port-forward: the model API gets test_patch's exact text; what each run used is in its
    record; eight requests at once against max_tokens 250 end as budget with the exact
    reason; no tunnel log (nothing broke), nothing left in the cluster, no key in any file."""
    from tests.e2e.conftest import install_gateway
    from tests.e2e.models import OpenAIChatModel
    from tests.helpers.jobs import jobs, toggle_task

    litellm = install_gateway()
    task = toggle_task(tmp_path / "toggle")
    argv = lambda *args: json.dumps(["python3", "-c", GATEWAY_AGENT, *args])  # noqa: E731
    with OpenAIChatModel() as model:
        job = tmp_path / "job.toml"
        job.write_text(
            f'tasks = ["{task.file}"]\n'
            f'[gateway]\nurl = "{model.url}/v1"\nkey_env = "SSE_E2E_VENDOR_KEY"\n'
            'prices = { "scripted-model" = { input = 2.0, output = 8.0 } }\n'
            f'[[agents]]\nname = "ok"\ncommand = {argv("2", "fix")}\n'
            f'[[agents]]\nname = "parallel"\ncommand = {argv("8")}\nmax_tokens = 250\n',
            encoding="utf-8",
        )
        env = {"SSE_GATEWAY_LITELLM": str(litellm), "SSE_E2E_VENDOR_KEY": "sk-upstream-never-shown"}
        began = time.monotonic()
        done = jobs(*_kube_args(kube_cluster, "run", job, "--results", tmp_path / "out"), env=env, timeout=CLI_TIMEOUT)
        print(
            f"[kube] ssebench jobs run --backend kubernetes through the gateway (2 runs): {time.monotonic() - began:.1f} s"
        )
        asked = [r.body["messages"][0]["content"] for r in model.requests if r.path.endswith("/chat/completions")]
    assert done.returncode == 0, done.stderr
    runs = tmp_path / "out" / "runs"
    ok = json.loads((runs / "toggle.ok.L2.a1" / "results.json").read_text())
    parallel = json.loads((runs / "toggle.parallel.L2.a1" / "results.json").read_text())
    assert (ok["spec"]["backend"], ok["status"], ok["agent"]["exit_code"]) == ("kubernetes", "passed", 0)
    called = (runs / "toggle.ok.L2.a1" / ok["calls"][0]["text"]).read_text()
    assert [text for text in asked if text != "fix it"] == [called, called]  # test_patch's text, exactly
    usage = {"input_tokens": 200, "output_tokens": 20, "cached_tokens": 0, "cost_usd": 0.00056, "source": "gateway"}
    assert ok["agent"]["usage"] == ok["gateway"]["usage"] == usage  # 2 × (100 in, 10 out) at $2 / $8 per million
    assert (parallel["status"], parallel["outcome"], parallel["passed"]) == ("budget", "budget", False)
    assert parallel["reason"] == (
        "the run's model budget ran out: 330 tokens used of max_tokens 250; 5 requests refused "
        "(counted at the model gateway)"
    )
    assert len(asked) == ok["gateway"]["requests"] + parallel["gateway"]["requests"] == 5
    assert not list(runs.glob("*/gateway-tunnel.log"))  # the tunnels never broke
    assert leftovers(kube_cluster) == {"jobs": [], "pods": [], "secrets": [], "networkpolicies": []}
    for path in (tmp_path / "out").rglob("*"):
        assert not path.is_file() or b"sk-ssebench-" not in path.read_bytes(), path


def _kube_args(cluster: Cluster, *args: str | Path) -> tuple[str | Path, ...]:
    return (*args, "--backend", "kubernetes", "--kubeconfig", cluster.kubeconfig)


def _user_kubeconfig(cluster: Cluster, folder: Path, name: str) -> Path:
    """A kubeconfig of a user the cluster's CA vouches for and no RBAC binding names."""
    import subprocess

    import yaml

    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    ca = Path(admin["clusters"][0]["cluster"]["certificate-authority"])
    key, csr, crt = folder / f"{name}.key", folder / f"{name}.csr", folder / f"{name}.crt"
    for argv in (
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", key, "-out", csr],
        ["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca.with_suffix(".key"), "-CAcreateserial",
         "-CAserial", folder / "ca.srl", "-days", "1", "-out", crt],
    ):  # fmt: skip
        subprocess.run([str(a) for a in argv], check=True, capture_output=True)
    config = {**admin, "users": [{"name": name, "user": {"client-certificate": str(crt), "client-key": str(key)}}]}
    config["contexts"] = [{**admin["contexts"][0], "context": {**admin["contexts"][0]["context"], "user": name}}]
    path = folder / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_preflight_names_a_user_who_may_not_port_forward(kube_cluster: Cluster, tmp_path: Path) -> None:
    """The runs' tunnels need port-forward (RBAC); the backend asks the API server before the job."""
    from ssebench.jobs.backends.kubernetes import KubernetesBackend

    def problems(kubeconfig: Path) -> list[str]:
        images = lambda spec: ("unused", "unused")  # noqa: E731
        return KubernetesBackend(images=images, kubeconfig=kubeconfig).gateway_problems()

    assert problems(kube_cluster.kubeconfig) == []
    assert problems(_user_kubeconfig(kube_cluster, tmp_path, "sse-nobody")) == [
        "the model gateway's tunnels need port-forward to the runs' Pods, which the kubeconfig's user may not do "
        "in namespace default (RBAC: get and create on pods/portforward)"
    ]
