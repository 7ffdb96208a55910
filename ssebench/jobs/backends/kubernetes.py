"""The Kubernetes backend: each run is one Job (docs/kubernetes.md).

``run`` creates the run's Secret (API keys), NetworkPolicy and Job (kube_manifests.py),
watches the Pod until the agent container has ended, grades in the daemon container
(the task is there, as in Docker's sidecar), copies results.json, dialog.jsonl, the
grading files and both containers' logs into the run's folder, and deletes every object
before it returns, also on cancel or error. A run the cluster loses (evicted, deleted,
image missing, node gone) is an ``infra`` outcome, which the scheduler retries.
Everything a job makes carries its labels, so ``sweep`` finds what a killed scheduler left.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from ssebench.container import results as results_file
from ssebench.jobs.backend import Outcome, Resources, RunSpec
from ssebench.jobs.backends import kube_manifests as km
from ssebench.jobs.backends import kube_pod

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)  # env names that go into the Secret
GRADE_ARGV = ["ssebench", "grade", "--task", f"{km.TASK_DIR}/task.toml", "--tree", km.TREE_DIR, "--json"]
GRADED_STATUSES = ("passed", "checks_failed")
AGENT_STATUSES = ("agent_timeout", "agent_failed")
DELETE_TIMEOUT = 120.0
RUN_MARGIN = 900.0  # seconds past the agent's timeout before a run counts as lost (builds, grading)

Images = Callable[[RunSpec], tuple[str, str]]  # spec → (data image, agent image)


def _minor(version: Any) -> int:
    digits = re.match(r"\d+", str(version.minor))
    return int(digits.group()) if digits else 0


def split_env(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(plain variables, secret ones): names with KEY, TOKEN, SECRET or PASSWORD go to the Secret."""
    plain = {k: v for k, v in env.items() if not SECRET_NAME.search(k)}
    return plain, {k: v for k, v in env.items() if SECRET_NAME.search(k)}


def classify(folder: Path, end: kube_pod.PodEnd | None, collect_error: str | None = None) -> Outcome:
    """The run's outcome from its results.json (the jobs' rule: graded, agent, else infra)."""
    if end is not None and end.reason != "agent_exited":
        return Outcome("infra", end.reason, None, end.detail)
    if collect_error is not None:
        return Outcome("infra", "collect_failed", None, collect_error)
    results = kube_pod_results(folder)
    status = results.get("status") if results else None
    code = results.get("exit_code") if results else None
    if status in GRADED_STATUSES:
        return Outcome("graded", str(status), code, "every check passed" if status == "passed" else "a check failed")
    if status in AGENT_STATUSES:
        return Outcome("agent", str(status), code, str(results.get("error") or "") if results else "")
    if isinstance(status, str):
        return Outcome("infra", status, code, str(results.get("error") or "") if results else "")
    return Outcome(
        "infra", "no_results", None, f"the agent container ended ({end.detail if end else '?'}) without results.json"
    )


def kube_pod_results(folder: Path) -> dict[str, Any] | None:
    from ssebench.container.engine import read_results

    return read_results(folder / results_file.RESULTS_FILE)


class KubernetesBackend:
    """Runs on a cluster through the official client; one Job per run."""

    name: ClassVar[str] = "kubernetes"

    def __init__(
        self,
        *,
        images: Images,
        namespace: str = "default",
        kubeconfig: Path | None = None,
        pull_policy: str = "IfNotPresent",
        model_cidrs: Sequence[str] = (),
        extra_containers: Callable[[RunSpec], Sequence[Mapping[str, Any]]] | None = None,
    ) -> None:
        from kubernetes import client, config

        api = config.new_client_from_config(config_file=str(kubeconfig) if kubeconfig else None)
        self.api_client: Any = api
        self.core: Any = client.CoreV1Api(api)  # Any: the client's models are Optional everywhere
        self.batch: Any = client.BatchV1Api(api)
        self.net: Any = client.NetworkingV1Api(api)
        self.namespace = namespace
        self.images = images
        self.pull_policy = pull_policy
        self.model_cidrs = tuple(model_cidrs)
        self.extra_containers = extra_containers
        self.server_minor = _minor(client.VersionApi(api).get_code(_request_timeout=15))

    def capacity(self) -> Resources:
        """The allocatable CPUs and memory of the Ready nodes."""
        cpus, memory = 0.0, 0
        for node in self.core.list_node().items:
            ready = [c for c in node.status.conditions or [] if c.type == "Ready" and c.status == "True"]
            if ready and not node.spec.unschedulable:
                cpus += _cpu(node.status.allocatable.get("cpu", "0"))
                memory += _bytes(node.status.allocatable.get("memory", "0"))
        return Resources(cpus, memory)

    def plan(self, spec: RunSpec) -> tuple[km.PodPlan, dict[str, str]]:
        data_image, agent_image = self.images(spec)
        plain, secrets = split_env(spec.env)
        if spec.model:
            plain["SSE_AGENT_MODEL"] = spec.model
        if spec.command is None:  # a bundled agent: its run recipe
            from ssebench.jobs.backends.kube_agent import agent_launch

            command, extra = agent_launch(spec, spec.env)
            plain.update({k: v for k, v in extra.items() if k not in secrets})
        else:
            command = spec.command
        plan = km.PodPlan(
            job_id=spec.job_id,
            run_id=spec.run_id,
            data_image=data_image,
            agent_image=agent_image,
            command=tuple(command),
            env=plain,
            secret_keys=tuple(secrets),
            level=spec.level,
            cpus=spec.cpus,
            memory=spec.memory,
            server_minor=self.server_minor,
            agent_timeout=spec.agent_timeout,
            model_cidrs=self.model_cidrs,
            extra_containers=tuple(self.extra_containers(spec)) if self.extra_containers else (),
            pull_policy=self.pull_policy,
        )
        return plan, secrets

    def run(self, spec: RunSpec, cancel: threading.Event) -> Outcome:
        plan, secrets = self.plan(spec)
        name = km.object_name(spec.job_id, spec.run_id)
        try:
            self._create(km.manifests(plan, secrets))
            end = kube_pod.wait_for_agent(
                self.core,
                self.namespace,
                km.label_value(spec.job_id),
                km.label_value(spec.run_id),
                cancel,
                _deadline(spec),
            )
            error = self._collect(end, spec.folder) if end.reason == "agent_exited" and end.pod else None
            if end.pod:
                self._save_logs(end.pod, spec.folder)
            return classify(spec.folder, end, error)
        finally:
            self._delete(name)

    def _create(self, objects: list[dict[str, Any]]) -> None:
        create: dict[str, Callable[..., Any]] = {
            "Secret": self.core.create_namespaced_secret,
            "NetworkPolicy": self.net.create_namespaced_network_policy,
            "Job": self.batch.create_namespaced_job,
        }
        for obj in objects:
            create[obj["kind"]](self.namespace, obj)

    def _collect(self, end: kube_pod.PodEnd, folder: Path) -> str | None:
        """Results out of the Pod; grading in the daemon when the agent ran to an end."""
        assert end.pod is not None
        try:
            kube_pod.copy_results(self.core, self.namespace, end.pod, folder)
            results = kube_pod_results(folder)
            if results is not None and results.get("exit_code") in (0, 5, 6):
                self._grade(end.pod, folder, results)
            return None
        except (kube_pod.CollectError, OSError) as error:
            return str(error)
        finally:
            kube_pod.mark_collected(self.core, self.namespace, end.pod, "daemon")

    def _grade(self, pod: str, folder: Path, results: dict[str, Any]) -> None:
        """As Docker's sidecar: grade where the task is, merge the typed verdict into the record."""
        from ssebench import runrecord
        from ssebench.supervise import tail_lines

        out, err = folder / "grading.json", folder / "grading.log"
        code = kube_pod.exec_to_file(self.core, self.namespace, pod, "daemon", GRADE_ARGV, out, err)
        grading = results_file.grading_of(code, out, tail_lines(err))
        try:
            record = runrecord.read(folder)
        except runrecord.RecordError as error:
            raise kube_pod.CollectError(str(error)) from None
        runrecord.write(folder, results_file.with_grading(record, grading, "pod", task_file=f"{km.TASK_DIR}/task.toml"))

    def _save_logs(self, pod: str, folder: Path) -> None:
        """container.log (the agent's output) and daemon.log, streamed to disk."""
        from kubernetes.client.exceptions import ApiException

        for container, file in (("agent", "container.log"), ("daemon", "daemon.log")):
            try:
                resp = self.core.read_namespaced_pod_log(
                    pod, self.namespace, container=container, _preload_content=False
                )
                with open(folder / file, "wb") as out:
                    for chunk in resp.stream(1 << 16):
                        out.write(chunk)
                resp.release_conn()
            except ApiException:
                continue

    def _delete(self, name: str) -> None:
        """Every object of the run, and wait until its Pod is gone (nothing left behind)."""
        from kubernetes.client.exceptions import ApiException

        body = {"propagationPolicy": "Background", "gracePeriodSeconds": 0}
        for delete in (
            self.batch.delete_namespaced_job,
            self.net.delete_namespaced_network_policy,
            self.core.delete_namespaced_secret,
        ):
            try:
                delete(name, self.namespace, body=body)
            except ApiException as error:
                if error.status != 404:
                    raise
        self._wait_gone(f"job-name={name}")

    def _wait_gone(self, selector: str) -> None:
        from kubernetes.client.exceptions import ApiException

        deadline = time.monotonic() + DELETE_TIMEOUT
        while time.monotonic() < deadline:
            pods = self.core.list_namespaced_pod(self.namespace, label_selector=selector).items
            for pod in pods:
                try:
                    self.core.delete_namespaced_pod(pod.metadata.name, self.namespace, grace_period_seconds=0)
                except ApiException as error:
                    if error.status != 404:
                        raise
            if not pods:
                return
            time.sleep(0.5)

    def sweep(self, job_id: str) -> None:
        """Everything labelled with the job: Jobs, Pods, Secrets, NetworkPolicies."""
        selector = km.job_selector(job_id)
        ns, body = self.namespace, {"propagationPolicy": "Background"}
        self.batch.delete_collection_namespaced_job(ns, label_selector=selector, body=body)
        self.net.delete_collection_namespaced_network_policy(ns, label_selector=selector)
        self.core.delete_collection_namespaced_secret(ns, label_selector=selector)
        self._wait_gone(selector)


def _deadline(spec: RunSpec) -> float | None:
    limit = spec.phase_timeouts.get("run") or (spec.agent_timeout + RUN_MARGIN if spec.agent_timeout else None)
    return time.monotonic() + limit if limit else None


_SUFFIX = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def _bytes(quantity: str) -> int:
    for suffix, factor in _SUFFIX.items():
        if quantity.endswith(suffix):
            return int(float(quantity[: -len(suffix)]) * factor)
    return int(float(quantity))


def _cpu(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)
