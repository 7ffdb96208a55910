"""The one scheduler: runs a job's pending runs on a backend, within its resources, with retries.

The main thread decides; one worker thread per running run calls ``backend.run`` (blocking)
and hands the run's record back through a queue, so every change of job.json happens on the
main thread (:class:`~ssebench.jobs.state.JobState` is the one writer). A run starts when
the concurrency limit allows and its CPUs and memory fit in what the backend's capacity
has left (a run bigger than the whole capacity runs alone). Ctrl-C (or SIGTERM) sets the
cancel event: the backends stop their runs and leave nothing behind, and the runs in
flight end ``cancelled`` (``jobs resume`` runs them again). What is retried is decided from
the record (:class:`Policy`), the one place that says how a run ended.
"""

from __future__ import annotations

import contextlib
import queue
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ssebench.jobs.backend import Backend, Capacity, JobRun
from ssebench.jobs.outcome import BACKEND_ERROR, CANCELLED, Clock, Ending, written
from ssebench.jobs.scratch import Scratch
from ssebench.jobs.state import TRIES_DIR, JobState
from ssebench.runrecord import Outcome, RunResult, now

if TYPE_CHECKING:
    from ssebench.jobs.gateway.gate import RunGate


@dataclass(frozen=True)
class RunEvent:
    """What the scheduler tells its listener: a run started, ended, or will be tried again."""

    kind: Literal["started", "ended", "retry", "cancelling", "aborting"]
    run_id: str  # "" for cancelling (first Ctrl-C) and aborting (second)
    result: RunResult | None = None  # the try's record (None when it started)
    seconds: float | None = None  # the try's wall time


Listener = Callable[[RunEvent], None]
#: seconds a second Ctrl-C waits for the killed runs' backends to return before recording them itself
ABORT_WAIT = 5.0
ABORTED = "stopped at once by a second Ctrl-C; jobs resume runs it again"
#: outcomes never tried again in the same invocation (cancelled: ``jobs resume`` runs it)
NEVER_RETRIED = (Outcome.PASSED, Outcome.FAILED, Outcome.USAGE, Outcome.CANCELLED)


@dataclass
class Policy:
    """How many at once and what is retried (``[retry] on``: ``infra``, or a status)."""

    concurrency: int | None = None  # None: as many as the resources allow
    retry_on: tuple[str, ...] = ("infra",)
    max_tries: int = 3

    def retried(self, result: RunResult, tries: int) -> bool:
        """Whether a run whose try ended with *result* after *tries* tries (this time) runs again."""
        if tries >= self.max_tries or result.outcome in NEVER_RETRIED:
            return False
        if result.outcome is Outcome.INFRASTRUCTURE and "infra" in self.retry_on:
            return True
        return result.status in self.retry_on


@dataclass
class _Slot:
    run: JobRun
    need: Capacity
    started: float


@dataclass
class Scheduler:
    """Runs *runs* (run id → run, in matrix order) of *state* on *backend*."""

    backend: Backend
    state: JobState
    runs: Mapping[str, JobRun]
    policy: Policy
    listener: Listener = lambda event: None
    cancel: threading.Event = field(default_factory=threading.Event)
    scratch: Scratch | None = None  # each try's TMPDIR, removed once the try ended
    gate: RunGate | None = None  # the job's model gateway: each try's key in, its usage and budget out

    def __post_init__(self) -> None:
        self._done: queue.Queue[tuple[str, RunResult]] = queue.Queue()
        self._running: dict[str, _Slot] = {}
        self._tries: dict[str, int] = {}  # tries in this invocation (the budget of max_tries)
        self.endings: dict[str, Ending] = {}  # how each run that ended here ended
        self.capacity = self.backend.capacity()
        self._free = self.capacity
        self._aborted = False  # a second Ctrl-C killed the runs: their deaths are cancellations

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
            try:
                self.listener(RunEvent("cancelling", ""))
                self._drain()
            except KeyboardInterrupt:  # a second Ctrl-C: no more waiting
                self._abort()
        self.state.flush(force=True)
        return not self.cancel.is_set()

    def _start_what_fits(self, pending: deque[str]) -> None:
        limit = self.policy.concurrency
        while pending and not self.cancel.is_set() and (limit is None or len(self._running) < limit):
            run = self.runs[pending[0]]
            need = self._need(run)
            if not self._free.fits(need):
                return  # in order: the head waits for room, later runs do not overtake it
            pending.popleft()
            self._start(run, need)

    def _need(self, run: JobRun) -> Capacity:
        """What a run takes: its own need, or the whole capacity for one bigger than it."""
        if self.capacity.fits(run.need):
            return run.need
        return Capacity(min(run.need.cpus, self.capacity.cpus), min(run.need.memory, self.capacity.memory))

    def _start(self, run: JobRun, need: Capacity) -> None:
        self._free = self._free - need
        self._running[run.run_id] = _Slot(run, need, time.monotonic())
        self._tries[run.run_id] = self._tries.get(run.run_id, 0) + 1
        previous = self.state.runs[run.run_id].get("tries") or 0
        if run.folder.exists():  # a try that was in flight when ssebench jobs was killed, or ended
            retire(run.folder, self.state.folder, previous)
        run.folder.mkdir(parents=True)
        if self.scratch is not None:
            run = replace(run, tmp=self.scratch.for_try())
            self._running[run.run_id].run = run
        # A new try: nothing of the last one's end stays in its row (its record is under tries/).
        self.state.update(run.run_id, state="running", started=now(), ended=None, duration=None, tries=previous + 1)
        self.listener(RunEvent("started", run.run_id))
        thread = threading.Thread(target=self._work, args=(run,), name=f"run {run.run_id}", daemon=True)
        thread.start()

    def _work(self, run: JobRun) -> None:
        """A worker thread: one backend run; its record (or its crash, recorded) goes to the queue."""
        clock = Clock()
        try:
            if self.gate is not None:
                run = self.gate.admit(run)
            result = self.backend.run(run, self.cancel)
            if self.gate is not None:
                result = self.gate.settle(run, result)
        except Exception as error:  # a backend bug must not lose the run: it ends with a record
            reason = f"the {self.backend.name} backend failed: {type(error).__name__}: {error}"
            result = written(run, BACKEND_ERROR, " ".join(reason.split()), clock)
        self._done.put((run.run_id, result))

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

    def _ended(self, run_id: str, result: RunResult, pending: deque[str]) -> None:
        slot = self._running.pop(run_id, None)
        if slot is None:
            return  # recorded already: a second Ctrl-C did not wait for it
        if self._aborted and result.outcome is Outcome.INFRASTRUCTURE:  # killed by our abort, not broken
            result = written(slot.run, CANCELLED, ABORTED, Clock(began=slot.started))
        Scratch.remove(slot.run.tmp)
        self._free = self._free + slot.need
        seconds = round(time.monotonic() - slot.started, 3)
        row = self.state.update(run_id, state="ended", ended=now(), duration=seconds)
        if not self.cancel.is_set() and self.policy.retried(result, self._tries[run_id]):
            retire(slot.run.folder, self.state.folder, row["tries"])
            self.state.update(run_id, state="pending", started=None, ended=None, duration=None)
            pending.appendleft(run_id)
            self.listener(RunEvent("retry", run_id, result, seconds))
            return
        self.endings[run_id] = Ending.of(result)
        self.listener(RunEvent("ended", run_id, result, seconds))

    def _drain(self) -> None:
        """After a cancel: wait until every backend run returned (nothing of them is left)."""
        while self._running:
            self._collect(deque(), timeout=0.5)

    def _abort(self) -> None:
        """Kill every run of the job now; record as cancelled the runs whose backend has not
        returned within ABORT_WAIT (their worker threads are left to end on their own)."""
        self._aborted = True
        with contextlib.suppress(KeyboardInterrupt):
            self.listener(RunEvent("aborting", ""))
        while True:
            try:
                self.backend.abort(self.state.job_id)
                break
            except KeyboardInterrupt:
                continue  # another Ctrl-C: the killing is what it asked for; finish it
        deadline = time.monotonic() + ABORT_WAIT
        while self._running and time.monotonic() < deadline:
            try:
                self._collect(deque(), timeout=0.2)
            except KeyboardInterrupt:
                break  # a third: stop waiting
        for run_id, slot in list(self._running.items()):
            self._ended(run_id, written(slot.run, CANCELLED, ABORTED, Clock(began=slot.started)), deque())


def retire(folder: Path, job_folder: Path, tries: int) -> None:
    """Keep an ended try's folder under tries/ so the run's own folder starts empty."""
    target = job_folder / TRIES_DIR / f"{folder.name}.try{tries}"
    target.parent.mkdir(exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    folder.rename(target)
