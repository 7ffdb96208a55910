"""The one scheduler: runs a job's pending runs on a backend, within its resources, with retries.

The main thread decides; one worker thread per running run calls ``backend.run`` (blocking)
and hands the outcome back through a queue, so every change of job.json happens on the
main thread (:class:`~ssebench.jobs.state.JobState` is the one writer). A run starts when
the concurrency limit allows and its CPUs and memory fit in what the backend's capacity
has left (a run bigger than the whole capacity runs alone). Ctrl-C (or SIGTERM) sets the
cancel event: the backends stop their runs and leave nothing behind, and the runs in
flight are recorded as ``infra``/``cancelled`` (``jobs resume`` runs them again).
"""

from __future__ import annotations

import queue
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.jobs.backend import Backend, Outcome, Resources, RunSpec
from ssebench.jobs.outcome import CANCELLED
from ssebench.jobs.state import TRIES_DIR, JobState, now

Listener = Callable[[str, dict[str, Any]], None]  # ("started"|"ended"|"retry", run record)


@dataclass
class Policy:
    """How many at once and what is retried."""

    concurrency: int | None = None  # None: as many as the resources allow
    retry_on: tuple[str, ...] = ("infra",)
    max_tries: int = 3

    def retried(self, outcome: Outcome, tries: int) -> bool:
        """Whether a run that ended with *outcome* after *tries* tries (this time) runs again."""
        if outcome.status == CANCELLED or tries >= self.max_tries or outcome.kind == "graded":
            return False
        wanted = outcome.kind == "infra" and "infra" in self.retry_on
        return wanted or outcome.status in self.retry_on


@dataclass
class _Slot:
    spec: RunSpec
    need: Resources
    started: float


@dataclass
class Scheduler:
    """Runs *specs* (run id → spec, in matrix order) of *state* on *backend*."""

    backend: Backend
    state: JobState
    specs: Mapping[str, RunSpec]
    policy: Policy
    listener: Listener = lambda event, record: None
    cancel: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._done: queue.Queue[tuple[str, Outcome]] = queue.Queue()
        self._running: dict[str, _Slot] = {}
        self._tries: dict[str, int] = {}  # tries in this invocation (the budget of max_tries)
        self.capacity = self.backend.capacity()
        self._free = self.capacity

    def run(self, run_ids: list[str]) -> bool:
        """Run these runs to an end; False when cancelled (Ctrl-C) before all ended."""
        pending = deque(run_ids)
        try:
            while pending or self._running:
                self._start_what_fits(pending)
                self._collect(pending, timeout=0.5)
                self.state.flush()
        except KeyboardInterrupt:
            self.cancel.set()
        if self.cancel.is_set():
            self._drain()
        self.state.flush(force=True)
        return not self.cancel.is_set()

    def _start_what_fits(self, pending: deque[str]) -> None:
        limit = self.policy.concurrency
        while pending and not self.cancel.is_set() and (limit is None or len(self._running) < limit):
            spec = self.specs[pending[0]]
            need = self._need(spec)
            if not self._free.fits(need):
                return  # in order: the head waits for room, later runs do not overtake it
            pending.popleft()
            self._start(spec, need)

    def _need(self, spec: RunSpec) -> Resources:
        """What a run takes: its own need, or the whole capacity for one bigger than it."""
        if self.capacity.fits(spec.resources):
            return spec.resources
        return Resources(min(spec.cpus, self.capacity.cpus), min(spec.memory, self.capacity.memory))

    def _start(self, spec: RunSpec, need: Resources) -> None:
        self._free = self._free - need
        self._running[spec.run_id] = _Slot(spec, need, time.monotonic())
        tries = self._tries.get(spec.run_id, 0) + 1
        self._tries[spec.run_id] = tries
        previous = self.state.runs[spec.run_id].get("tries") or 0
        if spec.folder.exists():  # a try that was in flight when ssebench jobs was killed
            retire(spec.folder, self.state.folder, previous)
        spec.folder.mkdir(parents=True)
        record = self.state.update(spec.run_id, state="running", started=now(), ended=None, tries=previous + 1)
        self.listener("started", record)
        thread = threading.Thread(target=self._work, args=(spec,), name=f"run {spec.run_id}", daemon=True)
        thread.start()

    def _work(self, spec: RunSpec) -> None:
        """A worker thread: one backend run; its outcome (or its crash) goes to the queue."""
        try:
            outcome = self.backend.run(spec, self.cancel)
        except Exception as error:  # a backend bug must not lose the run's state
            outcome = Outcome("infra", "backend_error", None, f"{type(error).__name__}: {error}")
        self._done.put((spec.run_id, outcome))

    def _collect(self, pending: deque[str], timeout: float) -> None:
        """Record the runs that ended (waits up to *timeout* for the first)."""
        try:
            item = self._done.get(timeout=timeout) if self._running else None
        except queue.Empty:
            return
        while item is not None:
            self._ended(*item, pending)
            try:
                item = self._done.get_nowait()
            except queue.Empty:
                item = None

    def _ended(self, run_id: str, outcome: Outcome, pending: deque[str]) -> None:
        slot = self._running.pop(run_id)
        self._free = self._free + slot.need
        duration = round(time.monotonic() - slot.started, 3)
        record = self.state.update(
            run_id,
            state=outcome.kind,
            status=outcome.status,
            exit_status=outcome.exit_status,
            detail=outcome.detail,
            ended=now(),
            duration=duration,
        )
        if not self.cancel.is_set() and self.policy.retried(outcome, self._tries[run_id]):
            retire(slot.spec.folder, self.state.folder, record["tries"])
            self.state.update(run_id, state="pending")
            pending.appendleft(run_id)
            self.listener("retry", record)
            return
        self.listener("ended", record)

    def _drain(self) -> None:
        """After a cancel: wait until every backend run returned (nothing of them is left)."""
        while self._running:
            try:
                self._collect(deque(), timeout=0.5)
            except KeyboardInterrupt:
                continue  # a second Ctrl-C: the runs are being stopped already


def retire(folder: Path, job_folder: Path, tries: int) -> None:
    """Keep an ended try's folder under tries/ so the run's own folder starts empty."""
    target = job_folder / TRIES_DIR / f"{folder.name}.try{tries}"
    target.parent.mkdir(exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    folder.rename(target)
