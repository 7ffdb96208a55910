"""Equivalence on a real project (issue 34): a long-lived daemon vs a fresh one on zstd.

Run by hand (not a test; a fresh daemon builds zstd clean at every step, ~1-2 min each
on 2 shared cores):

    .venv/bin/python benchmarks/bench_equivalence_zstd.py [--steps 12] [--seed 1]

zstd 1.5.4 (the tree of ``bench_incremental.py --zstd``), build ``make -j2 && make -j2
-C tests datagen``. A seeded agent makes the edits of the zstd loop and its neighbours:
one line of ``lib/common/entropy_common.c`` (compiled static, shared and into the zstd
program), of a header many sources include (``lib/common/xxhash.h``), of the CLI
(``programs/zstdcli.c``, its name in ``zstd -V``), or a touch. After each edit one
long-lived Runner and a fresh Runner each answer a call (build + functional) on the
same tree; as in tests/helpers/equivalence.py, every check's state and every failed
check's log must be equal. The functional check prints the md5 of every build output (every object,
.d file, archive, shared library, the zstd program, datagen) and ``zstd -V``: so the two
answers are equal only when the incremental build's outputs are a clean build's, byte
for byte. Prints the steps, the mismatches (must be 0), and the long-lived daemon's
decisions with the fallback rate (clean builds / calls after the first).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_incremental import ZSTD_BUILD, zstd_tree

from ssebench.daemon import procs, sandbox_setup
from ssebench.daemon.runner import Runner
from ssebench.difficulty import Check
from ssebench.task import load_task
from tests.helpers.tasks import make_task

OUTPUTS = (
    "find . -type f \\( -path '*/obj/*' -o -name 'libzstd*' -o -path ./programs/zstd -o -path ./tests/datagen \\)"
    " -print0 | LC_ALL=C sort -z | xargs -0 md5sum"
)
FUNCTIONAL = f"{OUTPUTS}; ./programs/zstd -V; exit 3"
CHECKS = [Check.BUILD, Check.FUNCTIONAL]


def _edit(tree: Path, rng: random.Random, n: int) -> str:
    """One edit of the agent: what it did."""
    kind = rng.choice(["entropy", "entropy", "entropy", "header", "cli", "touch"])
    if kind == "touch":
        rel = rng.choice(["lib/common/entropy_common.c", "lib/compress/zstd_compress.c"])
        os.utime(tree / rel)
        return f"touch {rel}"
    rel = {"entropy": "lib/common/entropy_common.c", "header": "lib/common/xxhash.h", "cli": "programs/zstdcli.c"}[kind]
    path = tree / rel
    text = path.read_text()
    if kind == "cli":
        head, _, rest = text.partition('#define COMPRESSOR_NAME "')
        name = rng.choice(["Zstandard CLI", "Zstandard CLI x", "Zstandard CLI y"])
        path.write_text(f'{head}#define COMPRESSOR_NAME "{name}"{rest[rest.index(chr(34)) + 1 :]}')
        return f"{rel}: COMPRESSOR_NAME {name!r}"
    path.write_text(text.split("/* bench edit")[0] + f"/* bench edit {n} */\n")
    return f"one line of {rel}"


def _call(runner: Runner) -> dict[str, tuple[str, str]]:
    async def go() -> dict[str, tuple[str, str]]:
        run = await runner.prepare()
        async for _ in runner.execute(run, CHECKS):
            pass
        # A passed check's log is not compared (the daemon's rule, tests/helpers/equivalence.py):
        # make -j2 interleaves, and an incremental build prints less.
        return {
            c.value: (r.state, r.log.read_text() if r.log and r.state == "failed" else "")
            for c, r in run.results.items()
        }

    return asyncio.run(go())


def _keep(folder: Path, ours: dict[str, tuple[str, str]], fresh: dict[str, tuple[str, str]]) -> None:
    """Both answers, a file per check and side (to diff)."""
    folder.mkdir(parents=True, exist_ok=True)
    for side, answer in (("long", ours), ("fresh", fresh)):
        for check, (state, log) in answer.items():
            (folder / f"{side}-{check}.txt").write_text(f"{state}\n{log}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="write both answers of a mismatching step here")
    args = ap.parse_args()
    procs.enable_subreaper()
    rng = random.Random(args.seed)
    box = sandbox_setup.detect()
    mismatches, decisions, times = [], [], []
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-equiv-zstd-") as tmp:
        os.chmod(tmp, 0o711)  # a root daemon's checks (uid 65534) must traverse to their trees
        root = Path(tmp)
        files = make_task(root / "task", build=ZSTD_BUILD, functional=FUNCTIONAL, pocs=None, tree_files={})
        shutil.rmtree(files.tree)
        subprocess.run(["cp", "-a", str(zstd_tree()), str(files.tree)], check=True)
        task = load_task(files.file)
        (root / "ws-long").mkdir()
        long = Runner(task, files.tree, root / "ws-long", heartbeat=3600, sandbox=box)
        for step in range(args.steps + 1):
            what = "first call" if step == 0 else _edit(files.tree, rng, step)
            t0 = time.monotonic()
            ours = _call(long)
            times.append(time.monotonic() - t0)
            decisions.append(long.last_build)
            ws = root / f"ws-fresh-{step}"
            ws.mkdir()
            fresh = _call(Runner(task, files.tree, ws, heartbeat=3600, sandbox=box))
            shutil.rmtree(ws, ignore_errors=True)
            same = ours == fresh and ours["functional"][1].count("obj/") > 100
            print(
                f"{step}: {what} -> {long.last_build}, {times[-1]:.1f} s, {'same' if same else 'MISMATCH'}", flush=True
            )
            if not same and args.keep is not None:
                _keep(args.keep / f"step-{step}", ours, fresh)
            if not same:
                mismatches.append(f"step {step} ({what}):\n  long-lived: {ours}\n  fresh:      {fresh}")
    repeats = decisions[1:]
    clean = sum(d.startswith("clean") for d in repeats)
    print(f"steps {args.steps}, mismatches {len(mismatches)}, seed {args.seed}, sandbox {box.describe()}")
    print(f"fallback rate (clean builds / calls after the first) {clean}/{len(repeats)}")
    for m in mismatches:
        print(m[:4000])
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
