"""The long equivalence run (issue 17): a long-lived daemon's answers vs a fresh daemon's.

Run by hand (not a test; ~1 s a step on 2 cores):

    .venv/bin/python benchmarks/bench_equivalence.py [--steps 500] [--seed 1] [--mode sandbox|off] [--verbose]

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
import os
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
    ap.add_argument("--verbose", action="store_true", help="print every step: the edit and the decision")
    args = ap.parse_args()
    procs.enable_subreaper()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-equiv-") as tmp:
        os.chmod(tmp, 0o711)  # a root daemon's checks (uid 65534) must traverse to their trees
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
    _by_edit(d.edits)
    for line in d.log if args.verbose else ():
        print(line)
    for m in d.mismatches:
        print(m)
    return 1 if d.mismatches else 0


def _by_edit(edits: list[tuple[str, bool, str]]) -> None:
    """The fallback rate by edit (issue 34): clean builds / calls, over all calls and over
    the calls whose previous build passed (after a failed one every build is clean)."""
    print("by edit (calls after a passed build: clean / calls = fallback rate; why)")
    for name in sorted({e[0] for e in edits}):
        after_ok = [decision for edit, built, decision in edits if edit == name and built]
        clean = [x for x in after_ok if x.startswith("clean:")]
        rate = f"{len(clean)}/{len(after_ok)} = {len(clean) / max(1, len(after_ok)):.2f}"
        whys = collections.Counter(_reason(x) for x in clean).most_common(3)
        print(f"  {name:40s} {rate:>14s}  " + "; ".join(f"{n}x {w}" for w, n in whys))


def _reason(decision: str) -> str:
    """The rule, without the file name."""
    text = decision.removeprefix("clean: ")
    return " ".join("'…'" if w.startswith("'") else w for w in text.split())


if __name__ == "__main__":
    sys.exit(main())
