"""The run record: what to run (:class:`RunSpec`) and what happened (:class:`RunResult`).

Why one typed record: each stage (run, grade, jobs, report, view, the Kubernetes backend)
used to read a run folder's ``results.json`` as a dict its own way, so what an evaluator
saw could disagree with what happened (an ended run shown as running, a refused run
called an infrastructure error). Now a run's facts are fields of one pydantic model with
a ``schema_version``; this module is the only one that names the file, writes it
(atomically) and reads it (strictly: an old or foreign file is one :class:`RecordError`
naming the file and its version). docs/run-record.schema.json is the exported JSON Schema
(``python -m ssebench.runrecord --schema``), checked in CI against this module.

How a run ended is said twice, at two grains, by one table: ``status`` is the precise
cause (the entrypoint's exit-status names and the backends' own, e.g. ``daemon_failed``,
``pod_lost``), :data:`STATUSES` maps each to its :class:`Outcome`, the one vocabulary
every page and report groups by. Every non-passed outcome carries a one-line ``reason``.
"""

from __future__ import annotations

import enum
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ssebench.agents.usage import Usage  # what a run cost: the agent's own report, or the gateway's count

RESULTS_FILE = "results.json"
SCHEMA_VERSION: Literal[2] = 2
SCHEMA_DOC = "docs/run-record.schema.json"
#: a record larger than this is not read (a run's is a few KiB; a check's log never goes in)
MAX_BYTES = 8 << 20


class RecordError(ValueError):
    """A run record that cannot be read: one line naming the file and what is wrong."""


class Outcome(str, enum.Enum):
    """How a run ended, in the one vocabulary of pages, reports and retries."""

    PASSED = "passed"  # the agent finished and every check passed
    FAILED = "failed"  # the agent finished, a check failed (the reason names which)
    AGENT_ERROR = "agent_error"  # the agent exited non-zero or could not start
    AGENT_TIMEOUT = "agent_timeout"  # the agent ran out of time
    BUDGET = "budget"  # the run's model budget (tokens, cost) ran out
    USAGE = "usage"  # refused before it started: a setting, the task, the agent's configuration
    INFRASTRUCTURE = "infrastructure"  # something of ours or the machine's broke (the reason says what)
    CANCELLED = "cancelled"  # stopped on purpose: Ctrl-C, a signal, the scheduler

    @property
    def final(self) -> bool:
        """Whether the run has a result worth keeping (``jobs resume`` re-runs the others)."""
        return self not in (Outcome.INFRASTRUCTURE, Outcome.CANCELLED)


#: status (the precise cause) -> its outcome. Exit statuses of ``ssebench run`` / the
#: entrypoint (docs/container.md) first, then the causes the job backends add.
STATUSES: dict[str, Outcome] = {
    "passed": Outcome.PASSED,
    "checks_failed": Outcome.FAILED,
    "agent_timeout": Outcome.AGENT_TIMEOUT,
    "agent_failed": Outcome.AGENT_ERROR,
    "budget": Outcome.BUDGET,
    "daemon_failed": Outcome.INFRASTRUCTURE,
    "server_failed": Outcome.INFRASTRUCTURE,
    "grading_error": Outcome.INFRASTRUCTURE,
    "interrupted": Outcome.CANCELLED,
    "usage_error": Outcome.USAGE,
    "cancelled": Outcome.CANCELLED,
    "killed": Outcome.INFRASTRUCTURE,
    "no_results": Outcome.INFRASTRUCTURE,
    "start_failed": Outcome.INFRASTRUCTURE,
    "backend_error": Outcome.INFRASTRUCTURE,
    "run_timeout": Outcome.INFRASTRUCTURE,
    "collect_failed": Outcome.INFRASTRUCTURE,
    "pod_failed": Outcome.INFRASTRUCTURE,
    "pod_lost": Outcome.INFRASTRUCTURE,
    "evicted": Outcome.INFRASTRUCTURE,
    "node_lost": Outcome.INFRASTRUCTURE,
    "image_not_found": Outcome.INFRASTRUCTURE,
    "image_failed": Outcome.INFRASTRUCTURE,
    "unschedulable": Outcome.INFRASTRUCTURE,
}


def outcome_of(status: str) -> Outcome:
    """The outcome of a status; an unknown status is the infrastructure's (never a verdict)."""
    return STATUSES.get(status, Outcome.INFRASTRUCTURE)


def now() -> str:
    """A record's timestamps: UTC, milliseconds, ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Model(BaseModel):
    """Strict records: an unknown key is an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)


Backend = Literal["process", "docker", "kubernetes"]
Level = Annotated[int, Field(ge=0, le=4)]


class RunSpec(_Model):
    """What to run. Never holds secrets: the environment a run gets is not part of it."""

    task_file: str  # the task file, absolute, as the run loaded it
    task_id: str
    agent: str | None = None  # a bundled agent's name; None: ``command`` is the agent
    command: tuple[str, ...] | None = None  # a custom agent command (``ssebench run -- CMD``)
    model: str | None = None  # SSE_AGENT_MODEL, when set
    level: Level
    backend: Backend = "process"
    agent_timeout: float | None = None  # seconds the agent may run
    mcp_timeout: float | None = None  # seconds to wait for the daemon and the server
    run_timeout: float | None = None  # a job's whole-run limit ([timeouts] run)
    job_id: str | None = None  # set when the run is part of a job
    run_id: str | None = None
    attempt: int | None = None
    lock_hash: str | None = None  # the dataset lock this task was checked against
    ignore_lock: bool = False  # run although the task's files differ from the lock


class Stage(_Model):
    """One stage of the run (setup, daemon, server, agent, grading) as it was last seen."""

    state: Literal["start", "done", "failed", "skipped"]
    detail: str
    seconds: float | None = None
    url: str | None = None  # the server's
    passed: bool | None = None  # grading's verdict
    where: Literal["process", "sidecar", "pod"] | None = None  # where grading ran
    strays_killed: tuple[str, ...] | None = None  # processes that outlived the agent


class AgentFacts(_Model):
    """How the agent's process ended, and what it did through the tool."""

    command: tuple[str, ...]
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    duration: float = 0.0
    timeout: int = 0
    error: str | None = None  # the agent's own last error line, when it failed
    calls: int = 0  # test_patch calls it made (0: it never checked its fix)
    #: what the run cost: the agent's own report where it gives one, else the job's model
    #: gateway's count (``source`` says which); None: neither counted anything
    usage: Usage | None = None


class GatewayFacts(_Model):
    """What the job's model gateway counted for the run (docs/jobs.md, "The model gateway"):
    every request of the run's own key, whatever the agent reports of itself."""

    requests: int = 0  # model requests that reached the model and were counted
    refused: int = 0  # requests refused because the run's budget was spent
    usage: Usage | None = None  # the gateway's count (source "gateway"); None: no request was counted
    prices: str | None = None  # where the cost's prices came from; None: no price for the model
    max_cost: float | None = None  # the run's budget in US dollars ([[agents]] max_cost)
    max_tokens: int | None = None  # the run's budget in tokens, input + cached + output ([[agents]] max_tokens)


class CheckGrade(_Model):
    """One check of the final grading (the daemon's CHECK object, docs/daemon-api.md)."""

    check: str
    state: Literal["passed", "failed", "not_run"]
    timed_out: bool = False
    elapsed: float = 0.0
    pocs_passed: int | None = None
    pocs_total: int | None = None
    covered_by_intent: bool = False
    has_log: bool = False
    log_bytes: int = 0
    log_tail: str | None = None  # the failed check's last log lines


class Grading(_Model):
    """Final grading: every check of the task, whatever the level (``ssebench grade --json``)."""

    task: str
    tree: str
    passed: bool
    checks: tuple[CheckGrade, ...]


CallOutcome = Literal["passed", "failed", "no_checks", "internal_failure", "cancelled", "error"]


class CallRecord(_Model):
    """One test_patch call as the server's call log records it."""

    number: int
    level: Level
    ended: str  # the call log's summary: "passed", "FAILED [build: FAILED]", "cancelled"...
    outcome: CallOutcome
    seconds: float
    text: str | None = None  # the result text the agent was shown, a file of the run folder ("calls/1.txt")


class TaskRef(_Model):
    id: str | None
    file: str | None
    tree: str | None = None


class DifficultyRef(_Model):
    level: Level
    name: str


class RunResult(_Model):
    """What happened in one run: the document in the run folder's ``results.json``."""

    schema_version: Literal[2] = SCHEMA_VERSION
    spec: RunSpec
    outcome: Outcome
    reason: str | None = None  # one line a user can act on; None when passed
    status: str  # the precise cause (STATUSES)
    exit_code: int | None  # the entrypoint's exit status; None when it never exited on its own
    passed: bool | None = None  # grading's verdict; None: no verdict
    error: str | None = None  # the entrypoint's whole message (start-up failures: with log lines)
    task: TaskRef
    difficulty: DifficultyRef | None = None
    mode: Literal["process", "sidecar"] | None = None
    mcp_url: str | None = None
    started_at: str | None = None
    finished_at: str = Field(default_factory=now)
    duration: float = 0.0
    stages: dict[str, Stage] = Field(default_factory=dict)
    agent: AgentFacts | None = None
    grading: Grading | None = None
    calls: tuple[CallRecord, ...] = ()
    dialog: str | None = None  # "dialog.jsonl" when the run has one
    gateway: GatewayFacts | None = None  # set when the job's model gateway carried the run's requests

    @property
    def never_called(self) -> bool:
        """The agent ran but never called test_patch: a fact shown beside the grade."""
        return self.agent is not None and self.agent.calls == 0

    def failed_checks(self) -> tuple[str, ...]:
        """The checks grading failed, in run order."""
        return tuple(c.check for c in self.grading.checks if c.state == "failed") if self.grading else ()


def path_in(folder: Path) -> Path:
    """Where a run folder keeps its record."""
    return folder / RESULTS_FILE


def write(folder: Path, result: RunResult) -> Path:
    """The record, whole or not at all (the one atomic writer), mode 0644 so whoever collects
    the folder can read it. Returns its path."""
    from ssebench.agents.files import atomic_write

    path = path_in(folder)
    data = json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, data.encode("utf-8"), 0o644)
    return path


def read(folder: Path) -> RunResult:
    """The record in *folder*; RecordError when it is missing, unreadable, of another schema
    version or not a run record (one line naming the file)."""
    path = path_in(folder)
    try:
        raw = _read_small(path)
    except FileNotFoundError:
        raise RecordError(f"{path}: no run record here") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return parse(raw, path)


def read_if_any(folder: Path) -> RunResult | None:
    """The record in *folder*, or None when there is none yet; RecordError when it is bad."""
    return read(folder) if path_in(folder).exists() or path_in(folder).is_symlink() else None


def parse(raw: bytes, where: Path | str) -> RunResult:
    """A record from its bytes; *where* names it in errors."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{where}: not a run record (a JSON {type(data).__name__})")
    version = data.get("schema_version", data.get("version"))
    if version != SCHEMA_VERSION:
        shown = "none" if version is None else repr(version)
        raise RecordError(
            f"{where}: run record schema version {shown}, this ssebench reads version {SCHEMA_VERSION} "
            "(written by another ssebench; run it again with this one)"
        )
    try:
        return RunResult.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise RecordError(f"{where}: not a valid run record: {at}: {first['msg']}") from None


def _read_small(path: Path) -> bytes:
    """The bytes of a regular file, never through a symlink, at most MAX_BYTES."""
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        data = stream.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise OSError(f"{path.name} is larger than {MAX_BYTES >> 20} MiB")
    return data


def json_schema() -> dict[str, Any]:
    """The JSON Schema of results.json (docs/run-record.schema.json holds this)."""
    schema = RunResult.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "ssebench run record (results.json)"
    return schema


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m ssebench.runrecord --schema > docs/run-record.schema.json
    if sys.argv[1:] != ["--schema"]:
        print("usage: python -m ssebench.runrecord --schema", file=sys.stderr)
        raise SystemExit(2)
    sys.stdout.write(schema_text())
