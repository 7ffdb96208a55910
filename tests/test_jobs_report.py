"""``ssebench jobs report``: the typed report's numbers, each traceable to its runs, and its
text, Markdown, CSV and JSON shapes, on job folders written by hand (records as ``ssebench
run`` writes them); the real 16-run job's report: tests/test_jobs_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssebench import runrecord
from ssebench.agents.usage import Usage
from ssebench.jobs import report, reportfmt
from ssebench.jobs.state import new_run
from ssebench.jobs.stats import pass_at_k
from ssebench.runrecord import Outcome, RunResult
from tests.helpers.jobs import jobs, record_of


def _write(folder: Path, runs: list[tuple[str, str, int, int, Outcome | None]], **kw: object) -> Path:
    """A job folder: (task, agent, level, attempt, outcome or None: not run) per run."""
    rows = []
    for task, agent, level, attempt, outcome in runs:
        run_id = f"{task}.{agent}.L{level}.a{attempt}"
        row = {**new_run(run_id, f"/{task}/task.toml", task, agent, level, attempt), "state": "pending"}
        if outcome is not None:
            row["state"] = "ended"
            (folder / row["folder"]).mkdir(parents=True)
            record = record_of(outcome, run_id, calls=int(outcome is Outcome.PASSED), duration=float(attempt))
            runrecord.write(folder / row["folder"], _adjust(record, **kw))
        rows.append(row)
    (folder / "job.json").write_text(json.dumps({"job_id": "j1", "runs": rows}), encoding="utf-8")
    return folder


def _adjust(record: RunResult, usage: Usage | None = None, model: str | None = None) -> RunResult:
    agent = record.agent.model_copy(update={"usage": usage}) if record.agent else None
    return record.model_copy(update={"agent": agent, "spec": record.spec.model_copy(update={"model": model})})


P, F, INF, U = Outcome.PASSED, Outcome.FAILED, Outcome.INFRASTRUCTURE, Outcome.USAGE


def test_a_group_per_task_agent_level_with_pass_at_k_for_every_k(tmp_path: Path) -> None:
    runs = [("t", "a", 2, 1, P), ("t", "a", 2, 2, F), ("t", "a", 2, 3, F), ("u", "a", 2, 1, P), ("u", "a", 2, 2, P)]
    runs.append(("u", "a", 2, 3, None))
    got = report.summarize(report.load(_write(tmp_path, runs)))
    assert got.attempts == 3
    t, u = got.groups
    assert (t.task, t.agent, t.level, t.runs, t.graded, t.passed) == ("t", "a", 2, 3, 3, 1)
    assert t.pass_at_k == {"1": pytest.approx(1 / 3), "2": pytest.approx(2 / 3), "3": 1.0}
    assert u.pass_at_k == {"1": 1.0, "2": 1.0, "3": None}  # 2 graded attempts: pass@3 unknown
    assert (u.not_run, u.not_run_run_ids) == (1, ("u.a.L2.a3",))
    [cell] = got.cells
    assert cell.pass_at_k == {"1": pytest.approx((1 / 3 + 1) / 2), "2": pytest.approx((2 / 3 + 1) / 2), "3": 1.0}
    assert (cell.passed, cell.graded, cell.pass_rate) == (3, 5, 0.6)  # the rate is pooled, pass@k per task
    assert cell.passed_run_ids == ("t.a.L2.a1", "u.a.L2.a1", "u.a.L2.a2")


def test_failures_are_grouped_by_outcome_and_reason_with_their_runs(tmp_path: Path) -> None:
    runs = [("t", "a", 2, 1, F), ("t", "a", 2, 2, F), ("t", "a", 2, 3, U), ("t", "a", 2, 4, P), ("t", "a", 2, 5, INF)]
    got = report.summarize(report.load(_write(tmp_path, runs)))
    assert [(b.outcome, b.reason, b.count, b.run_ids) for b in got.totals.failures] == [
        (F, "failed: as the test wrote it", 2, ("t.a.L2.a1", "t.a.L2.a2")),
        (U, "usage: as the test wrote it", 1, ("t.a.L2.a3",)),
        (INF, "infrastructure: as the test wrote it", 1, ("t.a.L2.a5",)),
    ]
    assert got.totals.never_called_run_ids == ("t.a.L2.a1", "t.a.L2.a2", "t.a.L2.a3", "t.a.L2.a5")
    assert got.totals.outcomes == {"passed": 1, "failed": 2, "agent_error": 0, "agent_timeout": 0, "budget": 0, "usage": 1, "infrastructure": 1, "cancelled": 0}  # fmt: skip


def test_tokens_and_cost_count_only_the_runs_that_reported_them(tmp_path: Path) -> None:
    folder = _write(tmp_path, [("t", "a", 2, 1, P), ("t", "a", 2, 2, F)], usage=Usage(100, 20, 30, 0.25))
    runrecord.write(folder / "runs" / "t.a.L2.a2", record_of(F, "t.a.L2.a2"))  # this one reported nothing
    [group] = report.summarize(report.load(folder)).groups
    assert group.usage is not None
    assert (group.usage.runs, group.usage.input_tokens, group.usage.cost_usd) == (1, 100, 0.25)
    assert (group.tokens_per_run, group.cost_per_run) == (150.0, 0.25)
    assert (group.usage.run_ids, group.usage.gateway_run_ids) == (("t.a.L2.a1",), ())


def test_usage_counted_at_the_gateway_is_named_so(tmp_path: Path) -> None:
    usage = Usage(100, 10, 0, 0.00013, source="gateway")
    folder = _write(tmp_path, [("t", "a", 2, 1, P), ("t", "a", 2, 2, F)], usage=usage)
    got = report.summarize(report.load(folder))
    [group] = got.groups
    assert group.usage is not None and group.usage.gateway_run_ids == ("t.a.L2.a1", "t.a.L2.a2")
    first = got.run_index[0]
    assert (first.input_tokens, first.output_tokens, first.cached_tokens, first.cost_usd, first.usage_source) == (
        100, 10, 0, 0.00013, "gateway"
    )  # fmt: skip
    head, row = report_text(folder, "--csv").splitlines()
    assert dict(zip(head.split(","), row.split(","), strict=True))["gateway_runs"] == "2"


def test_the_model_comes_from_the_records(tmp_path: Path) -> None:
    folder = _write(tmp_path, [("t", "a", 2, 1, P), ("t", "a", 2, 2, None)], model="m-1")
    got = report.summarize(report.load(folder))
    assert [(c.agent, c.model) for c in got.cells] == [("a", "m-1")]
    assert got.run_index[1].model == "m-1" and got.run_index[1].outcome is None


OUTCOMES = st.sampled_from([*Outcome, None])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("tu"), st.sampled_from("ab"), st.sampled_from([0, 2]), OUTCOMES), max_size=14)
)
def test_every_number_is_traceable_to_its_runs(tmp_path_factory: pytest.TempPathFactory, drawn: list) -> None:
    """Each run is in exactly one group; a group's counts are the lengths of its id lists;
    failure buckets hold exactly the ended runs that did not pass; pass@1 is c/n."""
    attempts: dict[tuple[str, str, int], int] = {}
    runs = []
    for task, agent, level, outcome in drawn:
        attempts[(task, agent, level)] = n = attempts.get((task, agent, level), 0) + 1
        runs.append((task, agent, level, n, outcome))
    got = report.summarize(report.load(_write(tmp_path_factory.mktemp("job"), runs)))
    ids = [i for g in got.groups for i in g.run_ids]
    assert sorted(ids) == sorted(r.run_id for r in got.run_index) and len(ids) == len(set(ids))
    by_id = {r.run_id: r for r in got.run_index}
    for g in (*got.groups, *got.cells, *got.tasks, got.totals):
        assert g.runs == len(g.run_ids) and g.passed == len(g.passed_run_ids)
        assert all(by_id[i].outcome is Outcome.PASSED for i in g.passed_run_ids)
        failed = [i for b in g.failures for i in b.run_ids]
        assert sum(b.count for b in g.failures) == len(failed)
        assert sorted(failed) == sorted(i for i in g.run_ids if by_id[i].outcome not in (None, Outcome.PASSED))
        assert g.not_run_run_ids == tuple(i for i in g.run_ids if by_id[i].outcome is None)
        assert sum(g.outcomes.values()) + g.not_run == g.runs
    for g in got.groups:
        if g.graded:
            assert g.pass_at_k["1"] == pytest.approx(g.passed / g.graded)
            assert g.pass_at_k[str(g.graded)] == pass_at_k(g.graded, g.passed, g.graded)


# --- the shapes ---------------------------------------------------------------------------------


def _job(tmp_path: Path) -> Path:
    return _write(tmp_path, [("t", "a", 2, 1, P), ("t", "a", 2, 2, INF), ("t", "a", 2, 3, F)])


def test_the_text_report(tmp_path: Path) -> None:
    assert report_text(_job(tmp_path)) == (
        "job j1: 3 runs (3 attempts per task × agent × level): 1 passed, 1 failed, 1 infrastructure\n"
        "\n"
        "job j1: by agent × level\n"
        "agent  level  runs  passed  pass rate (95% CI)  pass@1  pass@2  pass@3  median s  calls/run  never called  no verdict\n"
        "a      2      3     1/2     50% (9%-91%)        0.50    1.00    -       2.0       0.33       2             1 infrastructure\n"
        "(pass@k: per task, the unbiased estimator over its attempts; here the mean over tasks)\n"
        "\n"
        "job j1: by task × agent × level\n"
        "task  agent  level  runs  passed  pass rate (95% CI)  pass@1  pass@2  pass@3  median s  calls/run  never called  no verdict\n"
        "t     a      2      3     1/2     50% (9%-91%)        0.50    1.00    -       2.0       0.33       2             1 infrastructure\n"
        "\n"
        "job j1: runs that did not pass, by reason\n"
        "runs  outcome         reason                                run ids\n"
        "1     failed          failed: as the test wrote it          t.a.L2.a3\n"
        "1     infrastructure  infrastructure: as the test wrote it  t.a.L2.a2\n"
    )  # fmt: skip


def report_text(folder: Path, *more: str) -> str:
    done = jobs("report", folder, *more)
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout


def test_the_json_report_has_the_documented_keys(tmp_path: Path) -> None:
    document = json.loads(report_text(_job(tmp_path), "--json"))
    assert list(document) == ["job_id", "folder", "runs", "attempts", "totals", "cells", "groups", "tasks", "run_index"]
    [group] = document["groups"]
    assert list(group)[:9] == ["task", "agent", "model", "level", "runs", "run_ids", "graded", "passed", "passed_run_ids"]  # fmt: skip
    assert (group["pass_rate"], group["pass_at_k"]) == (0.5, {"1": 0.5, "2": 1.0, "3": None})
    assert group["failures"][0] == {
        "outcome": "failed",
        "reason": "failed: as the test wrote it",
        "count": 1,
        "run_ids": ["t.a.L2.a3"],
    }
    doc = (Path(__file__).resolve().parent.parent / "docs" / "jobs.md").read_text(encoding="utf-8")
    keys = {*document, *group, *document["run_index"][0], *group["failures"][0]}
    assert sorted(k for k in keys if f"`{k}`" not in doc) == []  # every key is documented


def test_markdown_and_csv(tmp_path: Path) -> None:
    folder = _job(tmp_path)
    assert report_text(folder, "--markdown").splitlines()[:6] == [
        "**job j1: 3 runs (3 attempts per task × agent × level): 1 passed, 1 failed, 1 infrastructure**",
        "",
        "### job j1: by agent × level",
        "",
        "| agent | level | runs | passed | pass rate (95% CI) | pass@1 | pass@2 | pass@3 | median s | calls/run | never called | no verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    head, row = report_text(folder, "--csv").splitlines()
    assert head.split(",")[:14] == ["job_id", "task", "agent", "model", "level", "runs", "graded", "passed", "pass_rate", "ci95_low", "ci95_high", "pass_at_1", "pass_at_2", "pass_at_3"]  # fmt: skip
    assert row == "j1,t,a,,2,3,2,1,0.5,0.0945,0.9055,0.5,1.0,,2.0,2.8,0.333,2,1,0,0,0,0,0,1,1,0,0,0,0,1,0,0,,,,,"


def test_a_refused_run_is_usage_not_infrastructure(tmp_path: Path) -> None:
    folder = _write(tmp_path, [("t", "a", 2, 1, P), ("t", "a", 2, 2, U)])
    [cell] = report.summarize(report.load(folder)).cells
    assert (cell.outcomes["infrastructure"], cell.outcomes["usage"], cell.not_run) == (0, 1, 0)
    assert reportfmt.text(report.build([folder])).splitlines()[4].endswith("  1 usage")


def test_a_record_it_cannot_read_is_one_line(tmp_path: Path) -> None:
    folder = _job(tmp_path)
    (folder / "runs" / "t.a.L2.a1" / "results.json").write_text('{"version": 1, "status": "passed"}')
    done = jobs("report", folder)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench jobs: {folder / 'runs' / 't.a.L2.a1' / 'results.json'}: run record schema version 1, "
        "this ssebench reads version 2 (written by another ssebench; run it again with this one)\n"
    )


def test_two_jobs_compared(tmp_path: Path) -> None:
    one = _write(tmp_path / "one", [("t", "a", 2, 1, P), ("t", "a", 2, 2, F)])
    two = _write(tmp_path / "two", [("t", "a", 2, 1, P), ("t", "a", 2, 2, P)])
    assert report_text(one, str(two)).endswith(
        "j1 → j1\nagent  level  pass rate j1  pass rate j1  change\na      2      50%           100%          +50 pts\n"
    )
    document = json.loads(report_text(one, str(two), "--json"))
    assert document["comparison"][0]["run_ids_b"] == ["t.a.L2.a1", "t.a.L2.a2"]
