"""What the check sandbox costs in the Docker sidecar: the sidecar's start until its daemon
answers /health, and a full ``ssebench grade`` of the demo task (build, 2 PoCs, intent,
functional) in that container with the sandbox and with ``SSE_NO_SANDBOX=1``.

    DOCKER_HOST=unix:///var/lib/ssebench/docker/docker.sock \\
        .venv/bin/python benchmarks/bench_docker_sandbox.py [N]    # N grades each (default 5)

Needs a running engine with the base image (scripts/docker-engine.sh start,
scripts/docker-base-image.sh); builds the task image when the code changed.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from ssebench.container import docker

TASK = Path(__file__).resolve().parents[1] / "examples" / "tasks" / "demo-overflow"


def main(rounds: int) -> None:
    engine = docker.DockerEngine.locate()
    image = docker.build_task_image(engine, docker.DEFAULT_BASE_IMAGE)
    with docker._workspace(TASK, TASK / "src") as space:
        uid, gid = docker.daemon_user()
        for path in (space.task, space.tree, space.sockets):
            docker._chown_tree(path, uid, gid)
        name = f"ssebench-bench-{uuid.uuid4().hex[:8]}"
        began = time.monotonic()
        engine.start_detached(
            name=name,
            image=image,
            command=["daemon", "--task", "/task/task.toml", "--tree", "/tree", "--socket", "/run/ssebench/daemon.sock"],
            mounts={space.task: "/task:ro", space.tree: "/tree", space.sockets: "/run/ssebench"},
            env={"SSE_DIFFICULTY": "2"},
            options=docker.sandbox_options(uid, gid),
        )
        try:
            health = docker.wait_for_sidecar(engine, name, space.sockets / "daemon.sock")
            print(f"sidecar start -> /health: {time.monotonic() - began:.2f} s (sandbox: {health['sandbox']})")
            for label, env in (("sandbox", []), ("SSE_NO_SANDBOX=1", ["--env", "SSE_NO_SANDBOX=1"])):
                times = []
                for _ in range(rounds):
                    began = time.monotonic()
                    done = subprocess.run(
                        [
                            "docker",
                            "exec",
                            *env,
                            name,
                            "ssebench",
                            "grade",
                            "--task",
                            "/task/task.toml",
                            "--tree",
                            "/tree",
                            "--json",
                        ],
                        capture_output=True,
                        env=engine.environ(),
                        check=False,
                        timeout=600,
                    )
                    times.append(time.monotonic() - began)
                    if done.returncode != 1:  # the demo tree is unfixed: a check fails
                        raise SystemExit(f"grade exited {done.returncode}: {done.stderr.decode()[-2000:]}")
                print(
                    f"grade ({label}): median {statistics.median(times):.2f} s, "
                    f"min {min(times):.2f} s, max {max(times):.2f} s over {rounds}"
                )
        finally:
            engine.docker("rm", "--force", "--volumes", name)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
