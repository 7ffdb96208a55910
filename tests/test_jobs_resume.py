"""``ssebench jobs``: kill -9 then resume, and Ctrl-C, with real runs of the small toggle task.

The job: toggle × {quick, sleeper} × level 2 × 2 attempts, one run at a time, so when the
first sleeper run is in flight both quick runs are finished and one sleeper run is pending.
The sleeper sleeps while its flag file exists; the test removes the flag before resuming.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ssebench import runrecord, supervise
from ssebench.jobs.state import read
from tests.helpers.jobs import JOBS, grading_job, jobs, jobs_env, nothing_left, start_until_grading, toggle_task

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
QUICK = ["toggle.quick.L2.a1", "toggle.quick.L2.a2"]
SLEEPER = ["toggle.sleeper.L2.a1", "toggle.sleeper.L2.a2"]


def _job(tmp_path: Path) -> tuple[Path, Path]:
    flag = tmp_path / "sleep-while-this-exists"
    flag.write_text("")
    task = toggle_task(tmp_path / "toggle")
    job = tmp_path / "job.toml"
    job.write_text(
        f'tasks = ["{task.file}"]\nattempts = 2\nconcurrency = 1\n'
        '[[agents]]\nname = "quick"\ncommand = ["true"]\n'
        f'[[agents]]\nname = "sleeper"\ncommand = ["sh", "-c", "if [ -e \\"$0\\" ]; then sleep 600; fi", "{flag}"]\n',
        encoding="utf-8",
    )
    return job, flag


def _start_until_the_sleeper_sleeps(job: Path, out: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*JOBS, "run", str(job), "--results", str(out)],
        env=jobs_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if (out / "job.json").exists():
            job_id = read(out)["job_id"]
            sleeping = [p for p in supervise.marked("SSE_JOB_RUN", f"{job_id}/{SLEEPER[0]}") if _is_sleep(p)]
            if sleeping:
                return proc, job_id
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.3)
    proc.kill()
    raise AssertionError("the sleeper never started")


def _is_sleep(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0")
    except OSError:
        return False


def _none_left(job_id: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while supervise.marked("SSE_JOB_ID", job_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert supervise.marked("SSE_JOB_ID", job_id) == []


def _states(out: Path) -> dict[str, tuple[str, str | None, int]]:
    """Each run's row state, its record's status (None: no record) and its tries."""
    states = {}
    for row in read(out)["runs"]:
        record = runrecord.read_if_any(out / row["folder"])
        states[row["run_id"]] = (row["state"], record.status if record else None, row["tries"])
    return states


def test_kill_9_loses_only_the_run_in_flight_and_resume_runs_exactly_the_missing(tmp_path: Path) -> None:
    job, flag = _job(tmp_path)
    out = tmp_path / "out"
    proc, job_id = _start_until_the_sleeper_sleeps(job, out)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _none_left(job_id)  # PR_SET_PDEATHSIG: the run's ssebench run stopped its agent, server, daemon
    # The sleeper's entrypoint got SIGTERM and wrote its record (interrupted: cancelled, not final).
    assert _states(out) == {
        QUICK[0]: ("ended", "checks_failed", 1),
        QUICK[1]: ("ended", "checks_failed", 1),
        SLEEPER[0]: ("running", "interrupted", 1),
        SLEEPER[1]: ("pending", None, 0),
    }
    finished = {r: (out / "runs" / r / "results.json").read_bytes() for r in QUICK}
    flag.unlink()
    done = jobs("resume", out)
    assert done.returncode == 0, done.stderr
    line = r"\[{n}/4\] toggle · sleeper · L2 · {attempt} · failed · \d+\.\d s · failed: PoCs"
    assert re.fullmatch(line.format(n=3, attempt="a1"), done.stderr.splitlines()[0])
    assert re.fullmatch(line.format(n=4, attempt="a2"), done.stderr.splitlines()[1])
    assert _states(out) == {
        QUICK[0]: ("ended", "checks_failed", 1),
        QUICK[1]: ("ended", "checks_failed", 1),
        SLEEPER[0]: ("ended", "checks_failed", 2),
        SLEEPER[1]: ("ended", "checks_failed", 1),
    }
    assert {r: (out / "runs" / r / "results.json").read_bytes() for r in QUICK} == finished  # never run again
    assert sorted(p.name for p in (out / "tries").iterdir()) == [f"{SLEEPER[0]}.try1"]
    _none_left(job_id)


def test_ctrl_c_stops_cleanly_records_the_state_and_exits_130(tmp_path: Path) -> None:
    job, flag = _job(tmp_path)
    out = tmp_path / "out"
    proc, job_id = _start_until_the_sleeper_sleeps(job, out)
    began = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert time.monotonic() - began < 20  # the entrypoint's 5 s grace, then the run is gone
    _none_left(job_id, timeout=1)
    assert _states(out) == {
        QUICK[0]: ("ended", "checks_failed", 1),
        QUICK[1]: ("ended", "checks_failed", 1),
        SLEEPER[0]: ("ended", "cancelled", 1),
        SLEEPER[1]: ("pending", None, 0),
    }
    assert json.loads((out / "job.json").read_text(encoding="utf-8"))["runs"][2]["state"] == "ended"
    cancelled = runrecord.read(out / "runs" / SLEEPER[0])
    assert (cancelled.outcome, cancelled.spec.run_id) == (runrecord.Outcome.CANCELLED, SLEEPER[0])
    assert cancelled.reason == "stopped by ssebench jobs (Ctrl-C or SIGTERM); jobs resume runs it again"
    assert stderr.endswith(
        f"job {out}: 4 runs: 1 cancelled, 2 checks_failed, 1 pending\n"
        "  1 cancelled: stopped by ssebench jobs (Ctrl-C or SIGTERM); jobs resume runs it again\n"
        f"report: ssebench jobs report {out}\n"
    )
    assert "stopping: no new run starts; 1 run is being cancelled (Ctrl-C again to stop at once)\n" in stderr
    # A comment is no change of the job: the cancelled run and the pending one run.
    flag.unlink()
    job.write_text(job.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")
    done = jobs("resume", out)
    assert done.returncode == 0, done.stderr
    assert [(s[0], s[1]) for s in _states(out).values()] == [("ended", "checks_failed")] * 4


# --- Ctrl-C while a run's grading runs a check: nothing of it left, temporary folders included ---


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_during_grading_leaves_nothing(tmp_path: Path, presses: int) -> None:
    """The first Ctrl-C cancels the run (its entrypoint stops grading and cleans up); a second
    kills everything at once and the jobs layer removes the run's TMPDIR. Either way: exit
    130 within 15 s, no process, no temporary folder, the record ``cancelled``."""
    job, env = grading_job(tmp_path)
    out = tmp_path / "out"
    proc = start_until_grading(job, out, env)
    job_id = read(out)["job_id"]
    began = time.monotonic()
    proc.send_signal(signal.SIGINT)
    if presses == 2:
        time.sleep(0.1)  # the first is being handled (cancelling the run takes longer)
        proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - began
    assert proc.returncode == 130, stderr
    assert took < (15 if presses == 1 else 8), took
    try:
        nothing_left(job_id, Path(env["TMPDIR"]), within=2)
    finally:
        shutil.rmtree(env["TMPDIR"], ignore_errors=True)
    record = runrecord.read(out / "runs" / "slow.idle.L0.a1")
    assert (record.outcome, record.status) == (runrecord.Outcome.CANCELLED, "cancelled")
    said = "stopping at once: every run of the job is killed" if presses == 2 else "is being cancelled"
    assert said in stderr
