"""``ssebench jobs``: the job file's one-line errors, the matrix, the statistics, the resume
rule and the report's formats (fast: nothing here starts a run). The scheduler and the
records the backends write: tests/test_jobs_scheduler.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssebench import runrecord
from ssebench.agents.registry import names as agent_names
from ssebench.jobs import folder as jobfolder
from ssebench.jobs import jobfile, matrix
from ssebench.jobs.backend import Capacity
from ssebench.jobs.jobfile import AgentSpec, Job
from ssebench.jobs.state import STATES, JobState, new_run, read
from ssebench.jobs.stats import pass_at_k, quantile, wilson
from ssebench.runrecord import Outcome
from ssebench.task import TaskError, load_task
from tests.helpers.jobs import DEMO, jobs, record_of

GOOD = f'tasks = ["{DEMO}"]\n[[agents]]\nname = "noop"\ncommand = ["true"]\n'


def _bad(tmp_path: Path, text: str) -> str:
    job = tmp_path / "job.toml"
    job.write_text(text, encoding="utf-8")
    done = jobs("run", job, "--results", tmp_path / "out")
    assert done.returncode == 2
    assert done.stdout == ""
    assert not (tmp_path / "out").exists()  # nothing started, nothing written
    return done.stderr.replace(str(tmp_path), "DIR")


def test_a_missing_task_is_a_preflight_problem_naming_file_key_and_path(tmp_path: Path) -> None:
    text = 'tasks = ["nope"]\n[[agents]]\nname = "noop"\ncommand = ["true"]\n'
    assert _bad(tmp_path, text) == (
        "ssebench jobs: preflight found 1 problem; nothing was started:\n"
        "  task: DIR/job.toml: tasks[0]: 'nope': DIR/nope does not exist\n"
    )


def test_every_problem_of_a_job_at_once_an_unknown_agent_with_the_closest_name(tmp_path: Path) -> None:
    """Tasks that do not exist, an unknown agent, another one's missing key: one list, exit 2,
    no job folder (issue 31: all problems listed at once)."""
    text = f'tasks = ["{DEMO}", "nope", "none*"]\n[[agents]]\nname = "claud"\n[[agents]]\nname = "noop"\ncommand = ["true"]\n'
    assert _bad(tmp_path, text) == (
        "ssebench jobs: preflight found 3 problems; nothing was started:\n"
        "  task: DIR/job.toml: tasks[1]: 'nope': DIR/nope does not exist\n"
        "  task: DIR/job.toml: tasks[2]: 'none*' matches no task\n"
        "  agent claud: DIR/job.toml: agents[0].name: unknown agent 'claud', maybe you meant 'claude'? "
        f"(bundled: {', '.join(agent_names())}; or give a command)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.toml"]


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


def test_resume_lists_what_changed_and_refuses_unless_use_stored(tmp_path: Path) -> None:
    """The job as it started is stored in job.json; a changed job file is listed and refused
    (nothing written), --use-stored runs the job as it started; a comment is no change."""
    job_file = tmp_path / "job.toml"
    job_file.write_text(GOOD + 'env = { API_KEY = "s3cret", HOST = "a" }\n', encoding="utf-8")
    jobfolder.create(tmp_path / "out", jobfile.load(job_file), None, "local").close()
    before = (tmp_path / "out" / "job.json").read_bytes()
    assert b"s3cret" not in before  # a secret is stored as its digest only
    changed = "attempts = 2\nlevels = [0, 2]\n" + GOOD + 'model = "m2"\nenv = { API_KEY = "other", HOST = "b" }\n'
    job_file.write_text(changed, encoding="utf-8")
    done = jobs("resume", tmp_path / "out")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench jobs: {job_file} changed since {tmp_path / 'out'} started:\n"
        "  attempts: 1 → 2\n"
        "  levels: [2] → [0, 2]\n"
        "  agents noop: model: none → 'm2'\n"
        "  agents noop: env API_KEY: (a secret) → (a secret)\n"
        "  agents noop: env HOST: 'a' → 'b'\n"
        "resume runs the job as it started: add --use-stored to run it so, or start a new job "
        "from the changed file (ssebench jobs run JOB.toml)\n"
    )
    assert (tmp_path / "out" / "job.json").read_bytes() == before
    job_file.write_text("# a comment\n" + GOOD + 'env = { API_KEY = "s3cret", HOST = "a" }\n', encoding="utf-8")
    again = jobfolder.reopen(tmp_path / "out", read(tmp_path / "out"), use_stored=False)
    assert (again.attempts, again.agents[0].env) == (1, {"API_KEY": "s3cret", "HOST": "a"})


def test_use_stored_needs_the_secret_the_job_started_with(tmp_path: Path) -> None:
    job_file = tmp_path / "job.toml"
    job_file.write_text(GOOD + 'env = { API_KEY = "s3cret" }\n', encoding="utf-8")
    jobfolder.create(tmp_path / "out", jobfile.load(job_file), None, "local").close()
    job_file.write_text("attempts = 3\n" + GOOD + 'env = { API_KEY = "s3cret" }\n', encoding="utf-8")
    stored = jobfolder.reopen(tmp_path / "out", read(tmp_path / "out"), use_stored=True)
    assert (stored.attempts, stored.agents[0].env) == (1, {"API_KEY": "s3cret"})
    job_file.write_text("attempts = 3\n" + GOOD + 'env = { API_KEY = "new" }\n', encoding="utf-8")
    with pytest.raises(jobfile.JobFileError) as error:
        jobfolder.reopen(tmp_path / "out", read(tmp_path / "out"), use_stored=True)
    assert str(error.value) == (
        "agents noop: env API_KEY: a secret, not kept in the job's folder, and the job file no longer holds "
        "the value the job started with; put it back to resume as stored"
    )


def test_resume_force_is_gone_and_says_what_replaced_it(tmp_path: Path) -> None:
    done = jobs("resume", tmp_path, "--force")
    assert (done.returncode, done.stderr) == (
        2,
        "ssebench jobs: resume --force is gone: resume refuses a changed job file and lists what changed; "
        "--use-stored runs the job as it started, a new job (ssebench jobs run) runs the changed one\n",
    )


def test_resume_of_a_finished_job_says_so(tmp_path: Path) -> None:
    job_file = tmp_path / "job.toml"
    job_file.write_text("attempts = 2\n" + GOOD, encoding="utf-8")
    state = jobfolder.create(tmp_path / "out", jobfile.load(job_file), None, "local")
    for row, outcome in zip(state, (Outcome.PASSED, Outcome.FAILED), strict=True):
        (tmp_path / "out" / row["folder"]).mkdir(parents=True)
        runrecord.write(tmp_path / "out" / row["folder"], record_of(outcome, row["run_id"]))
        state.update(row["run_id"], state="ended")
    state.close()
    before = (tmp_path / "out" / "job.json").read_bytes()
    done = jobs("resume", tmp_path / "out")
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == f"nothing to resume: 2/2 runs finished (report: ssebench jobs report {tmp_path / 'out'})\n"
    job_file.write_text("attempts = 3\n" + GOOD, encoding="utf-8")
    done = jobs("resume", tmp_path / "out")
    assert (done.returncode, done.stderr.splitlines()[1]) == (
        0,
        f"({job_file} changed since; to run the changed job, start a new one: ssebench jobs run {job_file})",
    )
    assert (tmp_path / "out" / "job.json").read_bytes() == before  # nothing written


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


ROWS = st.sampled_from(STATES)
ENDS = st.none() | st.sampled_from(list(Outcome))


@given(st.lists(st.tuples(ROWS, ENDS), min_size=1, max_size=30))
def test_resume_runs_exactly_the_runs_without_a_final_record(
    tmp_path_factory: pytest.TempPathFactory, runs: list[tuple[str, Outcome | None]]
) -> None:
    """The record decides, not the row: a run with a final outcome is never run again,
    whatever its row says (a row still "running" with a record: ssebench jobs was killed)."""
    folder = tmp_path_factory.mktemp("state")
    rows = [{**new_run(f"t.a.L2.a{i}", "/t/task.toml", "t", "a", 2, i), "state": s} for i, (s, _) in enumerate(runs, 1)]
    for row, (state, outcome) in zip(rows, runs, strict=True):
        if outcome is not None and state != "pending":
            (folder / row["folder"]).mkdir(parents=True)
            runrecord.write(folder / row["folder"], record_of(outcome, row["run_id"]))
    state = JobState(folder, {"job_id": "j"}, rows)
    done = jobfolder.endings(state)
    todo = jobfolder.to_run(state, done)
    state.close()
    final = {r["run_id"] for r, (s, o) in zip(rows, runs, strict=True) if s != "pending" and o is not None and o.final}
    assert todo == [r["run_id"] for r in rows if r["run_id"] not in final]
    assert all(state.runs[run_id]["state"] == "ended" for run_id in done)  # the record won


def test_a_run_that_ended_as_ssebench_jobs_was_killed_is_ended_and_tidied(tmp_path: Path) -> None:
    """Its record was written, the scheduler died before noting it: the row is set ended,
    the log it kept beside the folder goes in, its spec file goes."""
    row = {**new_run("t.a.L2.a1", "/t/task.toml", "t", "a", 2, 1), "state": "running", "tries": 1}
    folder = tmp_path / row["folder"]
    folder.mkdir(parents=True)
    runrecord.write(folder, record_of(Outcome.PASSED, row["run_id"]))
    (folder.parent / ".t.a.L2.a1.log").write_text("the run's display\n")
    (folder.parent / ".t.a.L2.a1.spec.json").write_text("{}")
    state = JobState(tmp_path, {"job_id": "j"}, [row])
    done = jobfolder.endings(state)
    state.close()
    assert (done["t.a.L2.a1"].outcome, jobfolder.to_run(state, done)) == (Outcome.PASSED, [])
    assert state.runs["t.a.L2.a1"]["state"] == "ended"
    assert sorted(p.name for p in folder.parent.iterdir()) == ["t.a.L2.a1"]
    assert (folder / "ssebench-run.log").read_text() == "the run's display\n"


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


# --- resources ---------------------------------------------------------------------------------


def test_a_task_declares_what_a_run_needs(tmp_path: Path) -> None:
    from tests.helpers.tasks import make_task

    task = make_task(tmp_path / "t", top_toml='[resources]\ncpus = 2\nmemory = "3G"\n')
    assert jobfolder.task_resources(task.file) == Capacity(2.0, 3 << 30)
    assert jobfolder.task_resources(DEMO / "task.toml") == jobfolder.DEFAULT_RUN
    bad = make_task(tmp_path / "b", top_toml="[resources]\ncpus = 0\n")
    with pytest.raises(TaskError) as error:
        load_task(bad.file)
    assert (
        str(error.value) == f"{bad.file}: key 'resources.cpus': must be a number of CPUs above 0 (at most 1024), got 0"
    )
