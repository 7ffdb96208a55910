"""The Kubernetes backend's objects (pure functions): layout, security, schema (issue 22)."""

from __future__ import annotations

import json

import pytest

from ssebench.container.sidecar import SANDBOX_SECCOMP_PROFILE, SIDECAR_MEMORY_LIMIT
from ssebench.jobs.backends import kube_manifests as km

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed")
SCHEMA = "1.37.0"  # the newest schema kubernetes-validate 1.37.0 ships (the pin in pyproject.toml)


def plan(minor: int = 37, **overrides) -> km.PodPlan:
    values = dict(
        job_id="nightly",
        run_id="t1/fixer/L2/a1",
        data_image="reg.example/ssebench-data:abc",
        agent_image="reg.example/ssebench-claude:def",
        command=("claude", "-p", "fix it"),
        env={"ANTHROPIC_BASE_URL": "https://api.example/"},
        secret_keys=("ANTHROPIC_API_KEY",),
        level=2,
        cpus=2.0,
        memory=4 << 30,
        server_minor=minor,
        agent_timeout=600.0,
        model_cidrs=("203.0.113.7/32",),
    )
    values.update(overrides)
    return km.PodPlan(**values)


def containers(job: dict, where: str) -> dict[str, dict]:
    return {c["name"]: c for c in job["spec"]["template"]["spec"][where]}


def test_names_are_dns_labels_unique_per_run():
    name = km.object_name("nightly", "t1/fixer/L2/a1")
    assert name.startswith("sse-nightly-t1-fixer-l2-a1-") and len(name) <= 63
    assert name != km.object_name("nightly", "t1/fixer/L2/a2")
    assert len(km.object_name("j" * 200, "r" * 200)) <= 63
    assert km.labels(plan()) == {
        "app.kubernetes.io/managed-by": "ssebench",
        "ssebench.dev/job": "nightly",
        "ssebench.dev/run": "t1-fixer-L2-a1",
    }
    assert km.job_selector("nightly") == "app.kubernetes.io/managed-by=ssebench,ssebench.dev/job=nightly"


def test_native_sidecar_layout_from_1_29():
    job = km.job(plan(29))
    init, main = containers(job, "initContainers"), containers(job, "containers")
    assert list(init) == ["stage", "daemon"] and list(main) == ["agent", "hold"]
    assert init["daemon"]["restartPolicy"] == "Always"
    assert init["daemon"]["startupProbe"]["exec"]["command"] == ["test", "-S", "/run/ssebench/daemon.sock"]


def test_classic_layout_before_1_29_daemon_waits_for_collection():
    job = km.job(plan(20))
    init, main = containers(job, "initContainers"), containers(job, "containers")
    assert list(init) == ["stage"] and list(main) == ["agent", "daemon"]
    assert "restartPolicy" not in main["daemon"]
    script = main["daemon"]["command"][2]
    assert "until [ -e /run/ssebench/collected ]" in script and script.endswith("exit 0")
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"container.apparmor.security.beta.kubernetes.io/daemon": "unconfined"}


def test_hidden_parts_only_in_the_daemon():
    for minor in (20, 37):
        job = km.job(plan(minor))
        every = {**containers(job, "initContainers"), **containers(job, "containers")}
        with_task = {name for name, c in every.items() if any(m["name"] == "task" for m in c["volumeMounts"])}
        assert with_task == {"stage", "daemon"}
        assert {m["name"] for m in every["agent"]["volumeMounts"]} == {"tree", "sockets", "results"}
        assert every["agent"]["image"] == "reg.example/ssebench-claude:def"
        assert every["daemon"]["image"] == "reg.example/ssebench-data:abc"


def test_daemon_gets_the_docker_sidecars_sandbox_options():
    daemon = containers(km.job(plan(37)), "initContainers")["daemon"]
    assert daemon["securityContext"] == {
        "runAsUser": 65534,
        "runAsGroup": 65534,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "Localhost", "localhostProfile": "ssebench/sandbox-seccomp.json"},
        "procMount": "Unmasked",
        "appArmorProfile": {"type": "Unconfined"},
    }
    assert daemon["command"] == [
        "sh",
        "-c",
        "exec ssebench daemon --task /task/task.toml --tree /tree --socket /run/ssebench/daemon.sock",
    ]
    assert {"name": "workspace", "mountPath": "/tmp"} in daemon["volumeMounts"]
    assert json.loads(SANDBOX_SECCOMP_PROFILE.read_text())["defaultAction"] == "SCMP_ACT_ALLOW"


def test_resources_split_the_runs_request():
    job = km.job(plan(37, cpus=2.0, memory=4 << 30))
    agent = containers(job, "containers")["agent"]
    daemon = containers(job, "initContainers")["daemon"]
    assert agent["resources"] == {
        "requests": {"cpu": "1000m", "memory": str(2 << 30)},
        "limits": {"cpu": "1000m", "memory": str(2 << 30)},
    }
    assert daemon["resources"]["limits"] == {"cpu": "1000m", "memory": str(min(2 << 30, SIDECAR_MEMORY_LIMIT))}


def test_agent_env_secret_and_exit_file():
    agent = containers(km.job(plan(37)), "containers")["agent"]
    assert agent["env"][:2] == [
        {"name": "ANTHROPIC_BASE_URL", "value": "https://api.example/"},
        {
            "name": "ANTHROPIC_API_KEY",
            "valueFrom": {
                "secretKeyRef": {"name": km.object_name("nightly", "t1/fixer/L2/a1"), "key": "ANTHROPIC_API_KEY"}
            },
        },
    ]
    assert {"name": "SSE_DIFFICULTY", "value": "2"} in agent["env"]
    assert {"name": "SSE_AGENT_TIMEOUT", "value": "600"} in agent["env"]
    assert agent["command"][:2] == ["sh", "-c"]
    assert agent["command"][2] == '"$@"; status=$?; echo "$status" > /run/ssebench/agent-exited; exit "$status"'
    assert agent["command"][3:] == ["agent", "ssebench", "entrypoint", "--sidecar", "--", "claude", "-p", "fix it"]


def test_network_policy_only_the_model_api():
    policy = km.network_policy(plan())
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["ingress"] == []
    assert policy["spec"]["egress"] == [
        {"to": [{"ipBlock": {"cidr": "203.0.113.7/32"}}], "ports": [{"protocol": "TCP", "port": 443}]}
    ]
    assert km.network_policy(plan(model_cidrs=()))["spec"]["egress"] == []


def test_manifests_order_and_no_secret_without_keys():
    kinds = [obj["kind"] for obj in km.manifests(plan(), {"ANTHROPIC_API_KEY": "k"})]
    assert kinds == ["Secret", "NetworkPolicy", "Job"]
    assert [obj["kind"] for obj in km.manifests(plan(), {})] == ["NetworkPolicy", "Job"]


@pytest.mark.parametrize("minor", [29, 37])
def test_native_sidecar_manifests_match_the_api_schema(minor):
    for obj in km.manifests(plan(minor), {"ANTHROPIC_API_KEY": "k"}):
        kubernetes_validate.validate(obj, SCHEMA, strict=True)


def test_classic_manifests_match_the_api_schema():
    for obj in km.manifests(plan(20), {"ANTHROPIC_API_KEY": "k"}):
        kubernetes_validate.validate(obj, SCHEMA, strict=True)


def _pod(phase="Running", reason=None, waiting=None, agent_exit=None, deleting=False):
    from datetime import UTC, datetime

    from kubernetes import client

    def status(name, state):
        return client.V1ContainerStatus(name=name, image="i", image_id="", ready=False, restart_count=0, state=state)

    agent_state = client.V1ContainerState(running=client.V1ContainerStateRunning())
    if agent_exit is not None:
        agent_state = client.V1ContainerState(terminated=client.V1ContainerStateTerminated(exit_code=agent_exit))
    stage_state = client.V1ContainerState(
        waiting=client.V1ContainerStateWaiting(reason=waiting, message="no such image") if waiting else None
    )
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name="sse-x", deletion_timestamp=datetime.now(UTC) if deleting else None),
        status=client.V1PodStatus(
            phase=phase,
            reason=reason,
            message="The node was low on resource: memory." if reason else None,
            init_container_statuses=[status("stage", stage_state)],
            container_statuses=[status("agent", agent_state)],
        ),
    )


def test_judge_tells_the_clusters_failures_from_the_agents_end():
    from ssebench.jobs.backends.kube_pod import PodEnd, judge

    assert judge(_pod()) is None
    assert judge(_pod(agent_exit=6)) == PodEnd("agent_exited", "exit status 6", "sse-x")
    assert judge(_pod(waiting="ErrImageNeverPull")) == PodEnd(
        "image_not_found", "container stage: ErrImageNeverPull: no such image", "sse-x"
    )
    assert judge(_pod(phase="Failed", reason="Evicted")) == PodEnd(
        "evicted", "pod sse-x: Evicted: The node was low on resource: memory.", "sse-x"
    )
    assert judge(_pod(phase="Unknown")) == PodEnd("node_lost", "pod sse-x: its node stopped answering", "sse-x")
    # Deleted the normal way: while its grace period runs the agent is stopped and the Pod fails;
    # the deletion is what ended the run, not the failure it causes.
    lost = PodEnd("pod_lost", "pod sse-x was deleted before the run ended", "sse-x")
    assert judge(_pod(deleting=True)) == lost
    assert judge(_pod(phase="Failed", agent_exit=143, deleting=True)) == lost


def test_records_and_secret_split(tmp_path):
    """The run's record: the cluster's cause when it lost the run, else the Pod's own record
    naming the job's run (its spec), whatever spec the entrypoint in the Pod wrote."""
    from ssebench import runrecord
    from ssebench.jobs.backends.kube_pod import PodEnd
    from ssebench.jobs.backends.kubernetes import record, split_env
    from ssebench.jobs.outcome import Clock
    from tests.helpers.jobs import job_run, record_of

    assert split_env({"ANTHROPIC_API_KEY": "k", "GH_TOKEN": "t", "ANTHROPIC_BASE_URL": "u"}) == (
        {"ANTHROPIC_BASE_URL": "u"},
        {"ANTHROPIC_API_KEY": "k", "GH_TOKEN": "t"},
    )
    run = job_run(tmp_path)
    lost = record(run, PodEnd("evicted", "pod sse-x: Evicted: low memory", "sse-x"), Clock())
    assert (lost.outcome, lost.status, lost.reason) == (
        runrecord.Outcome.INFRASTRUCTURE,
        "evicted",
        "pod sse-x: Evicted: low memory",
    )
    assert runrecord.read(tmp_path) == lost and lost.spec == run.spec
    pods = record_of(runrecord.Outcome.AGENT_ERROR, "pod-spec")
    runrecord.write(tmp_path, pods)
    agent = record(run, PodEnd("agent_exited", "exit status 6", "sse-x"), Clock())
    assert agent == pods.model_copy(update={"spec": run.spec}) == runrecord.read(tmp_path)
    (tmp_path / "results.json").unlink()
    silent = record(run, PodEnd("agent_exited", "exit status 0", "sse-x"), Clock())
    assert (silent.status, silent.reason) == (
        "no_results",
        "the agent container ended (exit status 0) without writing results.json",
    )


@pytest.mark.parametrize("minor", [20, 37])
def test_the_daemon_reads_the_task_file_by_its_own_name(minor):
    # As with Docker: a task file need not be named task.toml (a quoted name, a space in it).
    for name, shown in (("task.toml", "/task/task.toml"), ("cve 1.toml", "'/task/cve 1.toml'")):
        job = km.job(plan(minor, task_name=name))
        every = {**containers(job, "initContainers"), **containers(job, "containers")}
        assert f"ssebench daemon --task {shown} --tree " in every["daemon"]["command"][2]
    from ssebench.jobs.backends.kubernetes import grade_argv

    assert grade_argv("/task/cve 1.toml")[:4] == ["ssebench", "grade", "--task", "/task/cve 1.toml"]
