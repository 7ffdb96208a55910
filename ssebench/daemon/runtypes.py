"""What the daemon's parts share: the context each is handed, the records of one call's
run, and the run's one error. Kept apart so that no part imports another's class for
them (runner.py wires the parts; see docs/daemon.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ssebench.checks import Check, State
from ssebench.contract import CheckResult
from ssebench.daemon.limits import Limits
from ssebench.daemon.logs import CheckLog
from ssebench.daemon.sandbox import Sandbox
from ssebench.daemon.taskview import TaskView
from ssebench.daemon.workspace import Snapshot
from ssebench.task import Task

# Old runs' logs are kept within this many bytes in all (``--log-budget``).
DEFAULT_LOG_BUDGET = 256 << 20
# Less free space than this on the workspace's filesystem: the disk is full, and a
# check that failed may have failed for that alone (never the patch's fault).
MIN_FREE = 1 << 20
DISK_FULL = "the daemon's disk is full"


class RunError(RuntimeError):
    """The run itself failed (not a check): its message is safe to show the agent."""


@dataclass
class DaemonContext:
    """The state the daemon's parts share, handed to each of them explicitly.

    ``tree_path``: the one path every check's tree has without the sandbox (with it:
    ``/sse/tree``), so the absolute paths a build writes stay valid in the views.
    ``task_view``: what checks see at ``SSE_TASK_DIR`` in the sandbox (the workspace makes
    it, and makes it again when the workspace was removed). ``closing``: the daemon is
    shutting down, so no check starts and a running one is killed.
    """

    task: Task
    sandbox: Sandbox
    limits: Limits
    heartbeat: float
    base_env: dict[str, str]
    tree_path: Path
    task_view: TaskView | None = None
    closing: bool = False


@dataclass
class ProcessEnd:
    """How one process of a check (or the daemon's own ``cp``) ended."""

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
        """The check's result as the contract (ssebench/contract.py) has it, to the
        precision of the wire (so a typed event equals the line read back)."""
        return CheckResult(
            self.check,
            self.state,
            self.timed_out,
            round(self.elapsed, 3),
            self.pocs_passed or 0,
            self.pocs_total or 0,
            self.covered_by_intent,
            self.log is not None,
            self.log.size() if self.log else 0,
        )


@dataclass
class CallRun:
    """One call's run: its folder (logs, overlay folders), the sources it tests (its
    snapshot, released when it ends) and its checks' records."""

    id: str
    dir: Path
    snapshot: Snapshot | None
    results: dict[Check, CheckRun] = field(default_factory=dict)
    # Where the call's time went, seconds by phase in order (``/health``'s ``last_run``;
    # benchmarks/bench_projects.py): measured where each phase runs, never derived.
    phases: dict[str, float] = field(default_factory=dict)

    def timed(self, phase: str, seconds: float) -> None:
        """Add *seconds* to *phase* (a phase may run twice: a build redone clean)."""
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds
