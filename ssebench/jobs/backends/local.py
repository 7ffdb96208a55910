"""The local backend: each run is one ``ssebench run --results FOLDER --json`` child here.

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
from ssebench.jobs.backend import Outcome, Resources, RunSpec
from ssebench.jobs.outcome import CANCELLED, KILLED, NO_RESULTS, RUN_TIMEOUT, START_FAILED, classify

JOB_VAR, RUN_VAR = "SSE_JOB_ID", "SSE_JOB_RUN"  # ssebench/settings.py; container labels: engine.py
STOP_GRACE = 10.0  # SIGTERM → SIGKILL: the entrypoint needs ~5.5 s to stop its children
POLL = 0.2
RUN_LOG = "ssebench-run.log"  # the run's display (stderr), moved into its folder when it ended


def machine() -> Resources:
    """This machine's CPUs (the ones we may use) and available memory."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    memory = 0
    with contextlib.suppress(OSError), open("/proc/meminfo", encoding="ascii") as stream:
        for line in stream:
            if line.startswith("MemAvailable:"):
                memory = int(line.split()[1]) * 1024
    return Resources(float(cpus), memory or 4 << 30)


def run_argv(spec: RunSpec, extra: tuple[str, ...] = ()) -> list[str]:
    """The ``ssebench run`` command line of one run."""
    argv = supervise.ssebench_argv("run", "--task", str(spec.task), "--results", str(spec.folder), "--json")
    argv += ["--difficulty", str(spec.level), *extra]
    timeout = spec.agent_timeout or spec.phase_timeouts.get("agent")
    if timeout:
        argv += ["--agent-timeout", str(max(1, round(timeout)))]
    if "mcp" in spec.phase_timeouts:
        argv += ["--mcp-timeout", str(max(1, round(spec.phase_timeouts["mcp"])))]
    return argv + (["--", *spec.command] if spec.command else ["--agent", spec.agent])


def run_env(spec: RunSpec) -> dict[str, str]:
    env = {**os.environ, **spec.env, JOB_VAR: spec.job_id, RUN_VAR: f"{spec.job_id}/{spec.run_id}"}
    if spec.model:
        env["SSE_AGENT_MODEL"] = spec.model
    return env


def _log(spec: RunSpec) -> Path:
    """Beside the run's folder while it runs (ssebench run wants its folder empty)."""
    return spec.folder.parent / f".{spec.folder.name}.log"


class LocalBackend:
    """Runs on this machine, as processes."""

    name: ClassVar[str] = "local"
    extra_args: ClassVar[tuple[str, ...]] = ()

    def __init__(self, cwd: Path | None = None) -> None:
        self.cwd = cwd  # where a custom command's relative program is found (the job file's folder)

    def capacity(self) -> Resources:
        return machine()

    def run(self, spec: RunSpec, cancel: threading.Event) -> Outcome:
        try:
            proc = self._start(spec)
        except OSError as error:
            return Outcome("infra", START_FAILED, None, f"could not start ssebench run: {error}")
        stopped: str | None = "error"
        try:
            stopped = self._wait(proc, spec, cancel)
        finally:
            code = supervise.stop(proc, STOP_GRACE) if proc.poll() is None else proc.returncode
            outcome = classify(code, spec.folder, stopped)
            if stopped is not None or outcome.status in (KILLED, NO_RESULTS, "interrupted"):
                self.cleanup(spec)  # a normal end leaves nothing (the entrypoint stops all it started)
            with contextlib.suppress(OSError):
                _log(spec).replace(spec.folder / RUN_LOG)
        return outcome

    def _start(self, spec: RunSpec) -> subprocess.Popen[bytes]:
        with open(_log(spec), "wb") as log:
            return supervise.popen(
                run_argv(spec, self.extra_args),
                self.env(spec),
                die_with_parent=True,
                cwd=self.cwd,
                stdout=subprocess.DEVNULL,  # --json: results.json again; the run folder has it
                stderr=log,
            )

    def env(self, spec: RunSpec) -> dict[str, str]:
        return run_env(spec)

    def _wait(self, proc: subprocess.Popen[bytes], spec: RunSpec, cancel: threading.Event) -> str | None:
        """Wait for the run; None when it ended by itself, else why it was stopped."""
        limit = spec.phase_timeouts.get("run")
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

    def cleanup(self, spec: RunSpec) -> None:
        """Kill whatever of this run outlived its ``ssebench run``."""
        supervise.kill_marked(RUN_VAR, f"{spec.job_id}/{spec.run_id}")

    def sweep(self, job_id: str) -> None:
        supervise.kill_marked(JOB_VAR, job_id)
