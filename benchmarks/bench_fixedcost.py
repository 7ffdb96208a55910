"""The fixed cost of a call on a tree of 100,000 files, through a real daemon (issue 34:
a repeat with no change <= 0.2 s beyond running the checks; daemon RSS <= 150 MiB).

Run by hand (not a test; ~2 min, ~1 GB of temp disk):

    .venv/bin/python benchmarks/bench_fixedcost.py [--files 100000] [--calls 5]

A tree of ``--files`` small files (benchmarks/bench_bigtree.py's), level 3, build
``make`` plus a ``cat`` of two sources (so the log shows what the build saw). A real
``ssebench daemon`` (the sandbox where the machine has one): the first call, then
``--calls`` calls with no change, timed as the client sees them (``POST /runs`` to the
result); then one call after each change a file-change watch cannot see cheaply (a
touched mtime; a folder replaced by a rename over it; a file written through a hard
link outside the tree), each followed by a call with no change. For each: the time,
``/health``'s last build and whether the log shows the tree's content (the proof that
the answers are right is tests/test_treewatch.py). The daemon's RSS: after the calls,
and its peak (sampled every 20 ms) from the first call on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from benchmarks.bench_bigtree import MAKEFILE, make_tree  # noqa: E402
from tests.helpers.daemon import DaemonProcess, start_daemon  # noqa: E402
from tests.helpers.tasks import make_task  # noqa: E402
from tests.test_daemon_lifecycle import RssSampler  # noqa: E402

MiB = 2**20
FIRST, LAST = "d0/e0/f0/s0.c", "d9/e9/f9/s0.c"


def timed(d: DaemonProcess) -> tuple[float, str, str]:
    """One call: (seconds, /health's last build, the build's log)."""
    t0 = time.perf_counter()
    with d.client(timeout=1800).stream("POST", "/runs", json={"checks": ["build"]}) as r:  # a slow first call
        r.raise_for_status()
        events = [json.loads(line) for line in r.iter_lines() if line]
    elapsed = time.perf_counter() - t0
    result = events[-1]
    assert result["event"] == "result", result
    return elapsed, d.get("/health").json()["builds"]["last"], d.log(result["run_id"], "build")


def changes(tree: Path, outside: Path) -> list[tuple[str, Callable[[], str]]]:
    """(name, apply it and return what the log must then show)."""

    def touch() -> str:
        os.utime(tree / FIRST)
        return (tree / FIRST).read_text()

    def replace_folder() -> str:
        folder = tree / Path(LAST).parent
        new = folder.with_name("new")
        shutil.copytree(folder, new)
        (new / "s0.c").write_text("int replaced = 1;\n")
        shutil.rmtree(folder)
        new.rename(folder)
        return "int replaced = 1;\n"

    def hard_link() -> str:
        os.link(tree / FIRST, outside / "link.c")
        with open(outside / "link.c", "a") as f:
            f.write("int through_the_link = 1;\n")
        return (tree / FIRST).read_text()

    return [("touched mtime", touch), ("replaced folder", replace_folder), ("hard link written outside", hard_link)]


def calls(d: DaemonProcess, tree: Path, outside: Path, n: int) -> None:
    first, _, _ = timed(d)
    print(f"first call: {first:.2f} s")
    time.sleep(2.1)  # past the snapshot's racy window (2 s) of the tree's creation
    timed(d)
    rows = [timed(d) for _ in range(n)]
    print(
        f"no change (median of {n}): {statistics.median(r[0] for r in rows):.3f} s, "
        f"max {max(r[0] for r in rows):.3f} s; last build: {rows[-1][1]}"
    )
    for name, change in changes(tree, outside):
        want = change()
        after, last, log = timed(d)
        again, last_again, _ = timed(d)
        right = "right" if want in log else "WRONG"
        print(f"{name}: {after:.3f} s ({last}; log {right}); then no change: {again:.3f} s ({last_again})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--calls", type=int, default=5)
    args = ap.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-fixedcost-") as tmpd:
        tmp = Path(tmpd)
        os.chmod(tmp, 0o711)
        build = f"make -s && cat {FIRST} {LAST}"
        files = make_task(tmp / "task", build=build, functional=None, tree_files={"Makefile": MAKEFILE})
        make_tree(files.tree, args.files)
        outside = tmp / "outside"
        outside.mkdir()
        d = start_daemon(files.file, difficulty="3", heartbeat=5)
        try:
            with RssSampler(d.proc.pid) as rss:
                calls(d, files.tree, outside, args.calls)
                idle = psutil.Process(d.proc.pid).memory_info().rss
            print(f"daemon RSS after the calls: {idle / MiB:.0f} MiB, peak {max(rss.samples) / MiB:.0f} MiB")
        finally:
            d.stop(timeout=300)  # it removes its workspace (two copies of the tree) as it exits
    return 0


if __name__ == "__main__":
    sys.exit(main())
