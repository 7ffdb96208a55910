"""``results.json``: the exit-status rule, the document, and its one writer.

The entrypoint writes it at the end of a run; in Docker's sidecar layout the sidecar
grades afterwards and :func:`add_sidecar_grading` merges that verdict in, with the same
exit-status rule (:func:`exit_status`) and the same writer (:func:`write`).
docs/container.md has the exit-status table.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssebench.agents.files import atomic_write

RESULTS_FILE = "results.json"
DIALOG_FILE = "dialog.jsonl"

# Exit statuses (docs/container.md has the same table). The first that applies wins.
EXIT_PASSED = 0  # agent exited 0, every check passed
EXIT_CHECKS_FAILED = 1  # agent exited 0, grading ran, a check failed
EXIT_USAGE = 2  # bad setting or task file: nothing started, nothing written
EXIT_DAEMON_FAILED = 3  # the daemon did not come up
EXIT_SERVER_FAILED = 4  # the MCP server did not answer initialize in time (or exited)
EXIT_AGENT_TIMEOUT = 5  # the agent ran out of time (grading still ran)
EXIT_AGENT_FAILED = 6  # the agent exited non-zero or could not start (grading still ran)
EXIT_GRADING_ERROR = 7  # grading could not run to a verdict
# 128 + N: the entrypoint got signal N; forwarded to the agent, grading skipped.

STATUS_BY_EXIT = {
    EXIT_PASSED: "passed",
    EXIT_CHECKS_FAILED: "checks_failed",
    EXIT_DAEMON_FAILED: "daemon_failed",
    EXIT_SERVER_FAILED: "server_failed",
    EXIT_AGENT_TIMEOUT: "agent_timeout",
    EXIT_AGENT_FAILED: "agent_failed",
    EXIT_GRADING_ERROR: "grading_error",
}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class AgentOutcome:
    """How the agent's run ended (results.json ``agent``; the same keys as the fields)."""

    command: list[str]
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    duration: float = 0.0
    timeout: int = 0
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "timed_out": self.timed_out,
            "duration": round(self.duration, 3),
            "timeout": self.timeout,
            "error": self.error,
        }


def exit_status(agent: AgentOutcome, grade_error: str | None, passed: bool | None) -> tuple[int, str | None]:
    """The run's exit status and error: the agent's outcome first, then grading's
    (results.json keeps both messages). *passed* None: no verdict (nothing graded here)."""
    if agent.timed_out:
        message = f"the agent did not finish within {agent.timeout} s"
        return EXIT_AGENT_TIMEOUT, "; ".join(filter(None, [message, grade_error]))
    if agent.exit_code != 0:
        return EXIT_AGENT_FAILED, "; ".join(filter(None, [agent.error, grade_error])) or None
    if grade_error is not None:
        return EXIT_GRADING_ERROR, grade_error
    if passed is False:
        return EXIT_CHECKS_FAILED, None
    return EXIT_PASSED, None


def status_name(exit_code: int) -> str:
    return STATUS_BY_EXIT.get(exit_code, "interrupted" if exit_code > 128 else "error")


def grading_stage(code: int, report: dict[str, Any] | None, tail: str) -> tuple[dict[str, Any], bool | None]:
    """The ``grading`` stage of ``ssebench grade --json``'s exit CODE and REPORT, and the
    verdict (None: grading failed; TAIL is its log's last lines)."""
    if code not in (0, 1) or not isinstance(report, dict):
        detail = f"grading failed (ssebench grade exited {code})" + (f":\n{tail}" if tail else "")
        return {"state": "failed", "detail": detail}, None
    passed = code == 0
    return {"state": "done", "detail": "every check passed" if passed else "a check failed", "passed": passed}, passed


def add_sidecar_grading(
    results: dict[str, Any],
    report: dict[str, Any] | None,
    stage: dict[str, Any],
    passed: bool | None,
    task: dict[str, Any],
) -> dict[str, Any]:
    """The agent container's RESULTS with the sidecar's grading merged in; the exit
    status follows :func:`exit_status` again, now with a verdict."""
    merged = {
        **results,
        "stages": {**results.get("stages", {}), "grading": {**stage, "where": "sidecar"}},
        "grading": report,
        "passed": passed,
        "task": {**results.get("task", {}), **task},
    }
    agent = AgentOutcome(**results["agent"])
    code, error = exit_status(agent, stage["detail"] if passed is None else None, passed)
    merged.update(exit_code=code, status=status_name(code), error=error)
    return merged


def check_folder(folder: Path) -> None:
    """The results folder exists (made if need be), is writable and holds no earlier run."""
    from ssebench.container.settings import SettingsError

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(f"SSE_RESULTS_DIR: cannot create '{folder}': {exc.strerror}") from None
    if not folder.is_dir():
        raise SettingsError(f"SSE_RESULTS_DIR: '{folder}' is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SettingsError(f"SSE_RESULTS_DIR: '{folder}' is not writable")
    for name in (RESULTS_FILE, DIALOG_FILE):
        if os.path.lexists(folder / name):
            raise SettingsError(f"SSE_RESULTS_DIR: {folder} already holds {name}; use an empty folder for each run")


def document(
    settings: Any,
    *,
    task: Any,
    tree: Path,
    level: Any,
    stages: dict[str, Any],
    agent: AgentOutcome,
    grading: dict[str, Any] | None,
    exit_code: int,
    error: str | None,
    started_at: str,
    duration: float,
) -> dict[str, Any]:
    """results.json of one entrypoint run (docs/container.md lists the keys)."""
    s = settings
    return {
        "version": 1,
        "status": status_name(exit_code),
        "exit_code": exit_code,
        "passed": stages.get("grading", {}).get("passed"),  # None: no verdict
        "error": error,
        "task": {"id": task.id if task else None, "file": str(s.task) if s.task else None, "tree": str(tree)},
        "difficulty": {"level": level.number, "name": level.name},
        "mode": "sidecar" if s.sidecar else "process",
        "mcp_url": s.mcp_url,
        "started_at": started_at,
        "finished_at": now(),
        "duration": round(duration, 3),
        "stages": stages,
        "agent": agent.as_json(),
        "grading": grading,
        "dialog": DIALOG_FILE if (s.results_dir / DIALOG_FILE).exists() else None,
    }


def write(path: Path, data: dict[str, Any]) -> None:
    """The one writer: all of it or what was there before, never a part (agents/files.py's
    atomic write). Mode 0644 so whoever collects the results folder can read it."""
    atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(), 0o644)
