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
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench import runrecord
from ssebench.jobs.backend import Capacity, JobRun
from ssebench.runrecord import Outcome, RunResult, RunSpec
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


#: a status of each outcome, for records written by hand
STATUS = {
    Outcome.PASSED: "passed",
    Outcome.FAILED: "checks_failed",
    Outcome.AGENT_ERROR: "agent_failed",
    Outcome.AGENT_TIMEOUT: "agent_timeout",
    Outcome.BUDGET: "budget",
    Outcome.USAGE: "usage_error",
    Outcome.INFRASTRUCTURE: "daemon_failed",
    Outcome.CANCELLED: "cancelled",
}


def record_of(outcome: Outcome, run_id: str, *, calls: int = 0, duration: float = 1.0) -> RunResult:
    """A run's record as ssebench run writes it, ended with OUTCOME after CALLS passing test_patch calls."""
    spec = RunSpec(task_file="/t/task.toml", task_id="t", command=("true",), level=2, run_id=run_id)
    verdict = {Outcome.PASSED: True, Outcome.FAILED: False}.get(outcome)
    done = runrecord.CallRecord(number=1, level=2, ended="every check that ran passed", outcome="passed", seconds=1.8)
    return RunResult(
        spec=spec,
        outcome=outcome,
        reason=None if outcome is Outcome.PASSED else f"{outcome.value}: as the test wrote it",
        status=STATUS[outcome],
        exit_code=0 if outcome is Outcome.PASSED else 1,
        passed=verdict,
        task=runrecord.TaskRef(id="t", file=spec.task_file),
        duration=duration,
        agent=runrecord.AgentFacts(command=("true",), exit_code=0, calls=calls),
        calls=(done,) * calls,
    )


def job_run(folder: Path, run_id: str = "t.a.L2.a1", cpus: float = 1.0, run_timeout: float | None = None) -> JobRun:
    """One run of a job of its own (the local backend kills what carries its job and run id:
    tests side by side must not share them)."""
    spec = RunSpec(
        task_file="/t/task.toml",
        task_id="t",
        command=("true",),
        level=2,
        run_timeout=run_timeout,
        job_id=f"j-{secrets.token_hex(4)}",
        run_id=run_id,
        attempt=1,
    )
    return JobRun(spec, "a", {}, Capacity(cpus, 1 << 30), folder)


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


def expected(run_id: str) -> tuple[str, int]:
    return ("passed", 0) if ".fixer." in run_id else ("checks_failed", 1)


def assert_run_folders(job: Path, docker: bool = False, kube: bool = False) -> None:
    """Every run folder holds the exact record of its run (tests/helpers/jobs.py's job);
    KUBE: no ssebench-run.log (no local child), the containers' logs instead."""
    document = json.loads((job / "job.json").read_text(encoding="utf-8"))
    assert [r["run_id"] for r in document["runs"]] == run_ids()
    for row in document["runs"]:
        status, code = expected(row["run_id"])
        assert (row["state"], row["tries"], row["folder"]) == ("ended", 1, f"runs/{row['run_id']}")
        assert "status" not in row and "exit_status" not in row  # how it ended is the record's
        folder = job / row["folder"]
        record = runrecord.read(folder)
        assert (record.status, record.exit_code, record.passed) == (status, code, code == 0)
        assert record.outcome is (Outcome.PASSED if code == 0 else Outcome.FAILED)
        assert (record.spec.job_id, record.spec.run_id, record.spec.attempt) == (
            document["job_id"],
            row["run_id"],
            row["attempt"],
        )
        assert record.difficulty is not None and record.difficulty.level == row["level"]
        assert record.task.id == row["task_id"]
        fixer = ".fixer." in row["run_id"]
        assert [c.outcome for c in record.calls] == (["passed"] if fixer else [])
        assert record.agent is not None and record.agent.calls == (1 if fixer else 0)
        assert (folder / "server.log").read_text(encoding="utf-8").count("test_patch call ") == len(record.calls)
        files = {"daemon.log", "server.log", "grading.json", "ssebench-run.log", *(["container.log"] if docker else [])}
        if kube:
            files = {"daemon.log", "server.log", "grading.json", "grading.log", "container.log", "results.json"}
        assert files <= {p.name for p in folder.iterdir()}
    assert not (job / "tries").exists()


def assert_report(job: Path) -> None:
    """`ssebench jobs report --json`'s numbers for the job, exact."""
    done = jobs("report", job, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["runs"], report["attempts"]) == (16, 2)
    cells = {(c["agent"], c["level"]): c for c in report["cells"]}
    assert list(cells) == [("fixer", 0), ("fixer", 2), ("noop", 0), ("noop", 2)]
    for (agent, level), c in cells.items():
        fixer = agent == "fixer"
        ids = [f"{t}.{agent}.L{level}.a{a}" for t in ("demo-overflow", "toggle") for a in (1, 2)]
        assert (c["runs"], c["graded"], c["passed"], c["run_ids"]) == (4, 4, 4 if fixer else 0, ids)
        assert c["pass_rate"] == (1.0 if fixer else 0.0)
        assert c["pass_rate_ci95"] == pytest.approx([0.5101, 1.0] if fixer else [0.0, 0.4899], abs=1e-4)
        assert c["pass_at_k"] == ({"1": 1.0, "2": 1.0} if fixer else {"1": 0.0, "2": 0.0})
        assert c["test_patch_calls"] == (4 if fixer else 0)
        assert c["test_patch_endings"] == {  # level 0 runs every check, level 2 withholds the PoCs
            e: (4 if fixer and e == "passed" else 0)
            for e in ("passed", "failed", "no_checks", "internal_failure", "cancelled", "error")
        }
        assert {o: n for o, n in c["outcomes"].items() if n} == ({"passed": 4} if fixer else {"failed": 4})
        assert c["not_run"] == 0
        assert c["never_called_run_ids"] == ([] if fixer else ids)  # noop never calls test_patch
        assert [(b["outcome"], b["reason"], b["run_ids"]) for b in c["failures"]] == (
            [] if fixer else [("failed", "failed: PoCs", ids)]
        )
        durations = sorted(runrecord.read(job / "runs" / run_id).duration for run_id in ids)
        assert c["duration_median"] == pytest.approx((durations[1] + durations[2]) / 2)
        assert c["duration_p90"] == pytest.approx(durations[2] + (durations[3] - durations[2]) * 0.7)
    assert len(report["groups"]) == 8 and all(g["runs"] == 2 for g in report["groups"])
    tasks = {t["task"]: t for t in report["tasks"]}
    assert list(tasks) == ["demo-overflow", "toggle"]
    for t in tasks.values():
        assert (t["runs"], t["graded"], t["passed"], t["pass_rate"], t["test_patch_calls"]) == (8, 8, 4, 0.5, 4)
        assert t["pass_at_k"] == {"1": 0.5, "2": 0.5}  # the mean over its agent × level groups: 1, 1, 0, 0
