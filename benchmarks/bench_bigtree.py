"""Where a call with no change goes on a tree of 100,000 files (issue 34, item 4).

Run by hand (not a test; ~2 min, ~1 GB of temp disk):

    .venv/bin/python benchmarks/bench_bigtree.py [--files 100000] [--calls 3] [--profile]

A tree of ``--files`` small files (100 per folder, 5 folder levels deep, a Makefile),
build ``make`` (one rule: nothing to do once built), build only. One daemon's runner
(in process, the real sandbox) makes its first call, then ``--calls`` calls with no
change; each call is timed by phase: the snapshot (``SourceStore.sync``), the build
step (the engine's plan and, without a change, its answer from the last build), and
the rest of the call (run folders, events, the sweep). Then the same without the
tree's file-change watch (``SourceStore.watch = False``: every snapshot walks the whole
tree, as before issue 34's watch), interleaved. Prints the medians and the process's
peak RSS; ``--profile`` prints cProfile's top functions of the snapshot and the plan of
one no-change call (with the watch). bench_nochange.py compares the answer from the
last build with the build run again.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ssebench.daemon import buildgraph, procs, sandbox_setup
from ssebench.daemon.mirror import fs_now as mirror_now
from ssebench.daemon.runner import Runner
from ssebench.difficulty import Check
from ssebench.task import load_task
from tests.helpers.tasks import make_task

MAKEFILE = "all: built\nbuilt:\n\ttouch built\n"


def make_tree(tree: Path, files: int) -> None:
    n = 0
    while n < files:
        folder = tree / f"d{n // 10000}" / f"e{n // 1000 % 10}" / f"f{n // 100 % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(min(100, files - n)):
            (folder / f"s{i}.c").write_text(f"int v{n + i} = {n + i};\n")
        n += 100


def call(runner: Runner) -> dict[str, float]:
    """One build-only call: seconds by phase."""
    out: dict[str, float] = {}

    async def go() -> None:
        t0 = time.monotonic()
        run = await runner.prepare()
        out["snapshot"] = time.monotonic() - t0
        t1 = time.monotonic()
        async for _ in runner.execute(run, [Check.BUILD]):
            pass
        build = run.results[Check.BUILD]
        if build.state != "passed":
            sys.exit(f"the build {build.state}: {runner.last_build}")
        out["build step"] = build.elapsed
        out["rest"] = time.monotonic() - t1 - build.elapsed
        out["call"] = time.monotonic() - t0

    asyncio.run(go())
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    procs.enable_subreaper()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-bigtree-") as tmpd:
        tmp = Path(tmpd)
        os.chmod(tmp, 0o711)  # a root daemon's checks (uid 65534) must traverse to their trees
        files = make_task(tmp / "task", build="make", functional=None, tree_files={"Makefile": MAKEFILE})
        t0 = time.monotonic()
        make_tree(files.tree, args.files)
        print(f"tree: {args.files} files in {time.monotonic() - t0:.1f} s")
        task, box = load_task(files.file), sandbox_setup.detect()
        runners = {}
        for label, watch in (("with the watch", True), ("without the watch", False)):
            (tmp / f"ws-{watch}").mkdir()
            runners[label] = Runner(task, files.tree, tmp / f"ws-{watch}", heartbeat=3600, sandbox=box)
            runners[label].workspace.store.watch = watch
            print(f"first call ({label}): {call(runners[label])['call']:.2f} s", flush=True)
        if not runners["with the watch"].workspace.store.watching:
            print("the watch could not start (see stderr): both runners walk the whole tree")
        time.sleep(2.1)  # past the snapshot's racy window (2 s) of the tree's creation: then
        for runner in runners.values():  # one uncounted call, after which the stat cache trusts it
            call(runner)
        phases: dict[str, list[dict[str, float]]] = {label: [] for label in runners}
        for _ in range(args.calls):
            for label, runner in runners.items():
                phases[label].append(call(runner))
        for label, rows in phases.items():
            med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
            print(f"{label}: " + ", ".join(f"{k} {v:.3f} s" for k, v in med.items()))
        if args.profile:  # the call's work runs in threads: its two big parts, here, profiled
            runner = runners["with the watch"]
            profile = cProfile.Profile()
            profile.enable()
            snapshot = runner.workspace.store.sync()
            mirror = runner.workspace.mirror
            assert mirror.manifest is not None
            buildgraph.plan(mirror.manifest, snapshot.manifest, buildgraph.Graph(), mirror_now(mirror.path.parent))
            profile.disable()
            runner.workspace.store.release(snapshot)
            pstats.Stats(profile).sort_stats("tottime").print_stats(15)
    print(
        f"peak RSS of this process (both runners): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
