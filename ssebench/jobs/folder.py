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
from ssebench.jobs import jobfile, jobspec, matrix
from ssebench.jobs.backend import Capacity, JobRun
from ssebench.jobs.jobfile import Job, JobFileError
from ssebench.jobs.outcome import Ending
from ssebench.jobs.state import JOB_FILE, JobState, StateError, compact, new_run
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
        "spec": jobspec.to_spec(job),  # the job as it started: what resume runs (jobspec.py)
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


def reopen(folder: Path, document: Mapping[str, Any], use_stored: bool) -> Job:
    """The job a folder holds, to continue: the job file as it is now when it is the job
    that started there, else (with USE_STORED) the job as it started; JobFileError listing
    what changed otherwise. Writes nothing."""
    header = {k: v for k, v in document.items() if k != "runs"}
    try:
        current: Job | None = reload_job(header)
        trouble = None
    except JobFileError as error:
        current, trouble = None, str(error)
    stored = header.get("spec")
    if stored is None:  # made by an ssebench that did not store the job
        if current is not None and (current.digest == header.get("job_file_sha256") or use_stored):
            return current
        raise JobFileError(
            trouble
            or f"{header.get('job_file')}: the job file changed since {folder} started, and the folder "
            "(of an older ssebench) does not hold the job as it started; start a new job"
        )
    changes = [f"the job file: {trouble}"] if current is None else jobspec.differences(stored, jobspec.to_spec(current))
    if not changes:
        assert current is not None
        return current
    if use_stored:
        return jobspec.from_spec(stored, current)
    what = header.get("job_file") or "the job"
    lines = [f"{what} changed since {folder} started:", *(f"  {c}" for c in changes)]
    lines.append(
        "resume runs the job as it started: add --use-stored to run it so, or start a new job "
        "from the changed file (ssebench jobs run JOB.toml)"
    )
    raise JobFileError("\n".join(lines))


def changed_file(folder: Path, document: Mapping[str, Any]) -> str | None:
    """The job file, when it no longer says the job that started in FOLDER (else None)."""
    header = {k: v for k, v in document.items() if k != "runs"}
    if not header.get("job_file"):
        return None
    try:
        reopen(folder, document, use_stored=False)
    except JobFileError:
        return str(header["job_file"])
    return None


def continue_state(folder: Path, document: Mapping[str, Any], job: Job) -> JobState:
    """The job folder's state to run JOB on (new runs pending, the others as they are);
    job.json compacted."""
    header = {k: v for k, v in document.items() if k != "runs"}
    known = {r["run_id"]: r for r in document["runs"]}
    runs = []
    for r in matrix.expand(job):
        record = known.get(r.run_id) or new_run(r.run_id, str(r.task), r.task_id, r.agent.name, r.level, r.attempt)
        runs.append(record)
    header.setdefault("spec", jobspec.to_spec(job))
    header.update(job_file_sha256=header.get("job_file_sha256") or job.digest)
    compact(folder, {**header, "runs": runs})
    return JobState(folder, header, runs)


def progress_of(folder: Path, document: Mapping[str, Any]) -> tuple[int, int]:
    """(runs with a final record, runs) of a job folder, read only (RecordError: one line)."""
    final = 0
    for row in document["runs"]:
        record = runrecord.read_if_any(folder / row["folder"]) if row["state"] != "pending" else None
        final += record is not None and record.outcome.final
    return final, len(document["runs"])


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
