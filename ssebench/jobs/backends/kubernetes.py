"""The Kubernetes backend: each run is one Job (docs/kubernetes.md).

``run`` creates the run's Secret (API keys), NetworkPolicy and Job (kube_manifests.py),
watches the Pod until the agent container has ended, grades in the daemon container
(the task is there, as in Docker's sidecar), copies results.json, dialog.jsonl, the
grading files and both containers' logs into the run's folder, and deletes every object
before it returns, also on cancel or error. A run the cluster loses (evicted, deleted,
image missing, node gone) ends with a record of the infrastructure's outcome, written here
(the scheduler retries it). Every API request goes through kube_api.py's one retry.
A run through the job's model gateway reaches it while its agent runs through its own
tunnel (kube_tunnel.py: port-forwards opened from here; the Pod never connects out).
Everything a job makes carries its labels, so ``sweep`` finds what a killed scheduler left.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from ssebench import runrecord
from ssebench.container import results as results_file
from ssebench.container.gatewayroute import PORT_VAR, TUNNEL_VAR, tunnel_port
from ssebench.jobs.backend import Capacity, JobRun
from ssebench.jobs.backends import kube_api, kube_pod, kube_tunnel
from ssebench.jobs.backends import kube_manifests as km
from ssebench.jobs.outcome import CANCELLED, NO_RESULTS, RUN_TIMEOUT, Clock, child_record, restated, stopped_reason
from ssebench.runrecord import Backend as RunsOn
from ssebench.runrecord import RunResult

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)  # env names that go into the Secret


def grade_argv(task_file: str) -> list[str]:
    """``ssebench grade`` of the Pod's task, run in its daemon container."""
    return ["ssebench", "grade", "--task", task_file, "--tree", km.TREE_DIR, "--json"]


COLLECT_FAILED = "collect_failed"
DELETE_TIMEOUT = 120.0
RUN_MARGIN = 900.0  # seconds past the agent's timeout before a run counts as lost (builds, grading)

Images = Callable[[JobRun], tuple[str, str]]  # run → (data image, agent image)


def _minor(version: Any) -> int:
    digits = re.match(r"\d+", str(version.minor))
    return int(digits.group()) if digits else 0


def split_env(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(plain variables, secret ones): names with KEY, TOKEN, SECRET or PASSWORD go to the Secret."""
    plain = {k: v for k, v in env.items() if not SECRET_NAME.search(k)}
    return plain, {k: v for k, v in env.items() if SECRET_NAME.search(k)}


def record(run: JobRun, end: kube_pod.PodEnd, clock: Clock, collect_error: str | None = None) -> RunResult:
    """The run's record: the one its Pod wrote (collected into its folder, graded there), or
    one written here when the cluster lost the run or nothing could be collected."""
    child, unreadable = child_record(run)
    if end.reason != "agent_exited":
        reason = stopped_reason(run, end.reason) if end.reason in (CANCELLED, RUN_TIMEOUT) else end.detail
        return restated(run, child, end.reason, reason, clock)
    if collect_error is not None:
        return restated(run, child, COLLECT_FAILED, collect_error, clock)
    if child is None:
        why = unreadable or f"the agent container ended ({end.detail}) without writing results.json"
        return restated(run, None, NO_RESULTS, why, clock)
    if child.spec != run.spec:  # the Pod's entrypoint knew the task, not the job: the record names the job's run
        child = child.model_copy(update={"spec": run.spec})
        runrecord.write(run.folder, child)
    return child


class KubernetesBackend:
    """Runs on a cluster through the official client; one Job per run."""

    name: ClassVar[str] = "kubernetes"
    runs_as: ClassVar[RunsOn] = "kubernetes"

    def __init__(
        self,
        *,
        images: Images,
        namespace: str = "default",
        kubeconfig: Path | None = None,
        pull_policy: str = "IfNotPresent",
        model_cidrs: Sequence[str] = (),
        extra_containers: Callable[[JobRun], Sequence[Mapping[str, Any]]] | None = None,
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
        self.server_minor = _minor(kube_api.call(client.VersionApi(api).get_code))

    def gateway_problems(self) -> list[str]:
        """What stops the runs' tunnels to the job's model gateway (the preflight asks)."""
        return kube_tunnel.access_problems(self.api_client, self.namespace)

    def capacity(self) -> Capacity:
        """The allocatable CPUs and memory of the Ready nodes."""
        cpus, memory = 0.0, 0
        for node in kube_api.call(self.core.list_node).items:
            ready = [c for c in node.status.conditions or [] if c.type == "Ready" and c.status == "True"]
            if ready and not node.spec.unschedulable:
                cpus += _cpu(node.status.allocatable.get("cpu", "0"))
                memory += _bytes(node.status.allocatable.get("memory", "0"))
        return Capacity(cpus, memory)

    def plan(self, run: JobRun) -> tuple[km.PodPlan, dict[str, str]]:
        data_image, agent_image = self.images(run)
        plain, secrets = split_env(run.env)
        spec = run.spec
        if spec.model:
            plain["SSE_AGENT_MODEL"] = spec.model
        if spec.command is None:  # a bundled agent: its run recipe
            from ssebench.jobs.backends.kube_agent import agent_launch

            command, extra = agent_launch(run, run.env)
            plain.update({k: v for k, v in extra.items() if k not in secrets})
        else:
            command = spec.command
        if run.env.get(PORT_VAR):  # through the job's model gateway: its tunnel's port in the Pod
            plain[TUNNEL_VAR] = str(tunnel_port(int(run.env[PORT_VAR])))
        plan = km.PodPlan(
            job_id=run.job_id,
            run_id=run.run_id,
            data_image=data_image,
            agent_image=agent_image,
            command=tuple(command),
            env=plain,
            secret_keys=tuple(secrets),
            level=spec.level,
            cpus=run.need.cpus,
            memory=run.need.memory,
            server_minor=self.server_minor,
            agent_timeout=spec.agent_timeout,
            model_cidrs=self.model_cidrs,
            extra_containers=tuple(self.extra_containers(run)) if self.extra_containers else (),
            pull_policy=self.pull_policy,
            task_name=Path(spec.task_file).name,
        )
        return plan, secrets

    def run(self, run: JobRun, cancel: threading.Event) -> RunResult:
        clock = Clock()
        plan, secrets = self.plan(run)
        name = km.object_name(run.job_id, run.run_id)
        try:
            self._create(km.manifests(plan, secrets))
            with kube_tunnel.tunnelled(self.core, self.namespace, name, plan.env, run.folder):
                end = kube_pod.wait_for_agent(
                    self.core,
                    self.namespace,
                    km.label_value(run.job_id),
                    km.label_value(run.run_id),
                    cancel,
                    _deadline(run),
                )
            collect = end.reason == "agent_exited" and end.pod
            error = self._collect(end, run.folder, plan.task_file) if collect else None
            if end.pod:
                self._save_logs(end.pod, run.folder)
            return record(run, end, clock, error)
        finally:
            self._delete(name)

    def _create(self, objects: list[dict[str, Any]]) -> None:
        """Secret, NetworkPolicy, Job: each created once, also when a try's answer was lost."""
        methods: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
            "Secret": (self.core.create_namespaced_secret, self.core.read_namespaced_secret),
            "NetworkPolicy": (self.net.create_namespaced_network_policy, self.net.read_namespaced_network_policy),
            "Job": (self.batch.create_namespaced_job, self.batch.read_namespaced_job),
        }
        for obj in objects:
            create, read = methods[obj["kind"]]
            kube_api.create(create, read, self.namespace, obj)

    def _collect(self, end: kube_pod.PodEnd, folder: Path, task_file: str) -> str | None:
        """Results out of the Pod; grading in the daemon when the agent ran to an end."""
        assert end.pod is not None
        try:
            kube_pod.copy_results(self.core, self.namespace, end.pod, folder)
            results = runrecord.read_if_any(folder)
            if results is not None and results.exit_code in (0, 5, 6):
                self._grade(end.pod, folder, task_file)
            return None
        except runrecord.RecordError:
            return None  # record() names it (the run's reason) and keeps the file
        except (kube_pod.CollectError, OSError) as error:
            return str(error)
        finally:
            kube_pod.mark_collected(self.core, self.namespace, end.pod, "daemon")

    def _grade(self, pod: str, folder: Path, task_file: str) -> None:
        """As Docker's sidecar: grade where the task is, merge the typed verdict into the record."""
        from ssebench import runrecord
        from ssebench.supervise import tail_lines

        out, err = folder / "grading.json", folder / "grading.log"
        code = kube_pod.exec_to_file(self.core, self.namespace, pod, "daemon", grade_argv(task_file), out, err)
        grading = results_file.grading_of(code, out, tail_lines(err))
        try:
            record = runrecord.read(folder)
        except runrecord.RecordError as error:
            raise kube_pod.CollectError(str(error)) from None
        runrecord.write(folder, results_file.with_grading(record, grading, "pod", task_file=task_file))

    def _save_logs(self, pod: str, folder: Path) -> None:
        """container.log (the agent's output) and daemon.log, streamed to disk (a download
        cut by a transient error is made again from the start)."""
        from kubernetes.client.exceptions import ApiException

        for container, file in (("agent", "container.log"), ("daemon", "daemon.log")):
            try:
                kube_api.retry(functools.partial(self._save_log, pod, container, folder / file))
            except ApiException:
                continue

    def _save_log(self, pod: str, container: str, path: Path) -> None:
        resp = kube_api.call(
            self.core.read_namespaced_pod_log, pod, self.namespace, container=container, _preload_content=False
        )
        with open(path, "wb") as out:
            for chunk in resp.stream(1 << 16):
                out.write(chunk)
        resp.release_conn()

    def _delete(self, name: str) -> None:
        """Every object of the run, and wait until its Pod is gone (nothing left behind)."""
        body = {"propagationPolicy": "Background", "gracePeriodSeconds": 0}
        for delete in (
            self.batch.delete_namespaced_job,
            self.net.delete_namespaced_network_policy,
            self.core.delete_namespaced_secret,
        ):
            _delete_if_there(delete, name, self.namespace, body=body)
        self._wait_gone(f"job-name={name}")

    def _wait_gone(self, selector: str) -> None:
        deadline = time.monotonic() + DELETE_TIMEOUT
        while time.monotonic() < deadline:
            pods = kube_api.call(self.core.list_namespaced_pod, self.namespace, label_selector=selector).items
            for pod in pods:
                name = pod.metadata.name
                _delete_if_there(self.core.delete_namespaced_pod, name, self.namespace, grace_period_seconds=0)
            if not pods:
                return
            time.sleep(0.5)

    def sweep(self, job_id: str) -> None:
        """Everything labelled with the job: Jobs, Pods, Secrets, NetworkPolicies."""
        self.abort(job_id)
        self._wait_gone(km.job_selector(job_id))

    def abort(self, job_id: str) -> None:
        """Delete everything labelled with the job, Pods at once (grace 0); not waiting."""
        selector = km.job_selector(job_id)
        ns, body = self.namespace, {"propagationPolicy": "Background", "gracePeriodSeconds": 0}
        kube_api.call(self.batch.delete_collection_namespaced_job, ns, label_selector=selector, body=body)
        kube_api.call(self.core.delete_collection_namespaced_pod, ns, label_selector=selector, grace_period_seconds=0)
        kube_api.call(self.net.delete_collection_namespaced_network_policy, ns, label_selector=selector)
        kube_api.call(self.core.delete_collection_namespaced_secret, ns, label_selector=selector)


def _delete_if_there(delete: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """A delete; 404 (not there, or gone already) is what it wanted."""
    from kubernetes.client.exceptions import ApiException

    try:
        kube_api.call(delete, *args, **kwargs)
    except ApiException as error:
        if error.status != 404:
            raise


def _deadline(run: JobRun) -> float | None:
    spec = run.spec
    limit = spec.run_timeout or (spec.agent_timeout + RUN_MARGIN if spec.agent_timeout else None)
    return time.monotonic() + limit if limit else None


_SUFFIX = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def _bytes(quantity: str) -> int:
    for suffix, factor in _SUFFIX.items():
        if quantity.endswith(suffix):
            return int(float(quantity[: -len(suffix)]) * factor)
    return int(float(quantity))


def _cpu(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)
