"""``ssebench jobs run|resume|report``: the commands of docs/jobs.md.

Exit statuses of ``run`` and ``resume``: 0 when every run reached a grading verdict
(passed or not; an agent's own failure is graded too), 1 when a run ended without one
(the infrastructure's failure after its retries, or refused: ``usage``), 2 for a bad job
file or flag, a preflight problem (every one listed, nothing started, no folder made), a
changed job file on resume, or a run record this ssebench cannot read (one line), 130 on
Ctrl-C (SIGINT or SIGTERM: the runs in flight are stopped, nothing left).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ssebench.jobs.execute import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from ssebench.jobs.jobfile import Job
    from ssebench.jobs.preflight import Preflight


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "jobs",
        help="many runs at once: a job of tasks × agents × levels × attempts",
        description="Run a job of tasks × agents × levels × attempts, resume it, report on it (docs/jobs.md).",
    )
    jobs = p.add_subparsers(dest="jobs_command", metavar="COMMAND", required=True)
    run = jobs.add_parser(
        "run",
        help="run a job (a JOB.toml, or --task/--agent/--difficulty)",
        description="Check everything the job needs (the preflight), then run it with live progress.",
    )
    run.add_argument("job_file", nargs="?", metavar="JOB.toml", help="the job file (docs/jobs.md)")
    run.add_argument("--task", action="append", default=[], metavar="FILE", help="a task (repeat); instead of a file")
    run.add_argument("--agent", action="append", default=[], metavar="NAME", help="a bundled agent (repeat)")
    run.add_argument("--difficulty", action="append", default=[], metavar="N", help="a level 0-4 (repeat)")
    run.add_argument("--attempts", type=_positive, default=1, metavar="K", help="attempts per cell (without a file)")
    run.add_argument("--results", metavar="DIR", help="the job's folder (default: ./ssebench-jobs/<job>-<time>)")
    run.add_argument(
        "--dry-run", action="store_true", help="print the runs it would run and the preflight's verdict; start nothing"
    )
    _common(run)
    run.set_defaults(func=_run)
    resume = jobs.add_parser(
        "resume",
        help="run what a job has not finished (never a finished run again)",
        description="Run the runs of a job folder without a final result: never started, in flight when "
        "stopped, or ended by the infrastructure or cancelled.",
    )
    resume.add_argument("folder", metavar="DIR", help="the job's folder")
    resume.add_argument(
        "--use-stored",
        action="store_true",
        help="the job file changed since the job started: run the job as it started",
    )
    resume.add_argument("--force", action="store_true", help=argparse.SUPPRESS)  # gone: says what replaced it
    _common(resume)
    resume.set_defaults(func=_resume)
    report = jobs.add_parser(
        "report",
        help="a job's statistics (or two jobs compared)",
        description="Pass rates, pass@k, durations, test_patch calls, tokens and failures of a job folder.",
    )
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


def _fail(message: str) -> int:
    print(f"ssebench jobs: {message}", file=sys.stderr)
    return EXIT_USAGE


def _preflight(job: Job, backend: str, args: argparse.Namespace) -> Preflight | None:
    """The verdict when the job may start; None (every problem printed) when not."""
    from ssebench.jobs.preflight import check
    from ssebench.preflight import render

    verdict = check(job, backend, args)
    if verdict.problems:
        print(render(verdict.problems, "ssebench jobs"), file=sys.stderr)
        return None
    return verdict


def _load(args: argparse.Namespace) -> tuple[Job, dict[str, object] | None]:
    """The job of the file or the flags (JobFileError: one line)."""
    from ssebench.jobs import jobfile

    if args.job_file and (args.task or args.agent or args.difficulty):
        raise jobfile.JobFileError("give a job file or --task/--agent/--difficulty, not both")
    if args.job_file:
        return jobfile.load(Path(args.job_file)), None
    if args.task and args.agent:
        flags = {"tasks": args.task, "agents": args.agent, "levels": args.difficulty, "attempts": args.attempts}
        return jobfile.from_flags(args.task, args.agent, args.difficulty, args.attempts), flags
    raise jobfile.JobFileError("give a job file, or at least one --task and one --agent")


def _run(args: argparse.Namespace) -> int:
    from ssebench.jobs import dryrun, jobfile
    from ssebench.jobs import folder as jobfolder
    from ssebench.jobs.execute import execute
    from ssebench.jobs.preflight import check
    from ssebench.jobs.state import StateError

    try:
        job, flags = _load(args)
    except jobfile.JobFileError as error:
        return _fail(str(error))
    backend = args.backend or job.backend or "local"
    if args.dry_run:
        verdict = check(job, backend, args)
        print(dryrun.render(job, backend, args.concurrency or job.concurrency, verdict))
        return EXIT_USAGE if verdict.problems else EXIT_OK
    where = Path(args.results) if args.results else jobfolder.default_folder(job)
    if (where / "job.json").exists():  # before the preflight: a mistake in the command comes first
        return _fail(f"{where} already holds a job; continue it with: ssebench jobs resume {where}")
    ready = _preflight(job, backend, args)
    if ready is None:
        return EXIT_USAGE
    try:
        state = jobfolder.create(where, job, flags, backend)
    except StateError as error:
        return _fail(str(error))
    return execute(job, state, ready, args)


def _resume(args: argparse.Namespace) -> int:
    from ssebench.jobs import folder as jobfolder
    from ssebench.jobs import jobfile
    from ssebench.jobs.execute import execute, nothing_to_resume
    from ssebench.jobs.state import StateError, read
    from ssebench.runrecord import RecordError

    if args.force:
        return _fail(
            "resume --force is gone: resume refuses a changed job file and lists what changed; "
            "--use-stored runs the job as it started, a new job (ssebench jobs run) runs the changed one"
        )
    folder = Path(args.folder)
    try:
        document = read(folder)
        final, total = jobfolder.progress_of(folder, document)
        if final == total:
            changed = jobfolder.changed_file(folder, document)
            print(nothing_to_resume(folder, final, total, changed), file=sys.stderr)
            return EXIT_OK
        job = jobfolder.reopen(folder, document, args.use_stored)
    except (jobfile.JobFileError, StateError, RecordError) as error:
        return _fail(str(error))
    ready = _preflight(job, args.backend or str(document.get("backend") or "local"), args)
    if ready is None:
        return EXIT_USAGE
    return execute(job, jobfolder.continue_state(folder, document, job), ready, args)


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
