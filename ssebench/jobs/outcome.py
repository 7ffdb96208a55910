"""How a run ended, told from its exit status and results.json (docs/jobs.md, "Outcomes").

Shared by every backend so a run is classified the same wherever it ran: a grading verdict
(``graded``), the agent's own failure (``agent``: not retried unless ``[retry]`` asks), or
the infrastructure's (``infra``: retried by default).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ssebench.jobs.backend import Outcome

GRADED = ("passed", "checks_failed")
AGENT = ("agent_timeout", "agent_failed")
# Infrastructure statuses of results.json; and the ones the backends give when there is none.
INFRA = ("daemon_failed", "server_failed", "grading_error", "interrupted")
NO_RESULTS = "no_results"  # the run ended without writing results.json
KILLED = "killed"  # the run's process died of a signal it did not handle
CANCELLED = "cancelled"  # Ctrl-C or cancel: the scheduler stopped the run
RUN_TIMEOUT = "run_timeout"  # [timeouts] run: the whole run took too long
START_FAILED = "start_failed"  # the run could not be started at all (no engine, bad command)
USAGE = "usage_error"  # ssebench run refused its arguments (exit 2)


def read_results(folder: Path) -> dict[str, Any] | None:
    """results.json of a run folder, or None when it is missing or unreadable."""
    try:
        data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def classify(exit_status: int | None, folder: Path, stopped: str | None = None) -> Outcome:
    """The outcome of a run whose process exited with *exit_status* (negative: a signal);
    *stopped*: why the backend stopped it (``cancelled``, ``run_timeout``), if it did."""
    if stopped is not None:
        return Outcome("infra", stopped, exit_status, f"stopped by the scheduler: {stopped}")
    results = read_results(folder)
    status = results.get("status") if results else None
    error = (results or {}).get("error") or ""
    if status in GRADED:
        return Outcome(
            "graded", str(status), exit_status, "every check passed" if status == "passed" else "a check failed"
        )
    if status in AGENT:
        return Outcome("agent", str(status), exit_status, str(error))
    if isinstance(status, str):
        return Outcome("infra", status, exit_status, str(error))
    if exit_status is not None and exit_status < 0:
        return Outcome("infra", KILLED, exit_status, f"ssebench run died of signal {-exit_status}")
    if exit_status == 2:
        return Outcome("infra", USAGE, exit_status, "ssebench run refused its arguments (see ssebench-run.log)")
    return Outcome("infra", NO_RESULTS, exit_status, f"ssebench run exited {exit_status} without results.json")
