"""The Kubernetes objects of one run, as plain dicts (pure: no client, no cluster).

One run is one Job whose Pod mirrors the Docker sidecar layout (docs/docker.md,
docs/kubernetes.md): a ``stage`` init container copies the task and its tree out of the
run's data image into emptyDirs; the daemon (the task's hidden parts, the check sandbox's
options) serves its socket in a shared emptyDir; the agent container gets the tree, the
socket folder and its results folder, nothing else of the task. From API server 1.29 on
the daemon is a native sidecar (an init container with ``restartPolicy: Always``); before,
it is a second container that exits once the backend has collected the results. Either
way a small ``hold`` keeps the Pod (and so the daemon) up after the agent has exited,
until the backend has graded in the daemon and copied the results (the ``collected`` file).
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ssebench.container.sidecar import SIDECAR_MEMORY_LIMIT, SIDECAR_SOCKET_DIR, UNPRIVILEGED_ID

LABEL_JOB = "ssebench.dev/job"
LABEL_RUN = "ssebench.dev/run"
LABEL_APP = "app.kubernetes.io/managed-by"
MANAGER = "ssebench"
TASK_DIR = "/task"
TREE_DIR = "/tree"
RESULTS_DIR = "/results"
DATA_DIR = "/ssebench-data"  # in the data image: task/ (the whole task) and tree/ (its source)
SECCOMP_PROFILE = "ssebench/sandbox-seccomp.json"  # under the kubelet's seccomp folder
AGENT_EXITED = f"{SIDECAR_SOCKET_DIR}/agent-exited"  # the agent container's exit status
COLLECTED = f"{SIDECAR_SOCKET_DIR}/collected"  # the backend has graded and copied the results
NATIVE_SIDECAR_MINOR = 29  # Kubernetes 1.29: sidecar containers on by default
APPARMOR_FIELD_MINOR = 30  # Kubernetes 1.30: securityContext.appArmorProfile (else the annotation)
USERNS_MINOR = 31  # Kubernetes 1.31: procMount Unmasked only with hostUsers: false
HOLD_LIMIT = 5 * 3600  # seconds the Pod waits for the backend after the agent, then ends anyway


@dataclass(frozen=True)
class PodPlan:
    """What one run's objects need; made by the backend from the scheduler's RunSpec."""

    job_id: str
    run_id: str
    data_image: str  # the task image plus the task (hidden parts included): stage, daemon, hold
    agent_image: str  # the agent layer, or the task image for a custom command
    command: tuple[str, ...]  # what the entrypoint runs after ``--``
    env: Mapping[str, str]  # the agent container's plain variables
    secret_keys: Sequence[str]  # variables read from the run's Secret (API keys)
    level: int
    cpus: float
    memory: int  # bytes, the run's whole Pod
    server_minor: int  # the API server's minor version (1.<minor>)
    agent_timeout: float | None = None
    model_cidrs: Sequence[str] = ()  # where the agent may connect (its model API); empty: nowhere outside
    model_ports: Sequence[int] = (443,)
    extra_containers: Sequence[Mapping[str, Any]] = field(default_factory=tuple)  # e.g. a scripted model API
    pull_policy: str = "IfNotPresent"  # "Never" for images imported into a local cluster
    task_name: str = "task.toml"  # the task file's name in its folder (any name, as with Docker)

    @property
    def task_file(self) -> str:
        """The task file inside the Pod."""
        return f"{TASK_DIR}/{self.task_name}"

    @property
    def native(self) -> bool:
        return self.server_minor >= NATIVE_SIDECAR_MINOR


def object_name(job_id: str, run_id: str) -> str:
    """A DNS-1123 label (<= 63 chars) unique per job and run: readable prefix + hash."""
    digest = hashlib.sha256(f"{job_id}\0{run_id}".encode()).hexdigest()[:10]
    readable = re.sub(r"[^a-z0-9-]+", "-", f"{job_id}-{run_id}".lower()).strip("-")[:40].strip("-")
    return f"sse-{readable}-{digest}" if readable else f"sse-{digest}"


def label_value(text: str) -> str:
    """A label value (<= 63 chars of [A-Za-z0-9_.-], alphanumeric at both ends)."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)[:63].strip("-_.")
    return value or "none"


def labels(plan: PodPlan) -> dict[str, str]:
    return {LABEL_APP: MANAGER, LABEL_JOB: label_value(plan.job_id), LABEL_RUN: label_value(plan.run_id)}


def job_selector(job_id: str) -> str:
    """The label selector of everything a job made (the sweep deletes by it)."""
    return f"{LABEL_APP}={MANAGER},{LABEL_JOB}={label_value(job_id)}"


def _meta(plan: PodPlan) -> dict[str, Any]:
    return {"name": object_name(plan.job_id, plan.run_id), "labels": labels(plan)}


def _template_meta(plan: PodPlan, annotations: Mapping[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": labels(plan)}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def secret(plan: PodPlan, values: Mapping[str, str]) -> dict[str, Any]:
    """The run's API keys: the agent container reads them through secretKeyRef."""
    return {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(plan), "type": "Opaque", "stringData": dict(values)}


def network_policy(plan: PodPlan) -> dict[str, Any]:
    """No ingress; egress only to the model API (and DNS when it is named by host)."""
    egress: list[dict[str, Any]] = []
    if plan.model_cidrs:
        ports = [{"protocol": "TCP", "port": port} for port in plan.model_ports]
        egress.append({"to": [{"ipBlock": {"cidr": cidr}} for cidr in plan.model_cidrs], "ports": ports})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(plan),
        "spec": {
            "podSelector": {"matchLabels": {LABEL_RUN: label_value(plan.run_id), LABEL_JOB: label_value(plan.job_id)}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": egress,
        },
    }


def _quantity_cpu(cpus: float) -> str:
    return f"{max(1, round(cpus * 1000))}m"


def _resources(cpus: float, memory: int) -> dict[str, Any]:
    amount = {"cpu": _quantity_cpu(cpus), "memory": str(memory)}
    return {"requests": dict(amount), "limits": dict(amount)}


def _restricted(uid: int = UNPRIVILEGED_ID) -> dict[str, Any]:
    """No capability, no privilege escalation, never root: the stage and hold containers."""
    return {
        "runAsUser": uid,
        "runAsGroup": uid,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def daemon_security(plan: PodPlan) -> dict[str, Any]:
    """sidecar.SANDBOX_OPTIONS as a securityContext: non-root, no capability, no new
    privileges, the sandbox's seccomp profile (Localhost), an unmasked /proc (the
    ProcMountType feature) and AppArmor unconfined (the field from 1.30, else the annotation)."""
    context = _restricted()
    context["seccompProfile"] = {"type": "Localhost", "localhostProfile": SECCOMP_PROFILE}
    context["procMount"] = "Unmasked"
    if plan.server_minor >= APPARMOR_FIELD_MINOR:
        context["appArmorProfile"] = {"type": "Unconfined"}
    return context


def _mounts(*pairs: tuple[str, str], read_only: Sequence[str] = ()) -> list[dict[str, Any]]:
    return [
        {"name": name, "mountPath": path, **({"readOnly": True} if name in read_only else {})} for name, path in pairs
    ]


def stage_container(plan: PodPlan) -> dict[str, Any]:
    """Copies the task and its tree out of the data image (files owned by the daemon's user).
    The entries one by one: ``cp -a SRC/. DST`` would set the times of the emptyDir's root,
    which is root's, and fail (EPERM)."""
    script = " && ".join(
        f"find {DATA_DIR}/{part} -mindepth 1 -maxdepth 1 -exec cp -a -t {dest}/ {{}} +"
        for part, dest in (("task", TASK_DIR), ("tree", TREE_DIR))
    )
    return {
        "name": "stage",
        "image": plan.data_image,
        "imagePullPolicy": plan.pull_policy,
        "command": ["sh", "-c", script],
        "volumeMounts": _mounts(("task", TASK_DIR), ("tree", TREE_DIR)),
        "securityContext": _restricted(),
        "resources": _resources(0.1, 64 << 20),
    }


def daemon_container(plan: PodPlan) -> dict[str, Any]:
    """The daemon with the task: a native sidecar (the kubelet stops it after the Pod's
    containers), or a container of its own that stops once the results are collected."""
    task = shlex.quote(plan.task_file)
    argv = f"ssebench daemon --task {task} --tree {TREE_DIR} --socket {SIDECAR_SOCKET_DIR}/daemon.sock"
    if plan.native:
        command = ["sh", "-c", f"exec {argv}"]
    else:
        wait = f"until [ -e {COLLECTED} ]; do sleep 0.5; done"
        command = ["sh", "-c", f'{argv} & pid=$!; {wait}; kill -TERM "$pid"; wait "$pid"; exit 0']
    container: dict[str, Any] = {
        "name": "daemon",
        "image": plan.data_image,
        "imagePullPolicy": plan.pull_policy,
        "command": command,
        "env": [{"name": "SSE_DIFFICULTY", "value": str(plan.level)}, {"name": "HOME", "value": "/tmp"}],
        "volumeMounts": _mounts(
            ("task", TASK_DIR),
            ("tree", TREE_DIR),
            ("sockets", SIDECAR_SOCKET_DIR),
            ("results", RESULTS_DIR),
            ("workspace", "/tmp"),
            read_only=("task", "results"),
        ),
        "securityContext": daemon_security(plan),
        "resources": _resources(plan.cpus / 2, min(plan.memory // 2, SIDECAR_MEMORY_LIMIT)),
    }
    if plan.native:
        container["restartPolicy"] = "Always"
        container["startupProbe"] = {
            "exec": {"command": ["test", "-S", f"{SIDECAR_SOCKET_DIR}/daemon.sock"]},
            "periodSeconds": 1,
            "failureThreshold": 120,
        }
    return container


def agent_container(plan: PodPlan) -> dict[str, Any]:
    """The entrypoint in sidecar mode: the tree, the socket folder, its results; its exit
    status goes to a file the backend reads (the Pod keeps running until collected)."""
    script = f'"$@"; status=$?; echo "$status" > {AGENT_EXITED}; exit "$status"'
    env: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in sorted(plan.env.items())]
    env += [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": object_name(plan.job_id, plan.run_id), "key": name}}}
        for name in sorted(plan.secret_keys)
    ]
    fixed = {
        "SSE_TREE": TREE_DIR,
        "SSE_DAEMON_SOCKET": f"{SIDECAR_SOCKET_DIR}/daemon.sock",
        "SSE_RESULTS_DIR": RESULTS_DIR,
        "SSE_DIFFICULTY": str(plan.level),
    }
    if plan.agent_timeout is not None:
        fixed["SSE_AGENT_TIMEOUT"] = f"{plan.agent_timeout:g}"
    env += [{"name": name, "value": value} for name, value in fixed.items()]
    return {
        "name": "agent",
        "image": plan.agent_image,
        "imagePullPolicy": plan.pull_policy,
        "command": ["sh", "-c", script, "agent", "ssebench", "entrypoint", "--sidecar", "--", *plan.command],
        "workingDir": TREE_DIR,
        "env": env,
        "volumeMounts": _mounts(("tree", TREE_DIR), ("sockets", SIDECAR_SOCKET_DIR), ("results", RESULTS_DIR)),
        "securityContext": {"allowPrivilegeEscalation": False, "seccompProfile": {"type": "RuntimeDefault"}},
        "resources": _resources(plan.cpus / 2, max(plan.memory - plan.memory // 2, 64 << 20)),
    }


def hold_container(plan: PodPlan) -> dict[str, Any]:
    """Keeps a native sidecar alive after the agent until the backend has collected."""
    wait = f"i=0; until [ -e {COLLECTED} ] || [ $i -ge {HOLD_LIMIT * 2} ]; do sleep 0.5; i=$((i+1)); done"
    return {
        "name": "hold",
        "image": plan.data_image,
        "imagePullPolicy": plan.pull_policy,
        "command": ["sh", "-c", wait],
        "volumeMounts": _mounts(("sockets", SIDECAR_SOCKET_DIR)),
        "securityContext": _restricted(),
        "resources": _resources(0.01, 16 << 20),
    }


def pod_spec(plan: PodPlan) -> dict[str, Any]:
    init = [stage_container(plan)]
    containers = [agent_container(plan), *[dict(extra) for extra in plan.extra_containers]]
    if plan.native:
        init.append(daemon_container(plan))
        containers.append(hold_container(plan))
    else:
        containers.append(daemon_container(plan))
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 10,
        "securityContext": {"fsGroup": UNPRIVILEGED_ID},
        "initContainers": init,
        "containers": containers,
        "volumes": [{"name": name, "emptyDir": {}} for name in ("task", "tree", "sockets", "results", "workspace")],
    }
    if plan.server_minor >= USERNS_MINOR:
        spec["hostUsers"] = False  # procMount: Unmasked needs a user namespace from 1.31 on
    return spec


def job(plan: PodPlan) -> dict[str, Any]:
    """The run's Job: one Pod, never retried by Kubernetes (the scheduler retries infra failures)."""
    annotations = {} if plan.server_minor >= APPARMOR_FIELD_MINOR else {APPARMOR_ANNOTATION: "unconfined"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(plan),
        "spec": {
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": _template_meta(plan, annotations), "spec": pod_spec(plan)},
        },
    }


APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/daemon"


def manifests(plan: PodPlan, secret_values: Mapping[str, str]) -> list[dict[str, Any]]:
    """Everything the run creates, in creation order (the Job last: it starts the Pod)."""
    objects = [network_policy(plan)]
    if secret_values:
        objects.insert(0, secret(plan, secret_values))
    return [*objects, job(plan)]
