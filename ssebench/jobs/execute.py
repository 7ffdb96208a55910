"""Running a job's runs that are to do, once its preflight passed: ``jobs run`` and ``jobs resume``.

Sweeps what a killed ``ssebench jobs`` left of the job (processes, containers, Pods, its
temporary folders), runs the runs through the one scheduler with the live progress, and
prints the summary: the runs by status and, for those that reached no verdict, why. Ctrl-C
(SIGINT or SIGTERM) stops scheduling and cancels the runs in flight; a second one kills
them at once; either way nothing of the job is left and the exit status is 130.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ssebench.plural import count

if TYPE_CHECKING:
    from ssebench.jobs.backend import Backend
    from ssebench.jobs.jobfile import Job
    from ssebench.jobs.outcome import Ending
    from ssebench.jobs.preflight import Preflight
    from ssebench.jobs.scratch import Scratch
    from ssebench.jobs.state import JobState

EXIT_OK, EXIT_INFRA, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def execute(job: Job, state: JobState, verdict: Preflight, args: argparse.Namespace) -> int:
    """Run what is to do in STATE's folder on the preflight's backend; the exit status."""
    from ssebench.jobs import folder as jobfolder
    from ssebench.jobs.outcome import NO_VERDICT
    from ssebench.jobs.progress import Progress
    from ssebench.jobs.scheduler import Policy, Scheduler
    from ssebench.runrecord import RecordError

    backend = verdict.backend
    assert backend is not None
    try:
        done = jobfolder.endings(state)
    except RecordError as error:
        state.close()
        print(f"ssebench jobs: {error}", file=sys.stderr)
        return EXIT_USAGE
    todo = jobfolder.to_run(state, done)
    policy = Policy(args.concurrency or job.concurrency, job.retry_on, job.max_tries)
    runs = jobfolder.runs(job, state, backend.runs_as, verdict.lock_hashes, args.ignore_lock)
    scheduler = Scheduler(backend, state, runs, policy)
    try:
        with _sigterm_as_interrupt(), _job_temp(state.job_id) as temp:
            backend.sweep(state.job_id)
            scheduler.scratch = temp
            with Progress(total=len(state.runs), done=len(state.runs) - len(todo), runs=runs) as progress:
                scheduler.listener = progress.event
                finished = scheduler.run(todo)
            _sweep(backend, state.job_id)
    except KeyboardInterrupt:  # before the scheduler ran (its sweep): nothing started
        finished = False
    state.close()
    endings = {**done, **scheduler.endings}
    ended = {r["run_id"]: endings[r["run_id"]] for r in state if r["state"] == "ended" and r["run_id"] in endings}
    print(summary(state, ended), file=sys.stderr)
    if not finished:
        return EXIT_INTERRUPTED
    return EXIT_INFRA if any(r.outcome in NO_VERDICT for r in ended.values()) else EXIT_OK


def _sweep(backend: Backend, job_id: str) -> None:
    """Whatever is left of the job's runs (nothing, normally); a Ctrl-C here: at once."""
    try:
        backend.sweep(job_id)
    except KeyboardInterrupt:
        backend.abort(job_id)


@contextlib.contextmanager
def _job_temp(job_id: str) -> Iterator[Scratch]:
    """The job's temporary folder: each try's TMPDIR, and this process's own temporary files
    (image builds) while the job runs; removed at the end, however it ends."""
    from ssebench.jobs.scratch import Scratch, sweep

    sweep(job_id)
    temp = Scratch(job_id)
    previous = tempfile.tempdir
    tempfile.tempdir = str(temp.root)
    try:
        yield temp
    finally:
        tempfile.tempdir = previous
        temp.close()


def summary(state: JobState, ended: Mapping[str, Ending]) -> str:
    """``job DIR: 16 runs: 8 checks_failed, 8 passed``: the ended runs by status, the others
    by state; then the runs that reached no verdict, by why (the records' reasons)."""
    from ssebench.jobs.outcome import NO_VERDICT

    counts: dict[str, int] = {}
    why: dict[tuple[str, str], int] = {}
    for row in state:
        record = ended.get(row["run_id"])
        key = record.status if record is not None else row["state"]
        counts[key] = counts.get(key, 0) + 1
        if record is not None and record.outcome in NO_VERDICT:
            cause = (record.status, record.reason or record.status)
            why[cause] = why.get(cause, 0) + 1
    parts = ", ".join(f"{n} {key}" for key, n in sorted(counts.items()))
    lines = [f"job {state.folder}: {count(len(state.runs), 'run')}: {parts}"]
    lines += [f"  {n} {status}: {reason}" for (status, reason), n in sorted(why.items(), key=lambda x: -x[1])]
    lines.append(f"report: ssebench jobs report {state.folder}")
    return "\n".join(lines)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (docker stop, a CI cancel) stops the job like Ctrl-C does."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def nothing_to_resume(folder: Path, final: int, total: int, changed: str | None) -> str:
    """What ``jobs resume`` says of a job whose every run has a final result."""
    lines = [f"nothing to resume: {final}/{count(total, 'run')} finished (report: ssebench jobs report {folder})"]
    if changed:
        lines.append(f"({changed} changed since; to run the changed job, start a new one: ssebench jobs run {changed})")
    return "\n".join(lines)
