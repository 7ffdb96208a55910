"""Daemon figures: run overhead with `true` checks, and RSS idle / under 500 MB of output.

    .venv/bin/python benchmarks/bench_daemon.py [--runs 50] [--output-mb 500] [--no-sandbox-compare] [--skip-rss]
    .venv/bin/python benchmarks/bench_daemon.py --runs 50 --isolation-compare

Starts a real ``ssebench daemon`` on a temporary socket with a task written to a temp
folder, and reports:
- the time of a full ``POST /runs`` round trip (client's view, NDJSON to the result)
  whose checks are all ``true``, at level 0 (build, 2 PoCs, intent diff + tests) and at
  level 2 (build + functional): median and p90 of N runs; with ``true`` checks this is
  the daemon's own overhead (snapshot, copies, process starts, sweeps);
- with ``--no-sandbox-compare``: the same runs once more with ``--no-sandbox``, and the
  sandbox's cost per sandboxed process (difference of the medians divided by the number
  of processes a run starts in the sandbox: 5 at level 0 — build, 2 PoCs, git apply,
  intent — and 2 at level 2). Without the sandbox the views are copies instead of
  overlays, so that difference mixes in the view strategy; the figure that isolates the
  sandbox is the last one: one ``bash -c true`` started as the runner starts it, bare
  and through ``Sandbox.wrap`` (cgroup guard included), alternating, N runs each;
- the daemon's RSS when idle, and its peak while a check prints N MB (sampled every
  20 ms) and while that log is streamed back.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from tests.helpers.daemon import running_daemon  # noqa: E402
from tests.helpers.tasks import make_task  # noqa: E402
from tests.test_daemon_lifecycle import RssSampler  # noqa: E402

MiB = 2**20


SANDBOXED = {"0": 5, "2": 2}  # processes one run starts in the sandbox, per level


def time_runs(task_file: Path, level: str, runs: int, args: tuple[str, ...] = ()) -> list[float]:
    with running_daemon(task_file, difficulty=level, heartbeat=10, args=args) as d:
        client = d.client()
        times = []
        for i in range(runs + 3):
            start = time.perf_counter()
            with client.stream("POST", "/runs", json={}) as r:
                lines = list(r.iter_lines())
            elapsed = time.perf_counter() - start
            assert '"event": "result"' in lines[-1] and '"failed"' not in lines[-1], lines[-1]
            if i >= 3:  # warm-up runs excluded
                times.append(elapsed)
        return times


def rss_figures(task_file: Path, size: int) -> tuple[int, int, int]:
    with running_daemon(task_file, difficulty="3", heartbeat=10) as d:
        d.result()
        idle = psutil.Process(d.proc.pid).memory_info().rss
        with RssSampler(d.proc.pid) as run:
            r = d.result()
        with RssSampler(d.proc.pid) as log:
            with d.client().stream("GET", f"/runs/{r['_run']}/logs/build") as resp:
                got = sum(len(c) for c in resp.iter_bytes())
        assert got == r["build"]["log_bytes"] >= size
        return idle, max(run.samples), max(log.samples)


def process_cost(runs: int) -> tuple[float, float]:
    """Median seconds of one ``bash -c true``: bare, and in the sandbox with its Guard."""
    import subprocess

    from ssebench.daemon import guard as guard_script
    from ssebench.daemon.limits import Guard, Limits
    from ssebench.daemon.sandbox import TreeView
    from ssebench.daemon.sandbox_setup import detect

    box, limits = detect(), Limits()
    bare, boxed = [], []
    with tempfile.TemporaryDirectory(prefix="bench-proc-") as tmp:
        tree, out = Path(tmp) / "tree", Path(tmp) / "out"
        tree.mkdir()
        box.share(Path(tmp))
        box.give(tree)
        for _ in range(runs + 3):
            start = time.perf_counter()
            subprocess.run(["bash", "-c", "true"], cwd=tree, stdin=subprocess.DEVNULL, check=True)
            bare.append(time.perf_counter() - start)
            start = time.perf_counter()
            guard = Guard(limits, (out, out))
            # As the runner starts it: the seccomp program's fd, the guard (it joins the
            # cgroups and, the daemon being root, drops to the checks' uid).
            launch = box.launch()
            join = guard.join_fds()
            try:
                subprocess.run(
                    guard_script.wrap(
                        box.wrap(["bash", "-c", "true"], TreeView.bind(tree), limits=limits, launch=launch),
                        user=launch.user,
                        join=join,
                    ),
                    cwd=tree,
                    stdin=subprocess.DEVNULL,
                    check=True,
                    pass_fds=launch.pass_fds + join,
                )
            finally:
                launch.close()
                guard.close()
            boxed.append(time.perf_counter() - start)
    return statistics.median(bare[3:]), statistics.median(boxed[3:])


def isolation_cost(runs: int) -> tuple[float, float]:
    """Median seconds of one ``bash -c true`` started as the runner starts it (guard,
    cgroup, bwrap), alternating: without the issue-18 isolation (no seccomp filter, bwrap
    as the daemon's uid) and with it (the filter; as root, the checks' uid)."""
    import dataclasses

    from ssebench.daemon import guard as guard_script
    from ssebench.daemon.limits import Guard, Limits
    from ssebench.daemon.sandbox import TreeView
    from ssebench.daemon.sandbox_setup import detect

    new, limits = detect(), Limits()
    old = dataclasses.replace(new, seccomp=False, check_user=None)
    times: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="bench-iso-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        new.share(Path(tmp))
        new.give(tree)
        for _ in range(runs + 3):
            for isolated, box in ((False, old), (True, new)):
                guard = Guard(limits, (Path(tmp) / "out", Path(tmp) / "out"))
                launch = box.launch()
                start = time.perf_counter()
                try:
                    join = guard.join_fds()
                    argv = guard_script.wrap(
                        box.wrap(["bash", "-c", "true"], TreeView.bind(tree), limits=limits, launch=launch),
                        user=launch.user,
                        join=join,
                    )
                    subprocess_run(argv, tree, launch.pass_fds + join)
                finally:
                    launch.close()
                    guard.close()
                times[isolated].append(time.perf_counter() - start)
    return statistics.median(times[False][3:]), statistics.median(times[True][3:])


def subprocess_run(argv: list[str], cwd: Path, fds: tuple[int, ...]) -> None:
    import subprocess

    subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, check=True, pass_fds=fds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--output-mb", type=int, default=500)
    parser.add_argument(
        "--no-sandbox-compare",
        action="store_true",
        help="also time the runs with --no-sandbox and report the sandbox's cost",
    )
    parser.add_argument("--skip-rss", action="store_true", help="leave out the RSS figures")
    parser.add_argument(
        "--isolation-compare",
        action="store_true",
        help="only: one check process without and with the issue-18 isolation, alternating",
    )
    args = parser.parse_args()
    if args.isolation_compare:
        before, after = isolation_cost(args.runs)
        print(
            f"one `bash -c true` through guard + bwrap (median of {args.runs}, alternating): without the "
            f"seccomp filter and uid drop {before * 1000:.1f} ms, with them {after * 1000:.1f} ms "
            f"({(after - before) * 1000:+.1f} ms per check process)"
        )
        return
    with tempfile.TemporaryDirectory(prefix="bench-daemon-") as tmp:
        root = Path(tmp)
        true_task = make_task(
            root / "true",
            pocs=["a", "b"],
            poc_run="true",
            intent="true",
            functional="true",
            tree_files={f"f{i}.c": "int x;\n" * 50 for i in range(20)},
        )
        big = make_task(root / "big", build=f"yes 0123456789abcdef | head -c {args.output_mb * 10**6}")
        for level, what in (
            ("0", "build, 2 PoCs, intent (git apply + true); functional covered"),
            ("2", "build, functional"),
        ):
            modes = [("sandbox", ())] + ([("--no-sandbox", ("--no-sandbox",))] if args.no_sandbox_compare else [])
            medians = {}
            for mode, extra in modes:
                t = time_runs(true_task.file, level, args.runs, extra)
                q = statistics.quantiles(t, n=10)
                medians[mode] = statistics.median(t)
                print(
                    f"run with `true` checks, level {level} ({what}), {mode}: median "
                    f"{medians[mode] * 1000:.1f} ms, p90 {q[-1] * 1000:.1f} ms, min {min(t) * 1000:.1f} ms "
                    f"over {len(t)} runs"
                )
            if args.no_sandbox_compare:
                cost = (medians["sandbox"] - medians["--no-sandbox"]) / SANDBOXED[level]
                print(
                    f"  sandbox cost per sandboxed process at level {level}: {cost * 1000:.1f} ms "
                    f"(({medians['sandbox'] * 1000:.1f} - {medians['--no-sandbox'] * 1000:.1f}) / "
                    f"{SANDBOXED[level]})"
                )
        if args.no_sandbox_compare:
            bare, boxed = process_cost(args.runs)
            print(
                f"one `bash -c true`: bare {bare * 1000:.1f} ms, in the sandbox {boxed * 1000:.1f} ms "
                f"(median of {args.runs}): the sandbox costs {(boxed - bare) * 1000:.1f} ms per check process"
            )
        if args.skip_rss:
            return
        idle, run_peak, log_peak = rss_figures(big.file, args.output_mb * 10**6)
        print(f"daemon RSS idle: {idle / MiB:.1f} MiB")
        print(
            f"daemon RSS peak while a check prints {args.output_mb} MB: {run_peak / MiB:.1f} MiB "
            f"(+{(run_peak - idle) / MiB:.1f} MiB)"
        )
        print(
            f"daemon RSS peak while that log is streamed to a client: {log_peak / MiB:.1f} MiB "
            f"(+{(log_peak - idle) / MiB:.1f} MiB)"
        )


if __name__ == "__main__":
    main()
