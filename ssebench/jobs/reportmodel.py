"""The typed report of a job (``ssebench jobs report``): what every rendering and the view read.

Why typed: the text, Markdown, CSV and JSON shapes and ``ssebench view``'s job page all
render one :class:`JobReport`, so they cannot disagree; and every number carries the run
ids behind it (a group's ``run_ids``, a failure bucket's, ``never_called_run_ids``...), so
a page can link each figure to the runs that made it. docs/jobs.md, "The report", says
what each key means; :mod:`ssebench.jobs.report` computes them from the run records.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from ssebench.runrecord import Outcome

#: how a test_patch call ended (runrecord.CallRecord.outcome), in the report's order
CALL_ENDINGS = ("passed", "failed", "no_checks", "internal_failure", "cancelled", "error")
#: the keys that say which runs a group holds: first in every group's JSON object
_IDENTITY = ("task", "agent", "model", "level")
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class UsageTotals(BaseModel):
    """Tokens and cost summed over the runs that have them (``agent.usage``: the agent's own
    report, else the model gateway's count)."""

    model_config = _FROZEN

    runs: int  # runs that reported usage (the others are not counted as zero)
    run_ids: tuple[str, ...]
    gateway_run_ids: tuple[str, ...]  # of those, the runs counted at the model gateway
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: float | None  # None: no run reported a cost
    cost_runs: int  # runs that reported a cost


class FailureBucket(BaseModel):
    """Runs that did not pass, by outcome and the record's one-line reason."""

    model_config = _FROZEN

    outcome: Outcome
    reason: str  # the record's reason (its status when it has none)
    count: int
    run_ids: tuple[str, ...]


class GroupNumbers(BaseModel):
    """The numbers of a set of runs; every count comes with the run ids it counts."""

    model_config = _FROZEN

    runs: int
    run_ids: tuple[str, ...]
    graded: int  # runs with a grading verdict (the record's passed is true or false)
    passed: int
    passed_run_ids: tuple[str, ...]
    pass_rate: float | None  # passed / graded
    pass_rate_ci95: tuple[float, float] | None  # Wilson's score interval
    pass_at_k: dict[str, float | None]  # "1" .. str(attempts)
    outcomes: dict[str, int]  # every Outcome's value -> runs that ended so (0s included)
    not_run: int  # no record yet (pending, running)
    not_run_run_ids: tuple[str, ...]
    duration_median: float | None
    duration_p90: float | None
    calls_per_run: float | None  # test_patch calls per run whose agent ran
    test_patch_calls: int
    test_patch_endings: dict[str, int]  # CALL_ENDINGS -> calls
    never_called: int  # runs whose agent ran and never called test_patch
    never_called_run_ids: tuple[str, ...]
    usage: UsageTotals | None  # None: no run of the group reported usage
    tokens_per_run: float | None  # input + cached + output tokens, per run that reported usage
    cost_per_run: float | None  # US dollars, per run that reported a cost
    failures: tuple[FailureBucket, ...]  # most frequent first

    @model_serializer(mode="wrap")
    def _identity_first(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """task, agent, model, level lead each object (pydantic puts a subclass's fields last)."""
        data: dict[str, Any] = handler(self)
        head = {key: data.pop(key) for key in _IDENTITY if key in data}
        return {**head, **data}


class ReportGroup(GroupNumbers):
    """One task × agent × model × level: its attempts (the report's finest grain)."""

    task: str
    agent: str
    model: str | None
    level: int


class ReportCell(GroupNumbers):
    """One agent × model × level over every task (pass rate pooled, pass@k the mean over tasks)."""

    agent: str
    model: str | None
    level: int


class ReportTask(GroupNumbers):
    """One task over every agent and level (pass@k the mean over its groups)."""

    task: str


class RunIndexEntry(BaseModel):
    """One run as the report saw it: where each run id of the numbers leads."""

    model_config = _FROZEN

    run_id: str
    folder: str  # relative to the job's folder
    task: str
    agent: str
    model: str | None
    level: int
    attempt: int
    outcome: Outcome | None  # None: no record yet
    status: str | None
    reason: str | None
    passed: bool | None
    duration: float | None
    calls: int | None  # test_patch calls (None: the agent did not run)
    input_tokens: int | None  # the run's usage (None: nothing counted), as ``usage_source`` counted it
    output_tokens: int | None
    cached_tokens: int | None
    cost_usd: float | None
    usage_source: str | None  # "agent" (its own output) or "gateway" (the job's model gateway)


class JobReport(BaseModel):
    """The whole report of one job folder."""

    model_config = _FROZEN

    job_id: str
    folder: str
    runs: int
    attempts: int  # the job's attempts per task × agent × level: pass@k for k = 1 .. attempts
    totals: GroupNumbers  # every run of the job
    cells: tuple[ReportCell, ...]  # agent × model × level
    groups: tuple[ReportGroup, ...]  # task × agent × model × level
    tasks: tuple[ReportTask, ...]
    run_index: tuple[RunIndexEntry, ...]


class ComparisonRow(BaseModel):
    """One agent × model × level of either job: both pass rates and the change (B - A)."""

    model_config = _FROZEN

    agent: str
    model: str | None
    level: int
    pass_rate_a: float | None
    pass_rate_b: float | None
    delta: float | None
    run_ids_a: tuple[str, ...]
    run_ids_b: tuple[str, ...]


class JobComparison(BaseModel):
    """Two jobs' reports and their comparison (``ssebench jobs report A B``)."""

    model_config = _FROZEN

    jobs: tuple[JobReport, JobReport]
    comparison: tuple[ComparisonRow, ...]
