"""What ``task verify --docker`` costs: the demo with its fix, in the task image built
first (cold image), with it built (warm), and on the host for comparison.

    .venv/bin/python benchmarks/bench_verify_docker.py

Needs a Docker engine (scripts/docker-engine.sh start) and the base image
(scripts/docker-base-image.sh). "Cold" removes this checkout's task image first (never
forced: an image a container uses stays, and the figure then is a warm one); the
dependency wheels stay cached (benchmarks/bench_docker.py --cold times those). Each
verify runs with a throw-away verdict cache, so nothing is reused from an earlier verify.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "examples" / "tasks" / "demo-overflow"
FIX = ROOT / "examples" / "tasks" / "demo-overflow.fix.patch"
SSEBENCH = Path(sys.executable).parent / "ssebench"


def verify(label: str, *flags: str) -> None:
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-verify-") as cache:
        (Path(cache) / "wheels").symlink_to(_wheels())
        began = time.monotonic()
        done = subprocess.run(
            [str(SSEBENCH), "task", "verify", str(TASK), "--fix", str(FIX), *flags],
            env={**os.environ, "SSEBENCH_CACHE": cache},
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.monotonic() - began
    if done.returncode != 0:
        sys.exit(f"{label}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    print(f"{label:<44} {took:7.1f} s", flush=True)


def _wheels() -> Path:
    from ssebench import settings

    wheels = settings.cache_dir("wheels")
    wheels.mkdir(parents=True, exist_ok=True)
    return wheels


def main() -> None:
    from ssebench import settings
    from ssebench.container.engine import DockerEngine
    from ssebench.container.images import build_task_image

    engine = DockerEngine.locate()
    os.environ["DOCKER_HOST"] = engine.host
    tag = build_task_image(engine, settings.text("SSEBENCH_BASE_IMAGE"))
    removed = engine.docker("image", "rm", tag).returncode == 0
    verify("verify --docker, cold image" if removed else "verify --docker (image in use: warm)", "--docker")
    verify("verify --docker, warm image", "--docker")
    verify(
        "verify on the host",
    )


if __name__ == "__main__":
    main()
