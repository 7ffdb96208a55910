"""The scheduler's own cost at scale: N runs of an instant agent, a kill -9 halfway, a resume.

A full ``ssebench run`` (daemon, server, agent, grading) costs 1-2 s of CPU, so 10,000 of
them take hours on 2 cores and would measure ``ssebench run``, not the scheduler. Here each
run goes through the real ``ssebench jobs run`` command line, the real scheduler, job.json
and its journal, the progress lines, and the real local backend (its own process group,
PR_SET_PDEATHSIG, the run's marks in its environment, the /proc sweep for leftovers, the log
moved into the run folder, the record read back through ssebench/runrecord.py); only the
child it starts is an instant ``sh`` that writes the record a passing ``ssebench run``
writes, instead of ``ssebench run`` itself (docs/jobs.md, "Scale").

Figures: wall time per run; the CPU time of the ``ssebench jobs`` process itself (user +
sys, its children excluded: the scheduler's overhead per run); its peak RSS; after a kill -9
when half the runs ended, a resume, and the count of runs started again (exactly the ones
not finished when it was killed, each finished run started once).

    .venv/bin/python benchmarks/bench_jobs.py [N] [-n CONCURRENCY]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ssebench import runrecord
from ssebench.jobs.backend import Capacity, JobRun
from ssebench.jobs.backends.local import LocalBackend

INSTANT = 'printf "%s\\n" "$1" >> "$2" && printf "%s\\n" "$3" > "$4/results.json"'


def passing(run: JobRun) -> str:
    """The record a passing ``ssebench run`` of RUN writes (the fields the scheduler and report read)."""
    task = runrecord.TaskRef(id=run.spec.task_id, file=run.spec.task_file)
    record = runrecord.RunResult(
        spec=run.spec, outcome=runrecord.Outcome.PASSED, status="passed", exit_code=0, passed=True, task=task
    )
    return json.dumps(record.model_dump(mode="json"))


class InstantBackend(LocalBackend):
    """The local backend whose child is an instant sh instead of ssebench run."""

    def __init__(self, executions: Path) -> None:
        super().__init__(cwd=None)
        self.executions = executions

    def capacity(self) -> Capacity:
        return Capacity(1024.0, 1 << 50)  # the -n limit decides, not this machine's size

    def argv(self, run: JobRun) -> list[str]:
        return ["sh", "-c", INSTANT, "sh", run.run_id, str(self.executions), passing(run), str(run.folder)]


def child(argv: list[str]) -> None:
    """``ssebench jobs run|resume`` in this process, with the instant backend."""
    from ssebench.jobs import backends

    executions = Path(os.environ["BENCH_EXECUTIONS"])
    backend = InstantBackend(executions)
    backends.BACKENDS["local"] = lambda args, cwd: backend
    from ssebench.cli import main

    began = time.monotonic()
    try:
        main(argv)
    except SystemExit as done:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        stats = {
            "wall": time.monotonic() - began,
            "cpu": usage.ru_utime + usage.ru_stime,
            "max_rss_kib": usage.ru_maxrss,
            "exit": done.code,
        }
        print(json.dumps(stats), flush=True)


def _spawn(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "BENCH_EXECUTIONS": str(root / "executions.log")}
    log = open(root / "progress.log", "a", encoding="utf-8")
    return subprocess.Popen(
        [sys.executable, __file__, "--child", *args], env=env, stdout=subprocess.PIPE, stderr=log, text=True
    )


def _ended(journal: Path) -> int:
    try:
        text = journal.read_text(encoding="utf-8")
    except FileNotFoundError:
        return 0
    return text.count('"state": "ended"')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", type=int, nargs="?", default=10_000)
    parser.add_argument("-n", type=int, default=4)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-jobs-"))
    os.chmod(root, 0o755)
    from tests.helpers.jobs import toggle_task

    task = toggle_task(root / "toggle")
    job = root / "job.toml"
    job.write_text(
        f'tasks = ["{task.file}"]\nattempts = {args.runs}\n[[agents]]\nname = "instant"\ncommand = ["true"]\n'
    )
    out = root / "out"

    full = _spawn(root, "jobs", "run", str(job), "--results", str(out), "-n", str(args.n))
    while _ended(out / "journal.jsonl") < args.runs // 2 and full.poll() is None:
        time.sleep(0.05)
    os.kill(full.pid, signal.SIGKILL)
    full.wait()
    before = {r["run_id"]: r["state"] for r in _records(out)}
    time.sleep(0.5)  # PR_SET_PDEATHSIG: the runs in flight die with it
    resumed = _spawn(root, "jobs", "resume", str(out), "-n", str(args.n))
    stdout, _ = resumed.communicate()
    stats = json.loads(stdout.strip().splitlines()[-1])
    _report(args, root, out, before, stats)


def _records(out: Path) -> list[dict]:
    from ssebench.jobs.state import read

    return list(read(out)["runs"])


def _report(args: argparse.Namespace, root: Path, out: Path, before: dict[str, str], stats: dict) -> None:
    records = _records(out)
    executions = collections.Counter((root / "executions.log").read_text().split())
    finished = [r for r, s in before.items() if s == "ended"]
    in_flight = [r for r, s in before.items() if s == "running"]
    missing = args.runs - len(finished)
    print(f"runs: {args.runs}, at most {args.n} at once; killed -9 after {len(finished)} had ended")
    print(f"resume: exit {stats['exit']}, ran the {missing} missing runs in {stats['wall']:.2f} s")
    passed = all(runrecord.read(out / r["folder"]).outcome is runrecord.Outcome.PASSED for r in records)
    print(f"  every run ended, its record passed: {all(r['state'] == 'ended' for r in records) and passed}")
    print(f"  every run finished before the kill started exactly once: {all(executions[r] == 1 for r in finished)}")
    print(f"  runs in flight at the kill: {len(in_flight)}, started again: {sum(executions[r] > 1 for r in in_flight)}")
    print(f"  runs started twice that had finished: {sum(executions[r] > 1 for r in finished)}")
    print(f"  runs never started: {args.runs - len(executions)}")
    cpu = stats["cpu"] / max(1, missing) * 1000
    print(f"  wall per run: {stats['wall'] / max(1, missing) * 1000:.2f} ms; scheduler CPU per run: {cpu:.2f} ms")
    print(f"  peak RSS of ssebench jobs (resume): {stats['max_rss_kib'] / 1024:.1f} MiB")
    print(f"  job.json: {(out / 'job.json').stat().st_size / 1024:.0f} KiB; folder {root}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
    else:
        main()
