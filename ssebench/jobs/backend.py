"""The interface between the one scheduler and the places runs execute (docs/jobs.md, "Backends").

The scheduler (:mod:`ssebench.jobs.scheduler`) decides what runs when and with how much;
a backend only knows how to start one run, wait for it, and leave nothing behind. Each
backend lives in its own file under :mod:`ssebench.jobs.backends` so the Kubernetes one
plugs in without touching the scheduler. What a run is, is the run record's
:class:`~ssebench.runrecord.RunSpec`; :class:`JobRun` adds only what the backend needs
beside it (the environment, which holds secrets and so is never part of the spec, the
CPUs and memory, the folder). A backend returns the run's record: the one its child wrote,
or one written for a run that left none (:mod:`ssebench.jobs.outcome`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from ssebench.runrecord import Backend as RunsOn
from ssebench.runrecord import RunResult, RunSpec


@dataclass(frozen=True)
class Capacity:
    """CPUs and memory (bytes): what a run needs, or what a backend can give at once."""

    cpus: float
    memory: int

    def fits(self, need: Capacity) -> bool:
        """Whether *need* fits into what is left here."""
        return need.cpus <= self.cpus + 1e-9 and need.memory <= self.memory

    def __sub__(self, other: Capacity) -> Capacity:
        return Capacity(self.cpus - other.cpus, self.memory - other.memory)

    def __add__(self, other: Capacity) -> Capacity:
        return Capacity(self.cpus + other.cpus, self.memory + other.memory)


@dataclass(frozen=True)
class JobRun:
    """One run of a job's matrix as a backend executes it: the spec, and what is not in it."""

    spec: RunSpec  # job_id, run_id and attempt always set
    agent_name: str  # the [[agents]] name (a bundled agent's, or a custom command's own)
    env: Mapping[str, str]  # added to the run's environment (API keys: never written to a file)
    need: Capacity
    folder: Path  # the run's results folder (created empty by the scheduler)
    tmp: Path | None = None  # this try's TMPDIR (ssebench/jobs/scratch.py; set by the scheduler at its start)

    @property
    def job_id(self) -> str:
        return str(self.spec.job_id)

    @property
    def run_id(self) -> str:
        return str(self.spec.run_id)

    @property
    def task(self) -> Path:
        return Path(self.spec.task_file)


class Backend(Protocol):
    """Where runs execute; the scheduler calls these from its worker threads."""

    name: ClassVar[str]
    runs_as: ClassVar[RunsOn]  # what its runs' records say they ran on (RunSpec.backend)

    def capacity(self) -> Capacity:
        """CPUs and memory available for runs at once (the scheduler packs runs into it)."""
        ...

    def run(self, run: JobRun, cancel: threading.Event) -> RunResult:
        """Execute one run; blocking. Returns its record (written in its folder) only when
        nothing of the run is left (process, container, pod), also when *cancel* is set
        (then the record's status is ``cancelled``)."""
        ...

    def sweep(self, job_id: str) -> None:
        """Remove leftovers of a job (on resume, after Ctrl-C): containers, pods by label."""
        ...

    def abort(self, job_id: str) -> None:
        """Stop every run of the job at once (a second Ctrl-C): kill, remove, do not wait.
        The runs' ``run`` calls then return soon, with a ``cancelled`` record."""
        ...
