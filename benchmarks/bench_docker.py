"""What Docker costs in ssebench: engine start, base image, image builds, one container run.

    .venv/bin/python benchmarks/bench_docker.py          # with the caches as they are (warm)
    .venv/bin/python benchmarks/bench_docker.py --cold   # a fresh engine and empty caches, as on a new CI machine

--cold uses a throw-away engine folder and cache folder (so debootstrap, pip wheel and npm
install all run), stops that engine and removes both at the end. Needs root, dockerd,
debootstrap (scripts/docker-engine.sh install). apt-get itself is not timed here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "scripts" / "docker-engine.sh"
BASE = ROOT / "scripts" / "docker-base-image.sh"
TASK = ROOT / "examples" / "tasks" / "demo-overflow"


def timed(label: str, action):
    began = time.monotonic()
    result = action()
    print(f"{label:<44} {time.monotonic() - began:7.1f} s", flush=True)
    return result


def script(*args: str) -> str:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{args[0]} failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold", action="store_true", help="fresh engine and caches")
    parser.add_argument("--agent", default="claude", help="the agent layer to build (default claude)")
    args = parser.parse_args()

    scratch = None
    if args.cold:
        scratch = Path(tempfile.mkdtemp(prefix="ssebench-bench-docker-", dir="/var/tmp"))
        os.environ["SSEBENCH_DOCKER_DIR"] = str(scratch / "engine")
        os.environ["SSEBENCH_CACHE"] = str(scratch / "cache")
        os.environ["PIP_NO_CACHE_DIR"] = "1"
        os.environ.pop("DOCKER_HOST", None)
    try:
        host = timed("engine start (or already running)", lambda: script(ENGINE, "start"))
        os.environ["DOCKER_HOST"] = host.removeprefix("DOCKER_HOST=")

        from ssebench.container import docker

        base = timed("base image", lambda: script(BASE))
        engine = docker.DockerEngine.locate()
        task_image = timed("task image (wheels + build)", lambda: docker.build_task_image(engine, base))
        timed(f"{args.agent} CLI (npm install on the host)", lambda: docker.agent_cli_dir(args.agent))
        timed(f"{args.agent} layer (build)", lambda: docker.build_agent_image(engine, args.agent, task_image))
        timed(
            "images again (nothing to build)",
            lambda: docker.build_agent_image(engine, args.agent, docker.build_task_image(engine, base)),
        )
        with tempfile.TemporaryDirectory() as results:
            result = timed(
                "sidecar run: `true` as the agent, then grading",
                lambda: docker.run_in_docker(
                    task=TASK, agent=None, agent_command=["true"], results_dir=Path(results) / "r", difficulty=2
                ),
            )
        print(f"  (exit {result.exit_code}, status {result.results and result.results['status']})")
    finally:
        if scratch is not None:
            timed("engine stop", lambda: script(ENGINE, "stop"))
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
