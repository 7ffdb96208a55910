"""The scheduler (resources, retries decided from the record, a new try starts clean) and the
record every ended run gets: the child's, or the one the jobs layer writes for a run that
left none. The local backend here runs real child processes (a shell in place of
``ssebench run``): killed, refused, silent, stopped, timed out."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ssebench import runrecord
from ssebench.jobs.backend import Capacity, JobRun
from ssebench.jobs.backends.local import RUN_LOG, LocalBackend
from ssebench.jobs.outcome import REJECTED, Clock, Ending, written
from ssebench.jobs.scheduler import Policy, RunEvent, Scheduler
from ssebench.jobs.state import JobState, new_run, read
from ssebench.runrecord import Outcome, RunResult, RunSpec
from tests.helpers.jobs import STATUS, job_run, record_of


class CountingBackend:
    """A backend whose runs take 50 ms and end as *script* says (per run id, per try).

    With *fill*, a run first waits (up to 20 s) until *fill* runs are under way at once or
    every one of *total* tries has started: a loaded machine then cannot end one run before
    the scheduler starts the next, so the most seen at once is what the scheduler allows."""

    name = "counting"
    runs_as = "process"

    def __init__(
        self,
        script: dict[str, list[Outcome]] | None = None,
        hold: threading.Event | None = None,
        fill: tuple[int, int] | None = None,
    ) -> None:
        self.script = script or {}
        self.now = self.most = self.started = 0
        self.lock = threading.Condition()
        self.tries: dict[str, int] = {}
        self.hold = hold  # the second try of a run waits for it
        self.fill = fill  # (runs at once to wait for, tries in all)

    def capacity(self) -> Capacity:
        return Capacity(4.0, 8 << 30)

    def run(self, run: JobRun, cancel: threading.Event) -> RunResult:
        with self.lock:
            self.now += 1
            self.started += 1
            self.most = max(self.most, self.now)
            self.tries[run.run_id] = n = self.tries.get(run.run_id, 0) + 1
            self.lock.notify_all()
            if self.fill is not None:
                at_once, total = self.fill
                self.lock.wait_for(lambda: self.now >= at_once or self.started >= total, 20)
        time.sleep(0.05)
        if self.hold is not None and n == 2:
            assert self.hold.wait(60)
        with self.lock:
            self.now -= 1
        outcome = (self.script.get(run.run_id) or [Outcome.PASSED] * 9)[n - 1]
        return written(run, STATUS[outcome], f"try {n}: {outcome.value}", Clock())

    def sweep(self, job_id: str) -> None:
        pass


def _state(folder: Path, runs: int) -> JobState:
    folder.mkdir(exist_ok=True)
    rows = [new_run(f"t.a.L2.a{i}", "/t/task.toml", "t", "a", 2, i) for i in range(1, runs + 1)]
    return JobState(folder, {"job_id": "j"}, rows)


def _schedule(
    tmp_path: Path, backend: CountingBackend, cpus: float, runs: int = 8, **policy: object
) -> tuple[JobState, Scheduler]:
    state = _state(tmp_path, runs)
    jobs = {r["run_id"]: job_run(tmp_path / r["folder"], r["run_id"], cpus) for r in state}
    scheduler = Scheduler(backend, state, jobs, Policy(**policy))  # type: ignore[arg-type]
    assert scheduler.run(list(jobs))
    state.close()
    return state, scheduler


@pytest.mark.parametrize(("cpus", "most"), [(1.0, 4), (2.0, 2), (3.0, 1), (64.0, 1)])
def test_the_scheduler_never_overcommits_the_cpus(tmp_path: Path, cpus: float, most: int) -> None:
    backend = CountingBackend(fill=(most, 8))
    _schedule(tmp_path, backend, cpus)
    assert backend.most == most


def test_the_concurrency_limit_holds(tmp_path: Path) -> None:
    backend = CountingBackend(fill=(3, 8))
    _schedule(tmp_path, backend, 0.5, concurrency=3)
    assert backend.most == 3


def test_infra_failures_are_retried_an_agents_own_failure_and_a_refusal_are_not(tmp_path: Path) -> None:
    infra, agent, usage = Outcome.INFRASTRUCTURE, Outcome.AGENT_ERROR, Outcome.USAGE
    script = {
        "t.a.L2.a1": [infra, Outcome.PASSED],
        "t.a.L2.a2": [agent],
        "t.a.L2.a3": [infra] * 3,
        "t.a.L2.a4": [usage],
    }
    state, scheduler = _schedule(tmp_path, CountingBackend(script), 1.0, runs=4)
    assert [(r["state"], r["tries"]) for r in state] == [("ended", 2), ("ended", 1), ("ended", 3), ("ended", 1)]
    assert {run_id: (e.outcome, e.status) for run_id, e in scheduler.endings.items()} == {
        "t.a.L2.a1": (Outcome.PASSED, "passed"),
        "t.a.L2.a2": (Outcome.AGENT_ERROR, "agent_failed"),
        "t.a.L2.a3": (Outcome.INFRASTRUCTURE, "daemon_failed"),
        "t.a.L2.a4": (Outcome.USAGE, "usage_error"),
    }
    for row in state:  # the record in each run's folder is the one the scheduler was given
        assert Ending.of(runrecord.read(tmp_path / row["folder"])) == scheduler.endings[row["run_id"]]
    assert sorted(p.name for p in (tmp_path / "tries").iterdir()) == [
        "t.a.L2.a1.try1",
        "t.a.L2.a3.try1",
        "t.a.L2.a3.try2",
    ]
    assert runrecord.read(tmp_path / "tries" / "t.a.L2.a3.try2").reason == "try 2: infrastructure"


@pytest.mark.parametrize(
    ("retry_on", "outcomes", "tries"),
    [
        (("infra", "agent_failed"), [Outcome.AGENT_ERROR, Outcome.PASSED], 2),  # a status named
        (("agent_timeout",), [Outcome.AGENT_TIMEOUT, Outcome.FAILED], 2),
        (("agent_timeout",), [Outcome.INFRASTRUCTURE], 1),  # infra not named: not retried
        (("infra", "agent_failed"), [Outcome.USAGE], 1),  # a refusal is never retried
        (("infra",), [Outcome.BUDGET], 1),
    ],
)
def test_retry_on_names_statuses_and_infra(
    tmp_path: Path, retry_on: tuple[str, ...], outcomes: list[Outcome], tries: int
) -> None:
    state, _ = _schedule(tmp_path, CountingBackend({"t.a.L2.a1": outcomes}), 1.0, runs=1, retry_on=retry_on)
    assert [r["tries"] for r in state] == [tries]


def test_a_retried_run_starts_its_new_try_with_nothing_of_the_last(tmp_path: Path) -> None:
    """While its second try runs, the run's row and folder say nothing of the first try's end."""
    hold = threading.Event()
    backend = CountingBackend({"t.a.L2.a1": [Outcome.INFRASTRUCTURE, Outcome.PASSED]}, hold)
    state = _state(tmp_path, 1)
    run = job_run(tmp_path / "runs" / "t.a.L2.a1")
    events: list[RunEvent] = []
    scheduler = Scheduler(backend, state, {run.run_id: run}, Policy(), events.append)
    worker = threading.Thread(target=scheduler.run, args=([run.run_id],))
    worker.start()
    try:
        _wait_for(lambda: backend.tries.get(run.run_id) == 2)
        state.flush(force=True)
        row = read(tmp_path)["runs"][0]
        assert (row["state"], row["tries"], row["ended"], row["duration"]) == ("running", 2, None, None)
        assert set(row) == {"run_id", "folder", "task", "task_id", "agent", "level", "attempt", "state", "started", "ended", "duration", "tries"}  # fmt: skip
        assert list(run.folder.iterdir()) == []  # the first try's record is under tries/
        assert runrecord.read(tmp_path / "tries" / "t.a.L2.a1.try1").status == "daemon_failed"
    finally:
        hold.set()
        worker.join(60)
    state.close()
    assert [(e.kind, e.result.status if e.result else None) for e in events] == [
        ("started", None),
        ("retry", "daemon_failed"),
        ("started", None),
        ("ended", "passed"),
    ]


def _wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_backend_that_raises_leaves_a_record(tmp_path: Path) -> None:
    class Broken(CountingBackend):
        name = "broken"

        def run(self, run: JobRun, cancel: threading.Event) -> RunResult:
            raise KeyError("no such image")

    state, scheduler = _schedule(tmp_path, Broken(), 1.0, runs=1, max_tries=1)
    record = runrecord.read(tmp_path / "runs" / "t.a.L2.a1")
    assert (record.outcome, record.status, record.reason) == (
        Outcome.INFRASTRUCTURE,
        "backend_error",
        "the broken backend failed: KeyError: 'no such image'",
    )
    assert record.spec.run_id == "t.a.L2.a1" and record.exit_code is None


def test_every_status_the_jobs_layer_writes_has_its_outcome_in_the_one_table() -> None:
    """No status of ours falls back to outcome_of's "unknown: infrastructure"."""
    from ssebench.jobs import outcome
    from ssebench.jobs.backends import kubernetes

    ours = {outcome.KILLED, outcome.NO_RESULTS, outcome.RUN_TIMEOUT, outcome.START_FAILED, outcome.BACKEND_ERROR}
    pods = {"evicted", "pod_failed", "pod_lost", "node_lost", "image_not_found", "start_failed"}
    assert ours | pods | {kubernetes.COLLECT_FAILED} <= {
        s for s, o in runrecord.STATUSES.items() if o is Outcome.INFRASTRUCTURE
    }
    assert runrecord.STATUSES[outcome.USAGE] is Outcome.USAGE
    assert runrecord.STATUSES[outcome.CANCELLED] is Outcome.CANCELLED


# --- the records the local backend writes for a run that left none ---------------------------


class ShellBackend(LocalBackend):
    """The local backend with a shell script as the run's child (in place of ssebench run)."""

    def __init__(self, script: str) -> None:
        super().__init__(cwd=None)
        self.script = script

    def argv(self, run: JobRun) -> list[str]:
        return ["sh", "-c", self.script, "sh", str(run.folder)]


def _run(tmp_path: Path, script: str, cancel_after: float | None = None, run_timeout: float | None = None) -> RunResult:
    folder = tmp_path / "runs" / "r1"
    folder.mkdir(parents=True)
    cancel = threading.Event()
    if cancel_after is not None:
        threading.Timer(cancel_after, cancel.set).start()
    result = ShellBackend(script).run(job_run(folder, run_timeout=run_timeout), cancel)
    assert runrecord.read(folder) == result  # the record is in the folder, whole
    assert (folder / RUN_LOG).exists() and not (folder.parent / ".r1.log").exists()
    assert result.spec.run_id == "t.a.L2.a1" and result.task.id == "t"
    return result


@pytest.mark.parametrize(
    ("script", "status", "outcome", "code", "reason"),
    [
        (
            'echo "ssebench run: ANTHROPIC_API_KEY is not set (the claude agent needs it)" >&2; exit 2',
            "usage_error",
            Outcome.USAGE,
            2,
            "ssebench run refused to start: ANTHROPIC_API_KEY is not set (the claude agent needs it)",
        ),
        ("kill -9 $$", "killed", Outcome.INFRASTRUCTURE, None, "ssebench run died of signal 9 (SIGKILL)"),
        ("exit 3", "no_results", Outcome.INFRASTRUCTURE, 3, "ssebench run exited 3 without writing results.json"),
    ],
)
def test_a_run_that_left_no_record_gets_one(
    tmp_path: Path, script: str, status: str, outcome: Outcome, code: int | None, reason: str
) -> None:
    result = _run(tmp_path, script)
    assert (result.status, result.outcome, result.exit_code, result.reason) == (status, outcome, code, reason)
    assert result.duration > 0 and result.started_at is not None


def test_the_child_reads_its_spec_beside_its_folder_and_it_is_gone_after(tmp_path: Path) -> None:
    """``ssebench run --spec FILE``: the file is the run's RunSpec, beside the run's folder
    (ssebench run wants its folder empty), removed once the run ended (its record has it)."""
    result = _run(tmp_path, 'cp "$(dirname "$1")/.r1.spec.json" "$(dirname "$1")/seen.json"; exit 3')
    seen = tmp_path / "runs" / "seen.json"
    assert RunSpec.model_validate_json(seen.read_text()) == result.spec
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["r1", "seen.json"]


def test_the_childs_own_record_is_the_runs(tmp_path: Path) -> None:
    mine = record_of(Outcome.AGENT_ERROR, "t.a.L2.a1")
    text = json.dumps(mine.model_dump(mode="json"))
    result = _run(tmp_path, f"printf '%s' '{text}' > \"$1/results.json\"; exit 6")
    assert result == mine


def test_a_record_this_ssebench_cannot_read_is_kept_aside_and_named(tmp_path: Path) -> None:
    result = _run(tmp_path, """echo '{"version": 1, "status": "passed"}' > "$1/results.json" """)
    kept = tmp_path / "runs" / "r1" / REJECTED
    assert json.loads(kept.read_text()) == {"version": 1, "status": "passed"}
    assert (result.status, result.outcome) == ("no_results", Outcome.INFRASTRUCTURE)
    assert result.reason == (
        f"{tmp_path / 'runs' / 'r1' / 'results.json'}: run record schema version 1, this ssebench reads version 2 "
        f"(written by another ssebench; run it again with this one) (kept as {REJECTED})"
    )


def test_a_stopped_run_says_why_over_its_childs_word(tmp_path: Path) -> None:
    """The child writes "interrupted" on SIGTERM; the record says the scheduler stopped it."""
    text = json.dumps(record_of(Outcome.CANCELLED, "t.a.L2.a1").model_dump(mode="json"))
    script = (
        f"""printf '%s' '{text}' > "$1.json"; trap 'mv "$1.json" "$1/results.json"; exit 143' TERM; sleep 60 & wait"""
    )
    cancelled = _run(tmp_path / "a", script, cancel_after=0.5)
    assert (cancelled.status, cancelled.outcome) == ("cancelled", Outcome.CANCELLED)
    assert cancelled.reason == "stopped by ssebench jobs (Ctrl-C or SIGTERM); jobs resume runs it again"
    assert cancelled.agent is not None and cancelled.exit_code == 1  # the child's facts are kept
    late = _run(tmp_path / "b", "sleep 60", run_timeout=0.5)
    assert (late.status, late.outcome) == ("run_timeout", Outcome.INFRASTRUCTURE)
    assert late.reason == "the run took longer than its [timeouts] run of 0.5 s; it was stopped"
