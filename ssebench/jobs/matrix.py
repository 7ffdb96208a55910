"""Expand a job into its runs: tasks × agents × levels × attempts, each with a stable id.

A run id is ``<task id>.<agent>.L<level>.a<attempt>`` (attempts count from 1); it names
the run's folder and is how ``jobs resume`` matches a run to its state, so the same job
file always gives the same ids in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ssebench.jobs.jobfile import AgentSpec, Job


@dataclass(frozen=True)
class MatrixRun:
    """One cell of the matrix, before it has a state."""

    run_id: str
    task: Path
    task_id: str
    agent: AgentSpec
    level: int
    attempt: int


def run_id(task_id: str, agent: str, level: int, attempt: int) -> str:
    return f"{task_id}.{agent}.L{level}.a{attempt}"


def expand(job: Job, task_ids: dict[Path, str] | None = None) -> list[MatrixRun]:
    """Every run of *job*, task-major (so a task's runs sit together in the report)."""
    ids = task_ids if task_ids is not None else _task_ids(job)
    return [
        MatrixRun(run_id(ids[task], agent.name, level, attempt), task, ids[task], agent, level, attempt)
        for task in job.tasks
        for agent in job.agents
        for level in job.levels
        for attempt in range(1, job.attempts + 1)
    ]


def _task_ids(job: Job) -> dict[Path, str]:
    from ssebench.task import load_task

    return {task: load_task(task).id for task in job.tasks}
