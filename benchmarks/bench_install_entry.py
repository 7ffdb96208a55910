"""What ``ssebench run`` saves by registering the server in-process (``actions.install_entry``)
instead of starting ``ssebench agents install AGENT --url URL`` as a child, per agent.

Each figure is the median of ROUNDS installs into a fresh private HOME (as a run has), the
same entry written both ways.

    .venv/bin/python benchmarks/bench_install_entry.py [ROUNDS]   # default: 7

Measured on 2 shared cores, two runs of 7 rounds: the command 130 to 250 ms per agent (a Python
start-up and ssebench's imports), install_entry 3 to 12 ms.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from ssebench.agents.actions import install_entry
from ssebench.agents.registry import names
from ssebench.supervise import ssebench_argv

URL = "http://127.0.0.1:3000/mcp"


def median_seconds(rounds: int, install: Callable[[dict[str, str]], None]) -> float:
    times = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as home:
            env = {"HOME": home, "PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}
            start = time.perf_counter()
            install(env)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def command(agent: str) -> Callable[[dict[str, str]], None]:
    def run(env: dict[str, str]) -> None:
        argv = ssebench_argv("agents", "install", agent, "--url", URL)
        subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True, timeout=120)

    return run


def in_process(agent: str) -> Callable[[dict[str, str]], None]:
    def run(env: dict[str, str]) -> None:
        install_entry(agent, URL, env)

    return run


def main(rounds: int) -> None:
    for agent in names():
        child = median_seconds(rounds, command(agent))
        inside = median_seconds(rounds, in_process(agent))
        print(f"{agent:10} command {child * 1000:7.1f} ms   install_entry {inside * 1000:6.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
