"""Benchmark of a call with no change at all (issue 34): the build answered from the last
build vs the build run again, side by side in one run.

Run by hand (not a test; zstd: ~2 min on 2 cores for the first builds, cached tarball
of benchmarks/bench_incremental.py):

    .venv/bin/python benchmarks/bench_nochange.py [--calls 5] [--project example] [--project zstd]

Two daemons' runners (one daemon's state each: workspace, mirror, build graph) on the
same tree, one answering a call with no change from its last build (the default), one
with that turned off (``BuildEngine.reuse = False``: the traced build runs again, as
before issue 34's change). After each one's first call, ``--calls`` rounds of one
no-change call each, interleaved, build only (level 3's checks: nothing else runs, so
the call's time is all fixed cost), plus the same build command run in place (make
finding nothing to do). Prints the medians, the ratio, and each runner's decisions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_incremental import ZSTD_BUILD, zstd_tree
from ssebench.daemon import procs, sandbox_setup
from ssebench.daemon.runner import Runner
from ssebench.difficulty import Check
from ssebench.resources import data_dir
from ssebench.task import load_task
from tests.helpers.tasks import make_task

PROJECTS = {
    "example": (lambda: data_dir("examples") / "tasks" / "demo-overflow" / "src", "make"),
    "zstd": (zstd_tree, ZSTD_BUILD),
}


def _call(runner: Runner) -> tuple[float, str]:
    async def go() -> str:
        run = await runner.prepare()
        async for _ in runner.execute(run, [Check.BUILD]):
            pass
        return run.results[Check.BUILD].state

    t0 = time.monotonic()
    state = asyncio.run(go())
    if state != "passed":
        sys.exit(f"the build {state}: {runner.last_build}")
    return time.monotonic() - t0, runner.last_build


def bench(name: str, calls: int, tmp: Path) -> list[str]:
    source, build = PROJECTS[name]
    files = make_task(tmp / name, build=build, functional=None)
    shutil.rmtree(files.tree)
    subprocess.run(["cp", "-a", str(source()), str(files.tree)], check=True)
    inplace = tmp / f"{name}-inplace"
    subprocess.run(["cp", "-a", str(files.tree), str(inplace)], check=True)
    subprocess.run(["bash", "-c", build], cwd=inplace, check=True, capture_output=True)
    task, box = load_task(files.file), sandbox_setup.detect()
    runners = {}
    for label, reuse in (("build run again", False), ("answered from the last build", True)):
        (tmp / f"ws-{name}-{reuse}").mkdir()
        runners[label] = Runner(task, files.tree, tmp / f"ws-{name}-{reuse}", heartbeat=3600, sandbox=box)
        runners[label].builder.reuse = reuse
        print(f"{name}: first call ({label}): {_call(runners[label])[0]:.1f} s", file=sys.stderr, flush=True)
    times: dict[str, list[float]] = {label: [] for label in [*runners, "in place"]}
    decisions: dict[str, set[str]] = {label: set() for label in runners}
    for _ in range(calls):
        for label, runner in runners.items():
            seconds, decision = _call(runner)
            times[label].append(seconds)
            decisions[label].add(decision.split(":")[0])
        t0 = time.monotonic()
        subprocess.run(["bash", "-c", build], cwd=inplace, check=True, capture_output=True)
        times["in place"].append(time.monotonic() - t0)
    med = {label: statistics.median(values) for label, values in times.items()}
    again, reused = med["build run again"], med["answered from the last build"]
    rows = [f"{name}: a call with no change, build only, medians of {calls} (s)"]
    rows += [f"  {label:30s} {med[label]:7.3f}  {', '.join(sorted(decisions.get(label, ())))}" for label in times]
    rows.append(
        f"  run again / answered: {again / reused:.1f}x; answered - in place: {reused - med['in place']:+.3f} s"
    )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--project", action="append", choices=sorted(PROJECTS), default=[])
    args = ap.parse_args()
    procs.enable_subreaper()
    rows = [f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"]
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-nochange-") as tmpd:
        os.chmod(tmpd, 0o711)  # a root daemon's checks (uid 65534) must traverse to their trees
        for name in args.project or ["example", "zstd"]:
            rows += bench(name, args.calls, Path(tmpd))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
