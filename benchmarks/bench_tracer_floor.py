"""What tracing a build costs, by mechanism (issue 34, item 3): the same work bare, under
the daemon's strace, under strace tracing only the process syscalls, and under a probe
that never stops a process on fork (benchmarks/tracer_floor.c: a seccomp filter handing
each execve/open to a supervisor that reads the path and lets the call go on).

    .venv/bin/python benchmarks/bench_tracer_floor.py [--runs 5] [--loop 2000] [--curl] [--project NAME ...]

Workloads: a shell loop of ``--loop`` runs of ``/bin/true`` (the per-process cost alone);
with ``--curl``, curl 7.88.1's configure with the real-projects benchmark's flags; with
``--project``, that project's whole first build (benchmarks/projects.py: giflib is
link-heavy, cjson runs CMake); trees fetched and cached like there, each run in a fresh copy. The
modes alternate within a round so that load drifts hit all of them; medians are printed
with each mode's ratio to bare. Needs gcc and strace.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.bench_incremental import CONFIGURE
from benchmarks.projects import PROJECTS, tree
from ssebench.daemon.tracefile import STRACE_FLAGS

PROCESS_SYSCALLS = "execve,execveat,clone,clone3,fork,vfork"


def modes(strace: str, probe: Path, out: Path) -> dict[str, list[str]]:
    """Each mode's command prefix; the traced output goes to *out* (overwritten)."""
    procs = [a if not a.startswith("trace=") else f"trace={PROCESS_SYSCALLS}" for a in STRACE_FLAGS]
    return {
        "bare": [],
        "strace, the daemon's flags": [strace, *STRACE_FLAGS, "-o", str(out), "--"],
        "strace, process syscalls only": [strace, *procs, "-o", str(out), "--"],
        "seccomp notify probe": [str(probe), str(out)],
    }


def timed(argv: list[str], cwd: Path) -> float:
    started = time.monotonic()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--loop", type=int, default=2000)
    parser.add_argument("--curl", action="store_true", help="also curl's configure (about a minute a run)")
    parser.add_argument("--project", action="append", default=[], choices=sorted(PROJECTS), help="also its first build")
    args = parser.parse_args()
    strace = shutil.which("strace")
    if strace is None or shutil.which("gcc") is None:
        sys.exit("bench_tracer_floor: needs strace and gcc")
    with tempfile.TemporaryDirectory(prefix="tracer-floor-") as tmp:
        work = Path(tmp)
        probe = work / "tracer_floor"
        subprocess.run(["gcc", "-O2", "-o", str(probe), str(Path(__file__).with_name("tracer_floor.c"))], check=True)
        prefixes = modes(strace, probe, work / "trace.out")
        loop = ["bash", "-c", f"for i in $(seq {args.loop}); do /bin/true; done"]
        workloads: dict[str, tuple[list[str], Path | None]] = {f"{args.loop} x /bin/true": (loop, None)}
        if args.curl:
            workloads["curl 7.88.1 configure"] = (list(CONFIGURE), tree(PROJECTS["curl"]))
        for name in args.project:
            project = PROJECTS[name]
            workloads[f"{project.label}: first build"] = (["bash", "-c", project.build], tree(project))
        times: dict[tuple[str, str], list[float]] = {(w, m): [] for w in workloads for m in prefixes}
        for run in range(args.runs):
            for workload, (argv, source) in workloads.items():
                for mode, prefix in prefixes.items():
                    cwd = work
                    if source is not None:
                        cwd = work / "tree"
                        shutil.rmtree(cwd, ignore_errors=True)
                        shutil.copytree(source, cwd, symlinks=True)
                    times[(workload, mode)].append(timed([*prefix, *argv], cwd))
            print(f"run {run + 1}/{args.runs} done, load {os.getloadavg()[0]:.1f}", flush=True)
        for workload in workloads:
            bare = statistics.median(times[(workload, "bare")])
            print(f"\n{workload} (medians of {args.runs}):")
            for mode in prefixes:
                median = statistics.median(times[(workload, mode)])
                spread = f"{min(times[(workload, mode)]):.2f}-{max(times[(workload, mode)]):.2f}"
                print(f"  {mode:32} {median:7.2f} s  ({spread})  {median / bare:.2f}x bare")


if __name__ == "__main__":
    main()
