"""The runner's records and its one error, shared by runner.py and its parts
(housekeeping.py, checkproc.py, build.py): kept apart so none imports another's class."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.checks import Check, State
from ssebench.contract import CheckResult
from ssebench.daemon.logs import CheckLog
from ssebench.daemon.workspace import Snapshot

# Old runs' logs are kept within this many bytes in all (``--log-budget``).
DEFAULT_LOG_BUDGET = 256 << 20
# Less free space than this on the workspace's filesystem: the disk is full, and a
# check that failed may have failed for that alone (never the patch's fault).
MIN_FREE = 1 << 20
DISK_FULL = "the daemon's disk is full"


class RunError(RuntimeError):
    """The run itself failed (not a check): its message is safe to show the agent."""


@dataclass
class Outcome:
    """How one process ended."""

    returncode: int | None = None
    timed_out: bool = False
    limit: str | None = None  # the sandbox limit that killed it ("output", "memory", "pids")

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.limit is None


@dataclass
class CheckRun:
    """One check of a run as the daemon keeps it: its result so far, and its log files."""

    check: Check
    state: State
    timed_out: bool = False
    elapsed: float = 0.0
    pocs_passed: int | None = None
    pocs_total: int | None = None
    covered_by_intent: bool = False
    log: CheckLog | None = None

    def result(self) -> CheckResult:
        """The check's result as the contract (ssebench/contract.py) puts it on the wire."""
        return CheckResult(
            self.check,
            self.state,
            self.timed_out,
            self.elapsed,
            self.pocs_passed or 0,
            self.pocs_total or 0,
            self.covered_by_intent,
            self.log is not None,
            self.log.size() if self.log else 0,
        )

    def to_json(self) -> dict[str, Any]:
        return self.result().to_json()


@dataclass
class Run:
    id: str
    dir: Path
    snapshot: Snapshot | None
    results: dict[Check, CheckRun] = field(default_factory=dict)
