"""``ssebench jobs``: the job file's one-line errors, the matrix, the statistics, the resume
rule and the report's formats (fast: nothing here starts a run)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssebench.agents.registry import names as agent_names
from ssebench.jobs import folder as jobfolder
from ssebench.jobs import jobfile, matrix, report
from ssebench.jobs.backend import Outcome, Resources, RunSpec
from ssebench.jobs.jobfile import AgentSpec, Job
from ssebench.jobs.scheduler import Policy, Scheduler
from ssebench.jobs.state import STATES, JobState, new_run
from ssebench.jobs.stats import pass_at_k, quantile, wilson
from ssebench.task import TaskError, load_task
from tests.helpers.jobs import DEMO, jobs

GOOD = f'tasks = ["{DEMO}"]\n[[agents]]\nname = "noop"\ncommand = ["true"]\n'


def _bad(tmp_path: Path, text: str) -> str:
    job = tmp_path / "job.toml"
    job.write_text(text, encoding="utf-8")
    done = jobs("run", job, "--results", tmp_path / "out")
    assert done.returncode == 2
    assert done.stdout == ""
    assert not (tmp_path / "out").exists()  # nothing started, nothing written
    return done.stderr.replace(str(tmp_path), "DIR")


def test_a_missing_task_is_one_line_naming_file_key_and_path(tmp_path: Path) -> None:
    text = 'tasks = ["nope"]\n[[agents]]\nname = "noop"\ncommand = ["true"]\n'
    assert _bad(tmp_path, text) == "ssebench jobs: DIR/job.toml: tasks[0]: 'nope': DIR/nope does not exist\n"


def test_an_unknown_agent_is_one_line(tmp_path: Path) -> None:
    text = f'tasks = ["{DEMO}"]\n[[agents]]\nname = "claud"\n'
    assert _bad(tmp_path, text) == (
        "ssebench jobs: DIR/job.toml: agents[0].name: unknown agent 'claud' "
        f"(bundled: {', '.join(agent_names())}; or give a command)\n"
    )


def test_a_level_outside_0_to_4_is_one_line(tmp_path: Path) -> None:
    assert _bad(tmp_path, "levels = [2, 5]\n" + GOOD) == (
        "ssebench jobs: DIR/job.toml: levels[1]: must be a level 0-4, got 5\n"
    )


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "tasks = [",
            "DIR/job.toml: not valid TOML: Invalid value (at end of document)",
        ),
        ('attempts = "2"\n' + GOOD, "DIR/job.toml: attempts: must be a whole number, got a string"),
        (
            "color = 1\n" + GOOD,
            "DIR/job.toml: color: unknown key (known keys: "
            "agents, attempts, backend, concurrency, levels, retry, tasks, timeouts)",
        ),
        ('[[agents]]\nname = "noop"\ncommand = ["true"]\n', "DIR/job.toml: tasks: missing (required)"),
        (f'tasks = ["{DEMO}"]\n', "DIR/job.toml: agents: missing (required: at least one [[agents]] table)"),
        (
            GOOD + '[retry]\non = ["passed"]\n',
            "DIR/job.toml: retry.on[0]: must be one of infra, agent_timeout, "
            "agent_failed, daemon_failed, server_failed, grading_error, got 'passed'",
        ),
        (GOOD + "[timeouts]\nrun = -1\n", "DIR/job.toml: timeouts.run: must be a positive number of seconds, got -1"),
        (
            GOOD + '[[agents]]\nname = "noop"\ncommand = ["false"]\n',
            "DIR/job.toml: agents[1].name: 'noop' is already the name of another agent",
        ),
    ],
)
def test_bad_job_files(tmp_path: Path, text: str, line: str) -> None:
    assert _bad(tmp_path, text) == f"ssebench jobs: {line}\n"


def test_flags_without_a_file_need_a_task_and_an_agent(tmp_path: Path) -> None:
    done = jobs("run", "--task", DEMO / "task.toml")
    assert (done.returncode, done.stderr) == (
        2,
        "ssebench jobs: give a job file, or at least one --task and one --agent\n",
    )
    done = jobs("run", "--task", DEMO / "task.toml", "--agent", "claude", "--difficulty", "7")
    assert (done.returncode, done.stderr) == (
        2,
        "ssebench jobs: --difficulty: must be a level 0-4, got 7\n",
    )


def test_resume_refuses_a_changed_job_file_unless_forced(tmp_path: Path) -> None:
    job_file = tmp_path / "job.toml"
    job_file.write_text(GOOD, encoding="utf-8")
    job = jobfile.load(job_file)
    jobfolder.create(tmp_path / "out", job, None, "local").close()
    job_file.write_text("# one more attempt?\n" + GOOD, encoding="utf-8")
    done = jobs("resume", tmp_path / "out")
    assert (done.returncode, done.stderr) == (
        2,
        f"ssebench jobs: {job_file}: the job file changed since {tmp_path / 'out'} was made; "
        "resume with --force to run the changed job there\n",
    )


# --- the matrix -------------------------------------------------------------------------------

names = st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,6}", fullmatch=True), min_size=1, max_size=4, unique=True)


@given(tasks=names, agents=names, levels=st.sets(st.integers(0, 4), min_size=1), attempts=st.integers(1, 4))
def test_the_matrix_is_every_cell_once_with_stable_ids(
    tasks: list[str], agents: list[str], levels: set[int], attempts: int
) -> None:
    paths = [Path(f"/t/{t}/task.toml") for t in tasks]
    job = Job(tuple(paths), tuple(AgentSpec(a, ("true",)) for a in agents), tuple(sorted(levels)), attempts)
    ids = {p: p.parent.name for p in paths}
    runs = matrix.expand(job, ids)
    assert len(runs) == len(tasks) * len(agents) * len(levels) * attempts
    assert len({r.run_id for r in runs}) == len(runs)
    assert [r.run_id for r in runs] == [r.run_id for r in matrix.expand(job, ids)]
    for r in runs:
        assert r.run_id == f"{r.task_id}.{r.agent.name}.L{r.level}.a{r.attempt}"


@given(st.lists(st.sampled_from(STATES), min_size=1, max_size=40))
def test_resume_never_runs_a_finished_run_again(tmp_path_factory: pytest.TempPathFactory, states: list[str]) -> None:
    folder = tmp_path_factory.mktemp("state")
    runs = [{**new_run(f"t.a.L2.a{i}", "/t/task.toml", "t", "a", 2, i), "state": s} for i, s in enumerate(states, 1)]
    state = JobState(folder, {"job_id": "j"}, runs)
    todo = jobfolder.to_run(state)
    state.close()
    assert todo == [r["run_id"] for r in runs if r["state"] in ("pending", "running", "infra")]


# --- the statistics ---------------------------------------------------------------------------


@given(n=st.integers(1, 60), data=st.data())
def test_pass_at_k_is_a_probability_growing_with_k(n: int, data: st.DataObject) -> None:
    c = data.draw(st.integers(0, n))
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values)
    assert values[0] == pytest.approx(c / n)
    assert values[-1] == (1.0 if c else 0.0)


@given(n=st.integers(1, 500), data=st.data())
def test_wilson_interval_holds_the_observed_rate(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, n))
    low, high = wilson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_known_values() -> None:
    assert wilson(4, 4) == pytest.approx((0.5101, 1.0), abs=1e-4)
    assert wilson(0, 4) == pytest.approx((0.0, 0.4899), abs=1e-4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.9) == pytest.approx(3.7)
    assert quantile([], 0.5) is None


# --- the report's formats, on a job folder written by hand ---------------------------------------


def _job_folder(tmp_path: Path) -> Path:
    """Two runs of one cell: one passed after 1 call, one lost to the infrastructure."""
    runs = []
    for attempt, (state, status) in enumerate([("graded", "passed"), ("infra", "daemon_failed")], 1):
        record = {**new_run(f"t.a.L2.a{attempt}", "/t/task.toml", "t", "a", 2, attempt), "state": state}
        record.update(status=status, duration=9.0)
        runs.append(record)
        folder = tmp_path / record["folder"]
        folder.mkdir(parents=True)
        if state == "graded":
            (folder / "results.json").write_text(json.dumps({"status": status, "passed": True, "duration": 12.5}))
            (folder / "server.log").write_text(
                "x ssebench.server.calls INFO test_patch call 1 (level 2): every check that ran passed "
                "[build: passed, functional tests: passed] in 1.8 s\n"
            )
    (tmp_path / "job.json").write_text(json.dumps({"job_id": "j1", "runs": runs}))
    return tmp_path


def test_report_text_markdown_and_csv(tmp_path: Path) -> None:
    data = [report.load(_job_folder(tmp_path))]
    assert report.render(data, "text") == (
        "job j1: 2 runs\n"
        "agent  level  runs         pass rate (95% CI)     pass@2  median s  p90 s  calls/run  calls\n"
        "a      2      2 (1 infra)  1/1 = 100% (21%-100%)  -       10.8      12.2   0.50       1 passed\n"
        "\n"
        "job j1: per task\n"
        "task  runs  pass rate (95% CI)     pass@2  median s  calls/run  infra\n"
        "t     2     1/1 = 100% (21%-100%)  -       10.8      0.50       1\n"
    )
    assert report.render(data, "markdown").splitlines()[:4] == [
        "### job j1: 2 runs",
        "",
        "| agent | level | runs | pass rate (95% CI) | pass@2 | median s | p90 s | calls/run | calls |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    assert report.render(data, "csv").splitlines()[1] == (
        "j1,a,2,2,1,1,1.0,0.2065,1.0,2,,10.75,12.15,0.5,1,0,0,0,0,0,0,1"
    )
    cell = json.loads(report.render(data, "json"))["cells"][0]
    assert {k: cell[k] for k in ("agent", "level", "runs", "pass_rate", "pass_at_k")} == {
        "agent": "a",
        "level": 2,
        "runs": 2,
        "pass_rate": 1.0,
        "pass_at_k": None,
    }


def test_report_compares_two_jobs(tmp_path: Path) -> None:
    first = report.load(_job_folder(tmp_path / "one"))
    text = report.render([first, first], "text")
    assert text.endswith(
        "j1 → j1\nagent  level  pass rate j1  pass rate j1  change\na      2      100%          100%          +0 pts\n"
    )


# --- the scheduler: resources and retries ---------------------------------------------------------


class CountingBackend:
    """A backend whose runs take 50 ms and end as *script* says (per run id, per try)."""

    name = "counting"

    def __init__(self, script: dict[str, list[str]] | None = None) -> None:
        self.script = script or {}
        self.now = self.most = 0
        self.lock = threading.Lock()
        self.tries: dict[str, int] = {}

    def capacity(self) -> Resources:
        return Resources(4.0, 8 << 30)

    def run(self, spec: RunSpec, cancel: threading.Event) -> Outcome:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.tries[spec.run_id] = n = self.tries.get(spec.run_id, 0) + 1
        time.sleep(0.05)
        with self.lock:
            self.now -= 1
        kind = (self.script.get(spec.run_id) or ["graded"] * 9)[n - 1]
        status = {"graded": "passed", "agent": "agent_failed", "infra": "daemon_failed"}[kind]
        return Outcome(kind, status, 0, "")  # type: ignore[arg-type]

    def sweep(self, job_id: str) -> None:
        pass


def _schedule(tmp_path: Path, backend: CountingBackend, cpus: float, runs: int = 8, **policy: object) -> JobState:
    tmp_path.mkdir(exist_ok=True)
    records = [new_run(f"t.a.L2.a{i}", "/t/task.toml", "t", "a", 2, i) for i in range(1, runs + 1)]
    state = JobState(tmp_path, {"job_id": "j"}, records)
    specs = {
        r["run_id"]: RunSpec(
            "j",
            r["run_id"],
            Path("/t/task.toml"),
            "a",
            ("true",),
            None,
            {},
            2,
            r["attempt"],
            None,
            cpus,
            1 << 30,
            tmp_path / r["folder"],
        )
        for r in records
    }
    assert Scheduler(backend, state, specs, Policy(**policy)).run(list(specs))  # type: ignore[arg-type]
    state.close()
    return state


@pytest.mark.parametrize(("cpus", "most"), [(1.0, 4), (2.0, 2), (3.0, 1), (64.0, 1)])
def test_the_scheduler_never_overcommits_the_cpus(tmp_path: Path, cpus: float, most: int) -> None:
    backend = CountingBackend()
    _schedule(tmp_path, backend, cpus)
    assert backend.most == most


def test_the_concurrency_limit_holds(tmp_path: Path) -> None:
    backend = CountingBackend()
    _schedule(tmp_path, backend, 0.5, concurrency=3)
    assert backend.most == 3


def test_infra_failures_are_retried_an_agents_own_failure_is_not(tmp_path: Path) -> None:
    script = {"t.a.L2.a1": ["infra", "graded"], "t.a.L2.a2": ["agent"], "t.a.L2.a3": ["infra"] * 3}
    state = _schedule(tmp_path, CountingBackend(script), 1.0, runs=3)
    assert [(r["state"], r["status"], r["tries"]) for r in state] == [
        ("graded", "passed", 2),
        ("agent", "agent_failed", 1),
        ("infra", "daemon_failed", 3),
    ]
    assert sorted(p.name for p in (tmp_path / "tries").iterdir()) == [
        "t.a.L2.a1.try1",
        "t.a.L2.a3.try1",
        "t.a.L2.a3.try2",
    ]
    asked = _schedule(
        tmp_path / "again",
        CountingBackend({"t.a.L2.a1": ["agent", "graded"]}),
        1.0,
        runs=1,
        retry_on=("infra", "agent_failed"),
    )
    assert [(r["state"], r["tries"]) for r in asked] == [("graded", 2)]


def test_a_task_declares_what_a_run_needs(tmp_path: Path) -> None:
    from tests.helpers.tasks import make_task

    task = make_task(tmp_path / "t", top_toml='[resources]\ncpus = 2\nmemory = "3G"\n')
    assert jobfolder.task_resources(task.file) == Resources(2.0, 3 << 30)
    assert jobfolder.task_resources(DEMO / "task.toml") == jobfolder.DEFAULT_RUN
    bad = make_task(tmp_path / "b", top_toml="[resources]\ncpus = 0\n")
    with pytest.raises(TaskError) as error:
        load_task(bad.file)
    assert (
        str(error.value) == f"{bad.file}: key 'resources.cpus': must be a number of CPUs above 0 (at most 1024), got 0"
    )
