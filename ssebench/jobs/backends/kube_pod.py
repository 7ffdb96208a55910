"""Watching one run's Pod and collecting its results (the kubernetes client; docs/kubernetes.md).

The watch tells when the agent container has ended (then the backend grades in the daemon
and copies the results), or that the cluster lost the run: evicted, deleted, its image
missing, its node gone. Results come over the exec API as a tar stream written to disk as
it arrives (never held in memory) and unpacked with tarfile's ``data`` filter. Every API
request goes through kube_api.py's one retry.
"""

from __future__ import annotations

import functools
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.jobs.backends import kube_api
from ssebench.jobs.backends.kube_manifests import COLLECTED, LABEL_JOB, LABEL_RUN, RESULTS_DIR

# Waiting reasons that mean the Pod will never run: the cluster's fault, not the agent's.
IMAGE_FAILURES = ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName")
START_FAILURES = ("CreateContainerConfigError", "CreateContainerError", "RunContainerError")
WATCH_SLICE = 2  # seconds per watch request, so a cancel is seen quickly
EXEC_SLICE = 1.0


@dataclass(frozen=True)
class PodEnd:
    """How the wait ended: ``agent_exited`` (collect), or an infra reason with a detail."""

    reason: str
    detail: str
    pod: str | None = None


def _statuses(pod: Any) -> list[Any]:
    status = pod.status
    return [*(status.init_container_statuses or []), *(status.container_statuses or [])]


def deleted(name: str) -> PodEnd:
    return PodEnd("pod_lost", f"pod {name} was deleted before the run ended", name)


def judge(pod: Any) -> PodEnd | None:
    """The end this Pod state means, or None while it still runs as it should."""
    name = pod.metadata.name
    if pod.metadata.deletion_timestamp is not None:  # deleted the normal way: its grace period runs
        return deleted(name)
    if pod.status.phase == "Failed" or pod.status.reason == "Evicted":
        why = pod.status.reason or "Failed"
        return PodEnd(
            "evicted" if why == "Evicted" else "pod_failed",
            f"pod {name}: {why}: {pod.status.message or ''}".strip(),
            name,
        )
    if pod.status.phase == "Unknown":
        return PodEnd("node_lost", f"pod {name}: its node stopped answering", name)
    for status in _statuses(pod):
        waiting = status.state.waiting if status.state else None
        if waiting is not None and waiting.reason in IMAGE_FAILURES:
            return PodEnd(
                "image_not_found", f"container {status.name}: {waiting.reason}: {waiting.message or ''}".strip(), name
            )
        if waiting is not None and waiting.reason in START_FAILURES:
            return PodEnd(
                "start_failed", f"container {status.name}: {waiting.reason}: {waiting.message or ''}".strip(), name
            )
        if status.name == "agent" and status.state and status.state.terminated is not None:
            return PodEnd("agent_exited", f"exit status {status.state.terminated.exit_code}", name)
    return None


def wait_for_agent(
    core: Any, namespace: str, job_id: str, run_id: str, cancel: threading.Event, deadline: float | None
) -> PodEnd:
    """Watch the run's Pod until the agent has exited or the run is lost, cancelled or late."""
    from kubernetes.client.exceptions import ApiException

    selector = f"{LABEL_JOB}={job_id},{LABEL_RUN}={run_id}"
    version: str | None = None
    while True:
        if cancel.is_set():
            return PodEnd("cancelled", "stopped by the scheduler: cancelled")
        if deadline is not None and time.monotonic() > deadline:
            return PodEnd("run_timeout", "the run took longer than its time limit")
        try:
            end, version = kube_api.retry(functools.partial(_watch_slice, core, namespace, selector, version))
        except ApiException as error:
            if error.status != 410:  # 410 Gone: the version is too old; list anew
                raise
            end, version = None, None
        if end is not None:
            return end


def _watch_slice(core: Any, namespace: str, selector: str, version: str | None) -> tuple[PodEnd | None, str | None]:
    """One watch request of WATCH_SLICE seconds: the end it saw, and where to go on from."""
    from kubernetes import watch

    kwargs = {"resource_version": version} if version else {}
    stream = watch.Watch().stream(
        core.list_namespaced_pod,
        namespace,
        label_selector=selector,
        timeout_seconds=WATCH_SLICE,
        _request_timeout=kube_api.REQUEST_TIMEOUT,
        **kwargs,
    )
    for event in stream:
        pod = event["object"]
        version = pod.metadata.resource_version
        if event["type"] == "DELETED":
            return deleted(pod.metadata.name), version
        end = judge(pod)
        if end is not None:
            return end, version
    return None, version


def exec_to_file(core: Any, namespace: str, pod: str, container: str, argv: list[str], out: Path, err: Path) -> int:
    """Run ARGV in the container; its stdout and stderr stream into OUT and ERR. Its exit status."""
    from kubernetes import client
    from kubernetes.stream import stream

    # A client of its own: stream() swaps its client's call_api while it runs, and two
    # threads doing so at once left the shared client's every request a websocket one.
    api = client.ApiClient(core.api_client.configuration)
    try:
        return _exec(client.CoreV1Api(api), stream, namespace, pod, container, argv, out, err)
    finally:
        api.close()


def _exec(
    core: Any, stream: Any, namespace: str, pod: str, container: str, argv: list[str], out: Path, err: Path
) -> int:
    """The command's streams into OUT and ERR; opening the stream is retried (the command
    has not started until the handshake is answered), the stream itself is not."""
    resp = kube_api.retry(
        lambda: stream(
            core.connect_get_namespaced_pod_exec,
            pod,
            namespace,
            container=container,
            command=argv,
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
            binary=True,
            _preload_content=False,
        )
    )
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        while resp.is_open():
            resp.update(timeout=EXEC_SLICE)
            _drain(resp, stdout, stderr)
        _drain(resp, stdout, stderr)
    code = resp.returncode
    resp.close()
    return int(code) if code is not None else -1


def _drain(resp: Any, stdout: Any, stderr: Any) -> None:
    if resp.peek_stdout():
        stdout.write(resp.read_stdout())
    if resp.peek_stderr():
        stderr.write(resp.read_stderr())


def copy_results(core: Any, namespace: str, pod: str, folder: Path) -> None:
    """/results of the daemon container (the agent's results, read-only there) into FOLDER."""
    with tempfile.TemporaryDirectory(prefix="ssebench-kube-") as scratch:
        archive, errors = Path(scratch) / "results.tar", Path(scratch) / "tar.err"
        code = exec_to_file(core, namespace, pod, "daemon", ["tar", "cf", "-", "-C", RESULTS_DIR, "."], archive, errors)
        if code != 0:
            raise CollectError(f"tar of {RESULTS_DIR} in the daemon container exited {code}: {_tail(errors)}")
        with tarfile.open(archive) as bundle:
            bundle.extractall(folder, filter="data")


def mark_collected(core: Any, namespace: str, pod: str, container: str) -> None:
    """The file that lets the daemon (classic) or the hold container (native) end."""
    with tempfile.TemporaryDirectory(prefix="ssebench-kube-") as scratch:
        sink = Path(scratch) / "out"
        exec_to_file(core, namespace, pod, container, ["touch", COLLECTED], sink, sink)


class CollectError(RuntimeError):
    """The results could not be copied out of the Pod (one line)."""


def _tail(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no message"
