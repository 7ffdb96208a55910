"""The job the jobs tests run: 2 tasks × 2 custom agents × 2 levels × 2 attempts.

Tasks: the shipped demo (a real C overflow, built with make/gcc) and ``toggle``, a small
task whose PoC passes once the tree's ``state.txt`` says ``fixed``. Agents (plain commands,
the same here and in a task container, where only ``sh`` and ssebench's python3 exist):

- ``fixer`` writes the fix (the demo's fixed greet.c, from examples/tasks/demo-overflow.fix.patch
  applied; ``fixed`` into state.txt) and calls test_patch once through a real MCP client;
- ``noop`` does nothing.

So every run's result is known: fixer passes, noop fails a check; fixer's one call passes
(``every check passed`` at level 0, ``every check that ran passed`` at level 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.tasks import TaskFiles, make_task

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "tasks" / "demo-overflow"
FIX_PATCH = ROOT / "examples" / "tasks" / "demo-overflow.fix.patch"
JOBS = [sys.executable, "-c", "from ssebench.cli import main; main()", "jobs"]

CALL_TEST_PATCH = """\
import asyncio, os
from fastmcp import Client
async def main():
    async with Client(os.environ["SSE_MCP_URL"], timeout=600) as client:
        await client.call_tool("test_patch", {})
asyncio.run(main())
"""


def toggle_task(root: Path) -> TaskFiles:
    """A task with no compiler in it: the PoC passes once state.txt says "fixed"."""
    return make_task(
        root,
        task_id="toggle",
        description="state.txt must say fixed.",
        pocs=["poc"],
        poc_run="grep -qx fixed state.txt",
        functional="test -f state.txt",
        tree_files={"state.txt": "broken\n"},
    )


def fixed_greet(scratch: Path) -> str:
    """The demo's greet.c with the fix applied (by patch(1), as a user would)."""
    tree = scratch / "fixed-demo"
    subprocess.run(["cp", "-r", str(DEMO / "src"), str(tree)], check=True)
    subprocess.run(["patch", "-p1", "-s", "-i", str(FIX_PATCH)], cwd=tree, check=True)
    return (tree / "greet.c").read_text(encoding="utf-8")


def fixer_command(scratch: Path) -> list[str]:
    greet = fixed_greet(scratch)
    assert "SSE_EOF" not in greet
    script = (
        "if [ -f greet.c ]; then cat > greet.c <<'SSE_EOF'\n"
        f"{greet}SSE_EOF\n"
        "else echo fixed > state.txt; fi\n"
        'exec python3 -c "$1"\n'
    )
    return ["sh", "-c", script, "fixer", CALL_TEST_PATCH]


def write_job(folder: Path, *, concurrency: int = 2, extra: str = "") -> Path:
    """JOB.toml of the 2 × 2 × 2 × 2 job in *folder* (with the toggle task beside it)."""
    folder.mkdir(parents=True, exist_ok=True)
    toggle = toggle_task(folder / "toggle")
    job = folder / "job.toml"
    job.write_text(
        f"tasks = [{json.dumps(str(DEMO))}, {json.dumps(str(toggle.file))}]\n"
        "levels = [0, 2]\n"
        "attempts = 2\n"
        f"concurrency = {concurrency}\n"
        f"{extra}\n"
        "[[agents]]\n"
        'name = "fixer"\n'
        f"command = {json.dumps(fixer_command(folder))}\n"
        "\n"
        "[[agents]]\n"
        'name = "noop"\n'
        'command = ["true"]\n',
        encoding="utf-8",
    )
    return job


def jobs_env() -> dict[str, str]:
    """This interpreter's bin first on PATH: a run's python3 is one with fastmcp."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for var in ("SSE_JOB_ID", "SSE_JOB_RUN", "SSE_DIFFICULTY"):
        env.pop(var, None)
    return env


def jobs(*args: str | Path, timeout: float = 900, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*JOBS, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=jobs_env(),
        cwd=cwd,
        check=False,
    )


def run_ids() -> list[str]:
    """The 16 run ids, in matrix order."""
    return [
        f"{task}.{agent}.L{level}.a{attempt}"
        for task in ("demo-overflow", "toggle")
        for agent in ("fixer", "noop")
        for level in (0, 2)
        for attempt in (1, 2)
    ]
