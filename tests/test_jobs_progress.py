"""What ``ssebench jobs run`` shows while it works: a line per run that ended (task · agent ·
level · attempt · outcome · duration · reason), plain to a pipe (no control character), a
live rich bar on a terminal (tested on a real pty); and the plural rule of every count."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from ssebench.jobs.progress import Progress, clock
from ssebench.jobs.scheduler import RunEvent
from ssebench.plural import count
from ssebench.runrecord import Outcome
from tests.helpers.jobs import JOBS, job_run, jobs, jobs_env, record_of, toggle_task


def test_plain_lines_say_each_run_that_ended_and_why() -> None:
    stream = io.StringIO()
    runs = {r: job_run(Path("/nowhere") / r, r) for r in ("t.a.L2.a1", "t.a.L2.a2")}
    with Progress(total=2, runs=runs, stream=stream) as progress:
        progress.event(RunEvent("started", "t.a.L2.a1"))
        progress.event(RunEvent("retry", "t.a.L2.a1", record_of(Outcome.INFRASTRUCTURE, "t.a.L2.a1"), 2.04))
        progress.event(RunEvent("ended", "t.a.L2.a1", record_of(Outcome.PASSED, "t.a.L2.a1"), 15.61))
        progress.event(RunEvent("started", "t.a.L2.a2"))
        progress.event(RunEvent("cancelling", ""))
        progress.event(RunEvent("ended", "t.a.L2.a2", record_of(Outcome.CANCELLED, "t.a.L2.a2"), 0.5))
    assert stream.getvalue() == (
        "[0/2] t · a · L2 · a1 · infrastructure · 2.0 s · infrastructure: as the test wrote it · will be tried again\n"
        "[1/2] t · a · L2 · a1 · passed · 15.6 s\n"
        "stopping: no new run starts; 1 run is being cancelled (Ctrl-C again to stop at once)\n"
        "[2/2] t · a · L2 · a1 · cancelled · 0.5 s · cancelled: as the test wrote it\n"
    )
    assert (progress.done, progress.passed, progress.no_verdict) == (2, 1, 1)


def test_counts_agree_in_number() -> None:
    assert [count(n, "run") for n in (0, 1, 2)] == ["0 runs", "1 run", "2 runs"]
    assert count(1, "problem") == "1 problem" and count(3, "retry") == "3 retries"
    assert [clock(s) for s in (4.9, 65, 3725)] == ["4 s", "1m 05s", "1h 02m"]


def _small_job(tmp_path: Path) -> Path:
    """toggle × {fix (passes), noop (fails its PoC)}: two real runs, one failing."""
    for folder in (tmp_path, *list(tmp_path.parents)[:2]):  # the daemon's checks (uid 65534) traverse it
        folder.chmod(folder.stat().st_mode | 0o011)
    task = toggle_task(tmp_path / "toggle")
    job = tmp_path / "job.toml"
    job.write_text(
        f'tasks = ["{task.file}"]\nconcurrency = 2\n'
        '[[agents]]\nname = "fix"\ncommand = ["sh", "-c", "echo fixed > state.txt"]\n'
        '[[agents]]\nname = "noop"\ncommand = ["true"]\n',
        encoding="utf-8",
    )
    return job


LINE = r"\[\d/2\] toggle · {agent} · L2 · a1 · {outcome} · \d+\.\d s{why}"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_pipe_gets_plain_lines_and_a_terminal_a_live_bar(tmp_path: Path) -> None:
    job = _small_job(tmp_path)
    done = jobs("run", job, "--results", tmp_path / "plain")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert any(re.fullmatch(LINE.format(agent="fix", outcome="passed", why=""), x) for x in lines[:2]), lines
    assert any(re.fullmatch(LINE.format(agent="noop", outcome="failed", why=" · failed: PoCs"), x) for x in lines[:2])
    assert lines[2:] == [
        f"job {tmp_path / 'plain'}: 2 runs: 1 checks_failed, 1 passed",
        f"report: ssebench jobs report {tmp_path / 'plain'}",
    ]
    assert "\x1b" not in done.stderr and "\r" not in done.stderr
    shown = _on_a_terminal([*JOBS, "run", str(job), "--results", str(tmp_path / "tty")])
    assert "\x1b[" in shown  # drawn, redrawn, then removed (transient)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown).replace("\r", "")
    assert "0/2 done · 0 passed · 2 running" in text  # redrawn as the runs started
    assert "running: toggle · fix · L2 · a1" in text and "━" in text
    assert re.search(LINE.format(agent="noop", outcome="failed", why=" · failed: PoCs"), text)
    assert f"job {tmp_path / 'tty'}: 2 runs: 1 checks_failed, 1 passed" in text


def _on_a_terminal(argv: list[str], timeout: float = 240) -> str:
    """ARGV's output on a pty of 120 columns, as a terminal shows it (until it exits)."""
    master, slave = pty.openpty()
    env = {**jobs_env(), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the other side closed
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        proc.wait(timeout=60)
    assert proc.returncode == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode("utf-8", errors="replace")
