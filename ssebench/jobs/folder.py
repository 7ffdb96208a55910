"""A job's folder: made for ``jobs run``, read back for ``jobs resume``; the runs' specs.

The folder holds job.json (its header says where the job came from: the job file and the
sha256 of its bytes, or the flags), ``runs/<run id>/`` per run and ``tries/`` for the
folders of earlier tries of a retried run (docs/jobs.md, "The job folder"). Whether a run
is done is its record's word (``runs/<run id>/results.json``), not job.json's.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssebench import __version__, runrecord
from ssebench.jobs import jobfile, matrix
from ssebench.jobs.backend import Capacity, JobRun
from ssebench.jobs.jobfile import Job, JobFileError
from ssebench.jobs.outcome import Ending
from ssebench.jobs.state import JOB_FILE, JobState, StateError, compact, new_run, read
from ssebench.runrecord import RunSpec, now

DEFAULT_JOBS_DIR = "ssebench-jobs"
DEFAULT_RUN = Capacity(1.0, 2 << 30)  # a run's need when its task declares none: 1 CPU, 2 GiB


def default_folder(job: Job) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path(DEFAULT_JOBS_DIR) / f"{job.file.stem if job.file else 'job'}-{stamp}"


def source(job: Job, flags: Mapping[str, Any] | None) -> dict[str, Any]:
    """Where the job came from, as job.json's header keeps it."""
    return {
        "job_file": str(job.file) if job.file else None,
        "job_file_sha256": job.digest,
        "flags": dict(flags) if flags else None,
    }


def create(folder: Path, job: Job, flags: Mapping[str, Any] | None, backend: str) -> JobState:
    """A new job folder with every run pending; refuses a folder that already holds a job."""
    if (folder / JOB_FILE).exists():
        raise StateError(f"{folder} already holds a job; continue it with: ssebench jobs resume {folder}")
    folder.mkdir(parents=True, exist_ok=True)
    header = {
        "job_id": f"{folder.resolve().name}-{secrets.token_hex(4)}",  # unique: sweeps go by it
        "created": now(),
        **source(job, flags),
        "backend": backend,
        "ssebench": __version__,
    }
    runs = [new_run(r.run_id, str(r.task), r.task_id, r.agent.name, r.level, r.attempt) for r in matrix.expand(job)]
    state = JobState(folder, header, runs)
    state.flush(force=True)
    return state


def reload_job(header: Mapping[str, Any]) -> Job:
    """The job a folder was made from, read again (its file, or its flags)."""
    if header.get("job_file"):
        return jobfile.load(Path(header["job_file"]))
    flags = header.get("flags") or {}
    return jobfile.from_flags(flags["tasks"], flags["agents"], flags["levels"], flags["attempts"])


def reopen(folder: Path, force: bool) -> tuple[Job, JobState]:
    """A job folder to continue: its job (refused when the file changed, unless *force*)."""
    document = read(folder)
    header = {k: v for k, v in document.items() if k != "runs"}
    job = reload_job(header)
    if job.digest != header.get("job_file_sha256") and not force:
        raise JobFileError(
            f"{header.get('job_file')}: the job file changed since {folder} was made; "
            "resume with --force to run the changed job there"
        )
    known = {r["run_id"]: r for r in document["runs"]}
    runs = []
    for r in matrix.expand(job):
        record = known.get(r.run_id) or new_run(r.run_id, str(r.task), r.task_id, r.agent.name, r.level, r.attempt)
        runs.append(record)
    header.update(job_file_sha256=job.digest)
    compact(folder, {**header, "runs": runs})
    return job, JobState(folder, header, runs)


def endings(state: JobState) -> dict[str, Ending]:
    """How every run that has a record ended (RecordError for one that cannot be read).

    A run whose row still says ``running`` but whose record is there ended while
    ``ssebench jobs`` was being killed: the record wins, the row is set ``ended``."""
    from ssebench.jobs.backends.local import tidy

    found = {}
    for row in state:
        record = runrecord.read_if_any(state.folder / row["folder"]) if row["state"] != "pending" else None
        if record is not None:
            found[row["run_id"]] = Ending.of(record)
            if row["state"] != "ended":
                state.update(row["run_id"], state="ended")
                tidy(state.folder / row["folder"])
    return found


def to_run(state: JobState, done: dict[str, Ending]) -> list[str]:
    """The runs still to do: never started, in flight when killed (no record), or ended
    without a final outcome (the infrastructure's, or cancelled)."""
    return [r["run_id"] for r in state if r["run_id"] not in done or not done[r["run_id"]].outcome.final]


def runs(
    job: Job,
    state: JobState,
    runs_as: runrecord.Backend,
    lock_hashes: dict[Path, str | None] | None = None,
    ignore_lock: bool = False,
) -> dict[str, JobRun]:
    """Every run as the backend gets it (RUNS_AS: its ``runs_as``), in matrix order, with
    the hash of the lock its task was checked against and whether --ignore-lock let a task
    that differs from it run (docs/datasets.md)."""
    agents = {a.name: a for a in job.agents}
    needs: dict[str, Capacity] = {}
    result = {}
    for record in state:
        agent = agents[record["agent"]]
        need = needs.setdefault(record["task"], task_resources(Path(record["task"])))
        spec = RunSpec(
            task_file=record["task"],
            task_id=record["task_id"],
            agent=None if agent.command else agent.name,
            command=agent.command,
            model=agent.model,
            level=record["level"],
            backend=runs_as,
            agent_timeout=agent.timeout or job.timeouts.get("agent"),
            mcp_timeout=job.timeouts.get("mcp"),
            run_timeout=job.timeouts.get("run"),
            job_id=state.job_id,
            run_id=record["run_id"],
            attempt=record["attempt"],
            lock_hash=(lock_hashes or {}).get(Path(record["task"])),
            ignore_lock=ignore_lock,
        )
        folder = (state.folder / record["folder"]).resolve()
        result[record["run_id"]] = JobRun(spec, agent.name, agent.env, need, folder)
    return result


def task_resources(task: Path) -> Capacity:
    """A task's ``[resources]`` (docs/task-format.md), else :data:`DEFAULT_RUN`."""
    from ssebench.task import load_task

    declared = load_task(task).resources
    if declared is None:
        return DEFAULT_RUN
    return Capacity(declared.cpus or DEFAULT_RUN.cpus, declared.memory or DEFAULT_RUN.memory)
