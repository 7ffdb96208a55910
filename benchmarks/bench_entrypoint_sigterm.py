"""How long `ssebench entrypoint` takes from SIGTERM to exit with an agent that ignores TERM.

`docker stop` sends SIGTERM and kills 10 s later; the entrypoint promises results.json
before that (docs/container.md: one 5 s grace). This measures the real figure: a real
daemon and server, an agent (`bash`, TERM ignored, with a child) that must be killed.

    .venv/bin/python benchmarks/bench_entrypoint_sigterm.py [RUNS]
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ssebench.supervise import free_port
from tests.helpers.tasks import make_task


def once() -> tuple[float, int, bool]:
    root = Path(tempfile.mkdtemp(prefix="bench-sigterm-"))
    try:
        task = make_task(root / "task")
        ready = root / "ready"
        env = {
            **os.environ,
            "SSE_TASK": str(task.file),
            "SSE_RESULTS_DIR": str(root / "results"),
            "SSE_MCP_PORT": str(free_port()),
            "MCP_LOG_DIR": str(root / "logs"),
        }
        agent = f"trap '' TERM; sleep 300 & touch {ready}; while :; do wait; done"
        proc = subprocess.Popen(
            [sys.executable, "-c", "from ssebench.cli import main; main()", "entrypoint", "--", "bash", "-c", agent],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the agent never started")
            time.sleep(0.05)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        return time.monotonic() - started, proc.returncode, (root / "results" / "results.json").is_file()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    took = []
    for i in range(runs):
        seconds, code, written = once()
        took.append(seconds)
        print(f"run {i + 1}: exit {code}, {seconds:.2f} s after SIGTERM, results.json written: {written}")
    print(
        f"SIGTERM to exit over {runs} runs: min {min(took):.2f} s, median {statistics.median(took):.2f} s, "
        f"max {max(took):.2f} s (docker stop kills at 10 s)"
    )


if __name__ == "__main__":
    main()
