"""``ssebench jobs run|resume|report``: the commands of docs/jobs.md.

Exit statuses of ``run`` and ``resume``: 0 when every run reached a grading verdict
(passed or not; an agent's own failure is graded too), 1 when a run ended without one
(the infrastructure's failure after its retries, or refused: ``usage``), 2 for a bad job
file or flag, or a run record this ssebench cannot read (one line, nothing started), 130
on Ctrl-C (SIGINT or SIGTERM: the runs in flight are stopped, nothing left).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ssebench.jobs.outcome import Ending
    from ssebench.jobs.state import JobState

EXIT_OK, EXIT_INFRA, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jobs", help="many runs at once: a job of tasks × agents × levels × attempts")
    jobs = p.add_subparsers(dest="jobs_command", metavar="COMMAND", required=True)
    run = jobs.add_parser("run", help="run a job (a JOB.toml, or --task/--agent/--difficulty)")
    run.add_argument("job_file", nargs="?", metavar="JOB.toml", help="the job file (docs/jobs.md)")
    run.add_argument("--task", action="append", default=[], metavar="FILE", help="a task (repeat); instead of a file")
    run.add_argument("--agent", action="append", default=[], metavar="NAME", help="a bundled agent (repeat)")
    run.add_argument("--difficulty", action="append", default=[], metavar="N", help="a level 0-4 (repeat)")
    run.add_argument("--attempts", type=_positive, default=1, metavar="K", help="attempts per cell (without a file)")
    run.add_argument("--results", metavar="DIR", help="the job's folder (default: ./ssebench-jobs/<job>-<time>)")
    _common(run)
    run.set_defaults(func=_run)
    resume = jobs.add_parser("resume", help="run what a job has not finished (never a finished run again)")
    resume.add_argument("folder", metavar="DIR", help="the job's folder")
    resume.add_argument("--force", action="store_true", help="continue even though the job file changed")
    _common(resume)
    resume.set_defaults(func=_resume)
    report = jobs.add_parser("report", help="a job's statistics (or two jobs compared)")
    report.add_argument("folders", nargs="+", metavar="DIR", help="a job's folder; a second one: compare the two")
    fmt = report.add_mutually_exclusive_group()
    for name in ("json", "csv", "markdown"):
        fmt.add_argument(f"--{name}", dest="format", action="store_const", const=name, help=f"print {name}")
    report.set_defaults(func=_report, format="text")


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of runs, 1 or more, got {text!r}")
    return int(text)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=_positive, dest="concurrency", metavar="N", help="at most N runs at once")
    from ssebench.jobs.backends import BACKENDS, kube_setup

    p.add_argument("--backend", choices=tuple(BACKENDS), help="where runs execute (default: local)")
    p.add_argument(
        "--ignore-lock",
        action="store_true",
        help="run a task whose files differ from the ssebench.lock beside it (written into each run's spec)",
    )

    kube_setup.add_arguments(p)


def _lock_refusals(job: Any, args: argparse.Namespace) -> bool:
    """Refuse (naming each) the tasks whose files differ from the ssebench.lock beside
    them, unless --ignore-lock; keep each task's lock hash for its runs' specs."""
    from ssebench.dataset.lock import preflight
    from ssebench.dataset.lockfile import DatasetError

    try:
        args.lock_hashes, refusals = preflight(list(job.tasks), args.ignore_lock)
    except DatasetError as error:
        _fail(str(error))
        return True
    for message in refusals:
        _fail(message)
    return bool(refusals)


def _fail(message: str) -> int:
    print(f"ssebench jobs: {message}", file=sys.stderr)
    return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    from ssebench.jobs import folder as jobfolder
    from ssebench.jobs import jobfile
    from ssebench.jobs.state import StateError

    flags = None
    try:
        if args.job_file and (args.task or args.agent or args.difficulty):
            return _fail("give a job file or --task/--agent/--difficulty, not both")
        if args.job_file:
            job = jobfile.load(Path(args.job_file))
        elif args.task and args.agent:
            flags = {"tasks": args.task, "agents": args.agent, "levels": args.difficulty, "attempts": args.attempts}
            job = jobfile.from_flags(args.task, args.agent, args.difficulty, args.attempts)
        else:
            return _fail("give a job file, or at least one --task and one --agent")
        backend = args.backend or job.backend or "local"
        if _lock_refusals(job, args):
            return EXIT_USAGE
        where = Path(args.results) if args.results else jobfolder.default_folder(job)
        state = jobfolder.create(where, job, flags, backend)
    except (jobfile.JobFileError, StateError) as error:
        return _fail(str(error))
    return _execute(job, state, backend, args)


def _resume(args: argparse.Namespace) -> int:
    from ssebench.jobs import folder as jobfolder
    from ssebench.jobs import jobfile
    from ssebench.jobs.state import StateError

    try:
        job, state = jobfolder.reopen(Path(args.folder), args.force)
    except (jobfile.JobFileError, StateError) as error:
        return _fail(str(error))
    if _lock_refusals(job, args):
        state.close()
        return EXIT_USAGE
    return _execute(job, state, args.backend or state.header.get("backend") or "local", args)


def _execute(job: Any, state: JobState, backend_name: str, args: argparse.Namespace) -> int:
    """Sweep the job's leftovers, run what is to do, record it; the exit status."""
    from ssebench.jobs import folder as jobfolder
    from ssebench.jobs.backends import make_backend
    from ssebench.jobs.outcome import NO_VERDICT
    from ssebench.jobs.progress import Progress
    from ssebench.jobs.scheduler import Policy, Scheduler
    from ssebench.runrecord import RecordError

    try:
        done = jobfolder.endings(state)
        backend = make_backend(backend_name, job.base, args)
    except RecordError as error:
        state.close()
        return _fail(str(error))
    except (ImportError, RuntimeError) as error:
        state.close()
        return _fail(f"the {backend_name} backend is not available: {error}")
    todo = jobfolder.to_run(state, done)
    policy = Policy(args.concurrency or job.concurrency, job.retry_on, job.max_tries)
    with _sigterm_as_interrupt():
        backend.sweep(state.job_id)  # what a killed ssebench jobs left of this job
        with Progress(total=len(state.runs), done=len(state.runs) - len(todo)) as progress:
            runs = jobfolder.runs(job, state, backend.runs_as, args.lock_hashes, args.ignore_lock)
            scheduler = Scheduler(backend, state, runs, policy, progress.event)
            finished = scheduler.run(todo)
        backend.sweep(state.job_id)
    state.close()
    endings = {**done, **scheduler.endings}
    ended = {r["run_id"]: endings[r["run_id"]] for r in state if r["state"] == "ended" and r["run_id"] in endings}
    print(_summary(state, ended), file=sys.stderr)
    if not finished:
        return EXIT_INTERRUPTED
    return EXIT_INFRA if any(r.outcome in NO_VERDICT for r in ended.values()) else EXIT_OK


def _summary(state: JobState, ended: Mapping[str, Ending]) -> str:
    """``job DIR: N runs: 8 checks_failed, 8 passed``: the ended runs by status, the others by state."""
    counts: dict[str, int] = {}
    for row in state:
        record = ended.get(row["run_id"])
        key = record.status if record is not None else row["state"]
        counts[key] = counts.get(key, 0) + 1
    parts = ", ".join(f"{n} {key}" for key, n in sorted(counts.items()))
    return f"job {state.folder}: {len(state.runs)} runs: {parts}\nreport: ssebench jobs report {state.folder}"


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


def _report(args: argparse.Namespace) -> int:
    from ssebench import ui
    from ssebench.jobs import report, reportfmt
    from ssebench.jobs.state import StateError
    from ssebench.runrecord import RecordError

    if len(args.folders) > 2:
        return _fail("report: give one job folder, or two to compare")
    try:
        document = report.build([Path(f) for f in args.folders])
    except (StateError, RecordError) as error:
        return _fail(str(error))
    if args.format == "text" and ui.is_tty(sys.stdout):
        reportfmt.show_rich(document, sys.stdout)
    else:
        print(reportfmt.render(document, args.format), end="")
    return EXIT_OK
