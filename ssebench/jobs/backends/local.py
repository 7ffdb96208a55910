"""The local backend: each run is one ``ssebench run --spec FILE --results FOLDER --json`` child here.

The child starts in its own process group through ssebench/supervise.py with
PR_SET_PDEATHSIG, so a kill -9 of ``ssebench jobs`` sends it SIGTERM (its entrypoint then
stops the daemon, the server and the agent). Every process of a run carries
``SSE_JOB_ID`` and ``SSE_JOB_RUN`` in its environment: what a killed run leaves is found
by them and killed (after each run, and for a whole job on resume).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import ClassVar

from ssebench import supervise
from ssebench.jobs.backend import Capacity, JobRun
from ssebench.jobs.outcome import BACKEND_ERROR, CANCELLED, RUN_TIMEOUT, START_FAILED, Clock, settle, written
from ssebench.runrecord import Backend as RunsOn
from ssebench.runrecord import Outcome, RunResult

JOB_VAR, RUN_VAR = "SSE_JOB_ID", "SSE_JOB_RUN"  # ssebench/settings.py; container labels: engine.py
STOP_GRACE = 10.0  # SIGTERM → SIGKILL: the entrypoint needs ~5.5 s to stop its children
POLL = 0.2
RUN_LOG = "ssebench-run.log"  # the run's display (stderr), moved into its folder when it ended


def machine() -> Capacity:
    """This machine's CPUs (the ones we may use) and available memory."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    memory = 0
    with contextlib.suppress(OSError), open("/proc/meminfo", encoding="ascii") as stream:
        for line in stream:
            if line.startswith("MemAvailable:"):
                memory = int(line.split()[1]) * 1024
    return Capacity(float(cpus), memory or 4 << 30)


def run_argv(run: JobRun, extra: tuple[str, ...] = ()) -> list[str]:
    """The ``ssebench run`` command line of one run: its spec is in a file (:func:`spec_file`)."""
    return supervise.ssebench_argv("run", "--spec", str(spec_file(run)), "--results", str(run.folder), "--json", *extra)


def run_env(run: JobRun) -> dict[str, str]:
    """The run's environment: ours, the agent's ``env``, the run's marks and its own TMPDIR
    (what its processes leave there goes with it: ssebench/jobs/scratch.py)."""
    env = {**os.environ, **run.env, JOB_VAR: run.job_id, RUN_VAR: f"{run.job_id}/{run.run_id}"}
    if run.tmp is not None:
        env["TMPDIR"] = str(run.tmp)
    return env


def _log(run: JobRun) -> Path:
    return log_beside(run.folder)


def log_beside(folder: Path) -> Path:
    """The run's display while it runs: beside its folder (ssebench run wants its folder empty)."""
    return folder.parent / f".{folder.name}.log"


def spec_file(run: JobRun) -> Path:
    return spec_beside(run.folder)


def spec_beside(folder: Path) -> Path:
    """The run's spec while it runs: beside its folder (never in it), no secret in it (the
    environment is not part of a spec)."""
    return folder.parent / f".{folder.name}.spec.json"


def tidy(folder: Path) -> None:
    """What a try left beside FOLDER when ``ssebench jobs`` was killed as it ended (its
    record written, the scheduler gone before noting it): the log into the folder, the
    spec removed, as the end of :meth:`LocalBackend.run` does."""
    with contextlib.suppress(OSError):
        if not (folder / RUN_LOG).exists():
            log_beside(folder).replace(folder / RUN_LOG)
    spec_beside(folder).unlink(missing_ok=True)


def _write_spec(run: JobRun) -> None:
    from ssebench.agents.files import atomic_write

    atomic_write(spec_file(run), run.spec.model_dump_json(indent=2).encode() + b"\n", 0o644)


class LocalBackend:
    """Runs on this machine, as processes."""

    name: ClassVar[str] = "local"
    runs_as: ClassVar[RunsOn] = "process"
    extra_args: ClassVar[tuple[str, ...]] = ()

    def __init__(self, cwd: Path | None = None) -> None:
        self.cwd = cwd  # where a custom command's relative program is found (the job file's folder)

    def capacity(self) -> Capacity:
        return machine()

    def run(self, run: JobRun, cancel: threading.Event) -> RunResult:
        try:
            return self._run(run, cancel, Clock())
        finally:
            with contextlib.suppress(OSError):
                _log(run).replace(run.folder / RUN_LOG)
            spec_file(run).unlink(missing_ok=True)  # the record holds the spec now

    def _run(self, run: JobRun, cancel: threading.Event, clock: Clock) -> RunResult:
        try:
            proc = self._start(run)
        except OSError as error:
            return written(run, START_FAILED, f"could not start ssebench run: {error}", clock)
        stopped: str | None = BACKEND_ERROR  # if waiting fails: the scheduler records the backend's error
        try:
            stopped = self._wait(proc, run, cancel)
        finally:
            code = supervise.stop(proc, STOP_GRACE) if proc.poll() is None else proc.returncode
            if stopped is not None:
                self.cleanup(run)  # first: nothing of the run may write its record after ours
            result = settle(run, code, clock, stopped, _log(run))
            if stopped is None and result.outcome in (Outcome.INFRASTRUCTURE, Outcome.CANCELLED):
                self.cleanup(run)  # a normal end leaves nothing (the entrypoint stops all it started)
        return result

    def argv(self, run: JobRun) -> list[str]:
        """The run's child: ``ssebench run`` (the tests and the benchmark put another here)."""
        return run_argv(run, self.extra_args)

    def _start(self, run: JobRun) -> subprocess.Popen[bytes]:
        _write_spec(run)
        with open(_log(run), "wb") as log:
            return supervise.popen(
                self.argv(run),
                self.env(run),
                die_with_parent=True,
                cwd=self.cwd,
                stdout=subprocess.DEVNULL,  # --json: results.json again; the run folder has it
                stderr=log,
            )

    def env(self, run: JobRun) -> dict[str, str]:
        return run_env(run)

    def _wait(self, proc: subprocess.Popen[bytes], run: JobRun, cancel: threading.Event) -> str | None:
        """Wait for the run; None when it ended by itself, else why it was stopped."""
        limit = run.spec.run_timeout
        deadline = time.monotonic() + limit if limit else None
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=POLL)
                return None
            if cancel.is_set() or (deadline is not None and time.monotonic() > deadline):
                why = CANCELLED if cancel.is_set() else RUN_TIMEOUT
                supervise.signal_group(proc, signal.SIGTERM)  # the entrypoint forwards it and cleans up
                supervise.stop(proc, STOP_GRACE)
                return why

    def cleanup(self, run: JobRun) -> None:
        """Kill whatever of this run outlived its ``ssebench run``."""
        supervise.kill_marked(RUN_VAR, f"{run.job_id}/{run.run_id}")

    def sweep(self, job_id: str) -> None:
        supervise.kill_marked(JOB_VAR, job_id)

    def abort(self, job_id: str) -> None:
        supervise.kill_marked(JOB_VAR, job_id)  # SIGKILL: each run's wait sees its child gone
