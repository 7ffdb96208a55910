"""``ssebench jobs report``: a job folder's runs made into the typed report (ssebench/jobs/reportmodel.py).

Read from the job folder only: job.json (with its journal) for the matrix and each run's
place in the schedule, and each run's record (results.json, read through
ssebench/runrecord.py) for how it ended. docs/jobs.md, "The report", says what each number
means; :mod:`ssebench.jobs.stats` has the statistics, :mod:`ssebench.jobs.reportfmt` the
text, Markdown and CSV shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import TypeVar

from ssebench import runrecord
from ssebench.agents.usage import Usage
from ssebench.jobs.reportmodel import (
    CALL_ENDINGS,
    ComparisonRow,
    FailureBucket,
    GroupNumbers,
    JobComparison,
    JobReport,
    ReportCell,
    ReportGroup,
    ReportTask,
    RunIndexEntry,
    UsageTotals,
)
from ssebench.jobs.state import read
from ssebench.jobs.stats import pass_at_k, quantile, wilson
from ssebench.runrecord import Outcome, RunResult

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class ReportRun:
    """One run as the report sees it: its row of job.json and its record (None: not ended)."""

    run_id: str
    folder: str
    task: str
    agent: str
    model: str | None
    level: int
    attempt: int
    record: RunResult | None

    @property
    def passed(self) -> bool | None:
        """The grading verdict (None: no verdict)."""
        return self.record.passed if self.record is not None else None

    @property
    def calls(self) -> int | None:
        """test_patch calls, when the agent ran."""
        agent = self.record.agent if self.record is not None else None
        return agent.calls if agent is not None else None


@dataclass(frozen=True)
class JobData:
    job_id: str
    folder: Path
    attempts: int
    runs: tuple[ReportRun, ...]


def load(folder: Path) -> JobData:
    """The job in FOLDER; StateError for a bad job.json, RecordError for a record this
    ssebench cannot read (one line naming it)."""
    document = read(folder)
    models = _stored_models(document)
    rows = []
    for row in document["runs"]:
        record = runrecord.read_if_any(folder / row["folder"]) if row["state"] != "pending" else None
        task = row.get("task_id") or Path(row["task"]).parent.name
        rows.append((row, record, task))
    for row, record, _ in rows:  # a folder of an older ssebench: the models its records name
        if record is not None and record.spec.model:
            models.setdefault(row["agent"], record.spec.model)
    runs = tuple(
        ReportRun(
            row["run_id"],
            row["folder"],
            task,
            row["agent"],
            models.get(row["agent"]),
            int(row["level"]),
            int(row["attempt"]),
            record,
        )  # fmt: skip
        for row, record, task in rows
    )
    stored = (document.get("spec") or {}).get("attempts")
    attempts = stored if isinstance(stored, int) else max((r.attempt for r in runs), default=1)
    return JobData(str(document["job_id"]), folder, attempts, runs)


def _stored_models(document: dict[str, object]) -> dict[str, str]:
    """Each agent's model as the job's stored spec says (job.json's ``spec``)."""
    spec = document.get("spec")
    agents = spec.get("agents") if isinstance(spec, dict) else None
    found = {}
    for agent in agents if isinstance(agents, list) else []:
        if isinstance(agent, dict) and isinstance(agent.get("model"), str):
            found[str(agent["name"])] = agent["model"]
    return found


# --- the numbers ------------------------------------------------------------------------------


def numbers(runs: Sequence[ReportRun], attempts: int, pass_at: dict[str, float | None] | None = None) -> GroupNumbers:
    """The numbers of a set of runs; PASS_AT: pass@k given (a roll-up's mean over its groups),
    else computed from these runs as one task × agent × level's attempts."""
    graded = [r for r in runs if r.passed is not None]
    won = [r.run_id for r in graded if r.passed]
    ended = [r for r in runs if r.record is not None]
    ran = [r for r in ended if r.calls is not None]
    endings = dict.fromkeys(CALL_ENDINGS, 0)
    for r in ended:
        for call in r.record.calls if r.record is not None else ():
            endings[call.outcome] += 1
    durations = sorted(r.record.duration for r in ended if r.record is not None)
    usage = _usage(ended)
    return GroupNumbers(
        runs=len(runs),
        run_ids=tuple(r.run_id for r in runs),
        graded=len(graded),
        passed=len(won),
        passed_run_ids=tuple(won),
        pass_rate=len(won) / len(graded) if graded else None,
        pass_rate_ci95=wilson(len(won), len(graded)) if graded else None,
        pass_at_k=pass_at if pass_at is not None else _pass_at(len(graded), len(won), attempts),
        outcomes={o.value: sum(1 for r in ended if r.record and r.record.outcome is o) for o in Outcome},
        not_run=len(runs) - len(ended),
        not_run_run_ids=tuple(r.run_id for r in runs if r.record is None),
        duration_median=quantile(durations, 0.5),
        duration_p90=quantile(durations, 0.9),
        calls_per_run=fmean(r.calls or 0 for r in ran) if ran else None,
        test_patch_calls=sum(endings.values()),
        test_patch_endings=endings,
        never_called=sum(1 for r in ran if r.calls == 0),
        never_called_run_ids=tuple(r.run_id for r in ran if r.calls == 0),
        usage=usage,
        tokens_per_run=(usage.input_tokens + usage.cached_tokens + usage.output_tokens) / usage.runs if usage else None,
        cost_per_run=usage.cost_usd / usage.cost_runs if usage and usage.cost_usd is not None else None,
        failures=failures(ended),
    )


def _pass_at(n: int, c: int, attempts: int) -> dict[str, float | None]:
    """pass@k for k = 1 .. attempts of one group: n graded attempts, c passed (None when n < k)."""
    return {str(k): pass_at_k(n, c, k) if n >= k else None for k in range(1, attempts + 1)}


def mean_pass_at(groups: Iterable[GroupNumbers], attempts: int) -> dict[str, float | None]:
    """A roll-up's pass@k: for each k the mean over its groups that have a value for k."""
    values = [g.pass_at_k for g in groups]
    out: dict[str, float | None] = {}
    for k in map(str, range(1, attempts + 1)):
        known = [v[k] for v in values if v.get(k) is not None]
        out[k] = fmean(x for x in known if x is not None) if known else None
    return out


def _usage(ended: Sequence[ReportRun]) -> UsageTotals | None:
    by_run = {r.run_id: u for r in ended if (u := _run_usage(r)) is not None}
    if not by_run:
        return None
    reported = list(by_run.values())
    costs = [u.cost_usd for u in reported if u.cost_usd is not None]
    return UsageTotals(
        runs=len(reported),
        run_ids=tuple(by_run),
        gateway_run_ids=tuple(run_id for run_id, u in by_run.items() if u.source == "gateway"),
        input_tokens=sum(u.input_tokens for u in reported),
        output_tokens=sum(u.output_tokens for u in reported),
        cached_tokens=sum(u.cached_tokens for u in reported),
        cost_usd=sum(costs) if costs else None,
        cost_runs=len(costs),
    )


def failures(ended: Iterable[ReportRun]) -> tuple[FailureBucket, ...]:
    """The runs that did not pass, by outcome and reason; most runs first, then outcome order."""
    buckets: dict[tuple[Outcome, str], list[str]] = {}
    for r in ended:
        record = r.record
        if record is not None and record.outcome is not Outcome.PASSED:
            buckets.setdefault((record.outcome, record.reason or record.status), []).append(r.run_id)
    order = list(Outcome)
    ranked = sorted(buckets.items(), key=lambda item: (-len(item[1]), order.index(item[0][0]), item[0][1]))
    return tuple(FailureBucket(outcome=o, reason=why, count=len(ids), run_ids=tuple(ids)) for (o, why), ids in ranked)


def _by(runs: Iterable[ReportRun], key: Callable[[ReportRun], K]) -> dict[K, list[ReportRun]]:
    """Runs grouped by KEY, in the order each key first appears (the matrix order)."""
    found: dict[K, list[ReportRun]] = {}
    for r in runs:
        found.setdefault(key(r), []).append(r)
    return found


def summarize(job: JobData) -> JobReport:
    """The whole report of one job."""
    k = job.attempts
    groups = {
        key: ReportGroup(task=key[0], agent=key[1], model=key[2], level=key[3], **dict(numbers(rs, k)))
        for key, rs in _by(job.runs, lambda r: (r.task, r.agent, r.model, r.level)).items()
    }
    cells = []
    for (agent, model, level), rs in _by(job.runs, lambda r: (r.agent, r.model, r.level)).items():
        mine = [g for (_, a, m, lvl), g in groups.items() if (a, m, lvl) == (agent, model, level)]
        cells.append(ReportCell(agent=agent, model=model, level=level, **dict(numbers(rs, k, mean_pass_at(mine, k)))))
    tasks = []
    for task, rs in _by(job.runs, lambda r: r.task).items():
        mine = [g for key, g in groups.items() if key[0] == task]
        tasks.append(ReportTask(task=task, **dict(numbers(rs, k, mean_pass_at(mine, k)))))
    return JobReport(
        job_id=job.job_id,
        folder=str(job.folder),
        runs=len(job.runs),
        attempts=k,
        totals=numbers(job.runs, k, mean_pass_at(groups.values(), k)),
        cells=tuple(cells),
        groups=tuple(groups.values()),
        tasks=tuple(tasks),
        run_index=tuple(_index(r) for r in job.runs),
    )


def _run_usage(r: ReportRun) -> Usage | None:
    """The run's usage as its record holds it (the agent's own, else the gateway's)."""
    return r.record.agent.usage if r.record is not None and r.record.agent is not None else None


def _index(r: ReportRun) -> RunIndexEntry:
    record, usage = r.record, _run_usage(r)
    return RunIndexEntry(
        run_id=r.run_id,
        folder=r.folder,
        task=r.task,
        agent=r.agent,
        model=r.model,
        level=r.level,
        attempt=r.attempt,
        outcome=record.outcome if record else None,
        status=record.status if record else None,
        reason=record.reason if record else None,
        passed=r.passed,
        duration=record.duration if record else None,
        calls=r.calls,
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        cached_tokens=usage.cached_tokens if usage else None,
        cost_usd=usage.cost_usd if usage else None,
        usage_source=usage.source if usage else None,
    )


def compare(first: JobReport, second: JobReport) -> JobComparison:
    """Per agent × model × level in either job: both pass rates and the change."""
    a = {(c.agent, c.model, c.level): c for c in first.cells}
    b = {(c.agent, c.model, c.level): c for c in second.cells}
    rows = []
    for key in dict.fromkeys([*a, *b]):
        ca, cb = a.get(key), b.get(key)
        ra, rb = (ca.pass_rate if ca else None), (cb.pass_rate if cb else None)
        rows.append(
            ComparisonRow(
                agent=key[0],
                model=key[1],
                level=key[2],
                pass_rate_a=ra,
                pass_rate_b=rb,
                delta=rb - ra if ra is not None and rb is not None else None,
                run_ids_a=ca.run_ids if ca else (),
                run_ids_b=cb.run_ids if cb else (),
            )
        )
    return JobComparison(jobs=(first, second), comparison=tuple(rows))


def build(folders: Sequence[Path]) -> JobReport | JobComparison:
    """The report of one job folder, or two compared (StateError, RecordError: one line)."""
    reports = [summarize(load(f)) for f in folders]
    return reports[0] if len(reports) == 1 else compare(reports[0], reports[1])
