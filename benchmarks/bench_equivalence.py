"""The long equivalence run (issue 17): a long-lived daemon's answers vs a fresh daemon's.

Run by hand (not a test; ~1 s a step on 2 cores):

    .venv/bin/python benchmarks/bench_equivalence.py [--steps 500] [--seed 1] [--mode sandbox|off]

The driver is tests/helpers/equivalence.py (tests/test_equivalence.py runs it for a
fixed seed and a few steps): a seeded random agent edits a C project (sources, headers
with and without dependencies, a generated header and its input, the Makefile's flags,
symlinks, renames, deletions, modes, mtimes restored / in the past / in the future, its
own make and make clean, git stash/checkout, edits while a call runs); after every edit
one long-lived Runner and a fresh Runner each answer a call on the same tree. Prints the
steps, the mismatches (must be 0) and how often the engine chose a clean build, and why.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ssebench.daemon import procs
from tests.helpers.equivalence import Driver


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mode", choices=("sandbox", "off"), default="sandbox")
    args = ap.parse_args()
    procs.enable_subreaper()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-equiv-") as tmp:
        d = Driver(Path(tmp), args.seed, args.mode)
        for i in range(args.steps):
            d.step()
            if (i + 1) % 50 == 0:
                print(f"  {i + 1} steps, {len(d.mismatches)} mismatches", file=sys.stderr, flush=True)
        decisions = [line.rsplit("-> ", 1)[1] for line in d.log]
    kinds = collections.Counter(x.split(":")[0] for x in decisions)
    reasons = collections.Counter(_reason(x) for x in decisions if x.startswith("clean:"))
    print(
        f"steps {d.steps}, mismatches {len(d.mismatches)}, seed {args.seed}, sandbox {d.box.describe()}, "
        f"{time.monotonic() - t0:.0f} s"
    )
    print(
        f"builds: incremental {kinds['incremental']}, clean {kinds['clean']} "
        f"({100 * kinds['clean'] / max(1, d.steps):.0f}% clean)"
    )
    for why, n in reasons.most_common():
        print(f"  clean {n:4d}  {why}")
    for m in d.mismatches:
        print(m)
    return 1 if d.mismatches else 0


def _reason(decision: str) -> str:
    """The rule, without the file name."""
    text = decision.removeprefix("clean: ")
    return " ".join("'…'" if w.startswith("'") else w for w in text.split())


if __name__ == "__main__":
    sys.exit(main())
