"""What the entrypoint costs around the agent: start-up to the first answered MCP
``initialize``, and the whole run of an agent that does nothing (``true``) on a task whose
checks are ``true``. Run by hand:

    .venv/bin/python benchmarks/bench_entrypoint.py [--runs 5]

Prints the median and the range of each figure over the runs, from results.json.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASK = """id = "bench"
source = "src"
[build]
run = "true"
[functional]
run = "true"
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def one_run(root: Path, n: int) -> dict[str, float]:
    results = root / f"results-{n}"
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ssebench.cli import main; main()",
            "entrypoint",
            "--task",
            str(root / "task.toml"),
            "--results-dir",
            str(results),
            "--port",
            str(free_port()),
            "--",
            "true",
        ],
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"run {n} failed (exit {proc.returncode}):\n{proc.stderr}")
    data = json.loads((results / "results.json").read_text())
    stages = data["stages"]
    return {
        "daemon ready (s)": stages["daemon"]["seconds"],
        "server answered initialize (s)": stages["server"]["seconds"],
        "agent `true` (s)": data["agent"]["duration"],
        "whole run, wall (s)": wall,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        (root / "task.toml").write_text(TASK)
        rows = [one_run(root, n) for n in range(args.runs)]
    for key in rows[0]:
        values = [r[key] for r in rows]
        print(f"{key:34} median {statistics.median(values):6.2f}   min {min(values):6.2f}   max {max(values):6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
