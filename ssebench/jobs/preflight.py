"""A job's preflight (``jobs run``, ``jobs resume``, ``jobs run --dry-run``): every problem at once.

Before the job's folder is made or anything starts: every task loads, every bundled
agent has its model API variables (in the environment its runs will get: this one plus
the agent's ``env``; on Kubernetes the agent's ``env`` alone, the Pod gets nothing else)
and, on the local backend, its CLI at the pinned version; a custom command's program is
there (local); the tasks match their dataset lock; the backend can run: Docker's engine
answers and holds the base image, each agent layer can be built, the cluster answers and
can get the images. The backend made here is the one the job then runs on.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ssebench.jobs.jobfile import AgentSpec, Job
from ssebench.preflight import Problem, agent_problems, command_problems, docker_problems

if TYPE_CHECKING:
    from ssebench.jobs.backend import Backend


_IN_CONTAINER = (
    "command {0!r}: on the {1} backend it runs in the task container, in the task's tree, which has no {0} "
    "(name a program the image has, e.g. sh -c '...')"
)
POD_ENV = "; on kubernetes, in the agent's env in the job file (a Pod gets no other variable)"


@dataclass
class Preflight:
    """What the preflight found, and what the job needs from it when nothing was found."""

    problems: list[Problem] = field(default_factory=list)
    backend: Backend | None = None
    lock_hashes: dict[Path, str | None] = field(default_factory=dict)


def agent_env(agent: AgentSpec, backend: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment AGENT's runs get on BACKEND (what its model API is looked up in)."""
    base = {} if backend == "kubernetes" else dict(os.environ if environ is None else environ)
    env = {**base, **agent.env}
    if agent.model:
        env["SSE_AGENT_MODEL"] = agent.model
    return env


def check(job: Job, backend_name: str, args: argparse.Namespace) -> Preflight:
    """Every problem of JOB on BACKEND_NAME (tasks, agents, lock, backend), and the backend."""
    verdict = Preflight([Problem(subject, text) for subject, text in job.broken])
    local = backend_name == "local"
    if job.gateway is not None:
        from ssebench.jobs.gateway.checks import problems

        verdict.problems += problems(job.gateway)
    for agent in job.agents:
        env = agent_env(agent, backend_name)
        if job.gateway is not None:
            verdict.problems += _through_gateway(agent, env)
        if agent.command is None:
            found = agent_problems(agent.name, env, cli=local)
            if backend_name == "kubernetes":  # the user's shell has the key, the Pod does not
                found = [replace(p, text=p.text + POD_ENV) if "API" in p.text else p for p in found]
            verdict.problems += found
        elif local:
            verdict.problems += command_problems(agent.name, agent.command, job.base, env)
        elif "/" in agent.command[0] and not agent.command[0].startswith("/"):
            verdict.problems.append(
                Problem(f"agent {agent.name}", _IN_CONTAINER.format(agent.command[0], backend_name))
            )
    verdict.problems += _lock(job, args, verdict)
    bundled = [a.name for a in job.agents if a.command is None]
    if backend_name in ("docker", "kubernetes"):
        verdict.problems += docker_problems(bundled)
    if backend_name == "kubernetes" and not getattr(args, "registry", None):
        verdict.problems += _local_cluster()
    try:
        from ssebench.jobs.backends import make_backend

        verdict.backend = make_backend(backend_name, job.base, args)
    except (ImportError, RuntimeError) as error:
        verdict.problems.append(Problem(backend_name, str(error)))
    if job.gateway is not None and verdict.backend is not None and backend_name == "kubernetes":
        from ssebench.jobs.backends.kubernetes import KubernetesBackend

        assert isinstance(verdict.backend, KubernetesBackend)
        verdict.problems += [Problem(backend_name, text) for text in verdict.backend.gateway_problems()]
    return verdict


def _through_gateway(agent: AgentSpec, env: dict[str, str]) -> list[Problem]:
    """ENV as the gateway will set it for AGENT's runs (a stand-in key: the run's own is made
    when it starts), so the model API check sees the variables the run will have."""
    from ssebench.jobs.gateway.gate import agent_vars

    try:
        env.update(agent_vars(None if agent.command else agent.name, env, "http://127.0.0.1:1", "sk-preflight"))
    except ValueError as error:
        return [Problem(f"agent {agent.name}", str(error))]
    return []


def _lock(job: Job, args: argparse.Namespace, verdict: Preflight) -> list[Problem]:
    """The tasks whose files differ from the ssebench.lock beside them (unless --ignore-lock)."""
    from ssebench.dataset.lock import preflight
    from ssebench.dataset.lockfile import DatasetError

    try:
        verdict.lock_hashes, refusals = preflight(list(job.tasks), args.ignore_lock)
    except DatasetError as error:
        return [Problem("lock", str(error))]
    return [Problem("lock", message) for message in refusals]


def _local_cluster() -> list[Problem]:
    """Without --registry the images go into ssebench's own local cluster: it must be up."""
    import subprocess

    from ssebench.jobs.backends.kube_images import cluster_env
    from ssebench.resources import script

    cluster = script("kube-cluster.sh")
    try:
        done = subprocess.run(
            [str(cluster), "status"], capture_output=True, text=True, timeout=30, env=cluster_env(), check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        done = None
        why = str(error)
    if done is not None and done.returncode == 0:
        return []
    if done is not None:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return [
        Problem(
            "kubernetes",
            f"no --registry, so the images go into ssebench's local cluster, which does not answer ({why}); "
            f"start it with {cluster} start, or give --registry REG (docs/kubernetes.md)",
        )
    ]
