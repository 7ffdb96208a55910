"""The interface between the one scheduler and the places runs execute (docs/jobs.md, "Backends").

The scheduler (:mod:`ssebench.jobs.scheduler`) decides what runs when and with how much;
a backend only knows how to start one run, wait for it, and leave nothing behind. Each
backend lives in its own file under :mod:`ssebench.jobs.backends` so the Kubernetes one
plugs in without touching the scheduler.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal, Protocol

#: how a run ended: a grading verdict, the agent's own failure, or the infrastructure's
OutcomeKind = Literal["graded", "agent", "infra"]


@dataclass(frozen=True)
class Resources:
    """CPUs and memory (bytes): what a run needs, or what a backend can give at once."""

    cpus: float
    memory: int

    def fits(self, need: Resources) -> bool:
        """Whether *need* fits into what is left here."""
        return need.cpus <= self.cpus + 1e-9 and need.memory <= self.memory

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.cpus - other.cpus, self.memory - other.memory)

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.cpus + other.cpus, self.memory + other.memory)


@dataclass(frozen=True)
class RunSpec:
    """Everything a backend needs to execute one run of the matrix."""

    job_id: str
    run_id: str
    task: Path  # absolute task.toml
    agent: str  # bundled agent name, or the [[agents]] name of a custom one
    command: tuple[str, ...] | None  # custom agent command (gets SSE_MCP_URL like `ssebench run -- CMD`)
    model: str | None
    env: Mapping[str, str]
    level: int
    attempt: int
    agent_timeout: float | None
    cpus: float
    memory: int  # bytes
    folder: Path  # the run's results folder (created empty by the scheduler)
    phase_timeouts: Mapping[str, float] = field(default_factory=dict)  # e.g. {"run": 3600}
    lock_hash: str | None = None  # the ssebench.lock the task was checked against (docs/datasets.md)
    ignore_lock: bool = False  # --ignore-lock: the task's files may differ from that lock

    @property
    def resources(self) -> Resources:
        return Resources(self.cpus, self.memory)


@dataclass(frozen=True)
class Outcome:
    """How one run ended, as the scheduler records it in job.json."""

    kind: OutcomeKind
    status: str  # results.json status, or why there is none ("killed", "no_results", ...)
    exit_status: int | None
    detail: str


class Backend(Protocol):
    """Where runs execute; the scheduler calls these from its worker threads."""

    name: ClassVar[str]

    def capacity(self) -> Resources:
        """CPUs and memory available for runs at once (the scheduler packs runs into it)."""
        ...

    def run(self, spec: RunSpec, cancel: threading.Event) -> Outcome:
        """Execute one run; blocking. Returns only when nothing of the run is left
        (process, container, pod), also when *cancel* is set (then an infra "cancelled")."""
        ...

    def sweep(self, job_id: str) -> None:
        """Remove leftovers of a job (on resume, after Ctrl-C): containers, pods by label."""
        ...
