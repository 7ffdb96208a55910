"""A synthetic job folder in the real formats (job.json, runs/<id>/ with their records), for the
view's tests, benchmark and screenshots: every outcome a job can show, a run still going and
one not started, so the job page and the runs behind its numbers have something to say.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ssebench import runrecord
from ssebench.runrecord import Outcome, RunResult
from ssebench.view.sample import dialog_lines, write_dialog, write_run, write_task

TASKS = ("toy-overflow", "toy-leak")
AGENTS = (("claude", "claude-sonnet-4-5"), ("codex", "gpt-5-codex"))
LEVELS = (0, 2)
ATTEMPTS = 2
#: how each run of the matrix (task, agent, level, attempt order) ends
PLAN = (
    "passed", "passed", "passed", "failed",
    "failed", "passed", "agent_error", "failed",
    "passed", "agent_timeout", "passed", "infrastructure",
    "failed", "failed", "running", "pending",
)  # fmt: skip
DAEMON_ERROR = "the sandbox cannot start: bwrap: setting up uid map: Permission denied"


def run_id(task: str, agent: str, level: int, attempt: int) -> str:
    return f"{task}.{agent}.L{level}.a{attempt}"


def matrix() -> list[tuple[str, str, str, int, int]]:
    """(task, agent, model, level, attempt) in the scheduler's order."""
    return [
        (task, agent, model, level, attempt)
        for task in TASKS
        for agent, model in AGENTS
        for level in LEVELS
        for attempt in range(1, ATTEMPTS + 1)
    ]


def write_job(root: Path, name: str = "demo-job") -> Path:
    """A job folder ROOT/NAME of 16 runs (tasks under ROOT/tasks); returns the folder."""
    job, job_id = root / name, f"{name}-5f2c9a01"
    tasks = {t: write_task(root / "tasks" / t, t) for t in TASKS if not (root / "tasks" / t).exists()}
    tasks = {t: tasks.get(t) or root / "tasks" / t / "task.toml" for t in TASKS}
    rows = []
    for n, ((task, agent, model, level, attempt), how) in enumerate(zip(matrix(), PLAN, strict=True)):
        rid = run_id(task, agent, level, attempt)
        started = f"2026-11-30T04:{n:02d}:00.000Z"
        state = how if how in ("pending", "running") else "ended"
        folder = job / "runs" / rid
        if how == "running":
            folder.mkdir(parents=True)
            write_dialog(folder / "dialog.jsonl", dialog_lines(agent, model, False, 1)[:4])
        elif how != "pending":
            write_run(folder, tasks[task], agent=agent, model=model, level=level, passed=how == "passed",
                      calls=0 if how in ("agent_error", "infrastructure") else 1 + n % 3,
                      duration=20.0 + 3 * n, started=started)  # fmt: skip
            runrecord.write(folder, _ended(runrecord.read(folder), how, (job_id, rid), model, attempt))
        row = {"run_id": rid, "folder": f"runs/{rid}", "task": str(tasks[task]), "task_id": task, "agent": agent,
               "level": level, "attempt": attempt, "state": state, "started": None if how == "pending" else started,
               "ended": None, "duration": None, "tries": 0 if how == "pending" else 1}  # fmt: skip
        rows.append(row)
    header: dict[str, Any] = {"job_id": job_id, "created": "2026-11-30T04:00:00.000Z"}
    header |= {"job_file": str(root / f"{name}.toml"), "job_file_sha256": None, "flags": None, "backend": "local"}
    (job / "job.json").write_text(json.dumps({**header, "runs": rows}, indent=1) + "\n")
    return job


def _ended(base: RunResult, how: str, ids: tuple[str, str], model: str, attempt: int) -> RunResult:
    """BASE (a passed or failed run) made into a run that ended HOW, as ``ssebench run`` writes it."""
    spec = base.spec.model_copy(update={"model": model, "job_id": ids[0], "run_id": ids[1], "attempt": attempt})
    record = base.model_copy(update={"spec": spec})
    assert record.agent is not None
    if how == "agent_error":
        error = "Error: 401 invalid x-api-key"
        agent = record.agent.model_copy(update={"exit_code": 1, "calls": 0, "error": error})
        changes: dict[str, Any] = {"outcome": Outcome.AGENT_ERROR, "status": "agent_failed", "exit_code": 6}
        changes |= {"reason": error, "agent": agent, "calls": ()}
    elif how == "agent_timeout":
        agent = record.agent.model_copy(update={"exit_code": None, "signal": "SIGTERM", "timed_out": True})
        changes = {"outcome": Outcome.AGENT_TIMEOUT, "status": "agent_timeout", "exit_code": 5, "agent": agent}
        changes |= {"reason": "the agent did not finish within 3600 s"}
    elif how == "infrastructure":
        said = f"the daemon did not come up: {DAEMON_ERROR}"
        changes = {"outcome": Outcome.INFRASTRUCTURE, "status": "daemon_failed", "exit_code": 3, "reason": said}
        changes |= {"error": f"{said}\nLast lines of its log:\n  {DAEMON_ERROR}", "agent": None, "grading": None}
        changes |= {"calls": (), "passed": None}
    else:
        changes = {}
    return record.model_copy(update=changes)
