"""``ssebench jobs run``'s preflight and ``--dry-run``: every problem at once (agent and
variable, task and key, program, lock, backend), exit 2, nothing started, no job folder;
and what a refusal the preflight could not foresee becomes (the real ``ssebench run``
child refusing: a ``usage`` record with its reason in one line, never retried)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ssebench import runrecord
from ssebench.jobs.backend import Capacity, JobRun
from ssebench.jobs.backends.local import LocalBackend
from ssebench.jobs.scheduler import Policy, Scheduler
from ssebench.jobs.state import JobState, new_run
from ssebench.runrecord import Outcome, RunSpec
from tests.helpers.jobs import DEMO, jobs
from tests.helpers.tasks import make_task

pytestmark = pytest.mark.timeout(120)
#: a PATH without any agent CLI, and no model API variable: what a fresh machine has
BARE = {
    "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
    **{v: "" for v in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY")},
    **{v: "" for v in ("CODEX_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")},
}
CLAUDE_KEY = (
    "agent claude: no model API key: set ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN "
    "(and ANTHROPIC_BASE_URL for another endpoint)"
)


def _claude_cli() -> str:
    from ssebench.agents.recipe import get_recipe

    recipe = get_recipe("claude")
    return f"agent claude: claude: not found on PATH; install the claude CLI: npm install -g {recipe.package}@{recipe.pin()}"


def test_every_problem_is_listed_at_once_and_nothing_is_made(tmp_path: Path) -> None:
    broken = make_task(tmp_path / "broken", top_toml="[resources]\ncpus = 0\n")
    job = tmp_path / "job.toml"
    job.write_text(
        f'tasks = ["{DEMO}", "{broken.file}"]\n'
        '[[agents]]\nname = "claude"\n'
        '[[agents]]\nname = "codex"\nmodel = "gpt-x"\n'
        '[[agents]]\nname = "mine"\ncommand = ["./my-agent.sh"]\n',
        encoding="utf-8",
    )
    done = jobs("run", job, "--results", tmp_path / "out", env=BARE)
    assert (done.returncode, done.stdout) == (2, "")
    lines = done.stderr.splitlines()
    assert lines[0] == "ssebench jobs: preflight found 6 problems; nothing was started:"
    assert lines[1] == (
        f"  task: {broken.file}: key 'resources.cpus': must be a number of CPUs above 0 (at most 1024), got 0"
    )
    assert lines[2:4] == [f"  {CLAUDE_KEY}", f"  {_claude_cli()}"]
    assert lines[4].startswith("  agent codex: no model API key: set OPENAI_API_KEY or CODEX_API_KEY")
    assert lines[5].startswith("  agent codex: codex: not found on PATH")
    assert lines[6] == f"  agent mine: command './my-agent.sh': {tmp_path / 'my-agent.sh'} does not exist"
    assert len(lines) == 7
    assert not (tmp_path / "out").exists()


def test_claude_without_a_key_is_refused_before_anything_starts(tmp_path: Path) -> None:
    done = jobs("run", "--task", DEMO / "task.toml", "--agent", "claude", cwd=tmp_path, env=BARE)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench jobs: preflight found 2 problems; nothing was started:\n  {CLAUDE_KEY}\n  {_claude_cli()}\n"
    )
    assert list(tmp_path.iterdir()) == []  # no ssebench-jobs/ folder


def test_dry_run_prints_the_matrix_and_the_verdict_and_starts_nothing(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(
        f'tasks = ["{DEMO}"]\nlevels = [0, 2]\nattempts = 2\nconcurrency = 3\n'
        '[[agents]]\nname = "noop"\ncommand = ["true"]\nmodel = "m-1"\n',
        encoding="utf-8",
    )
    done = jobs("run", job, "--dry-run", "--results", tmp_path / "out", env=BARE)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "task           agent  model  level  attempt\n"
        "demo-overflow  noop   m-1    0      1\n"
        "demo-overflow  noop   m-1    0      2\n"
        "demo-overflow  noop   m-1    2      1\n"
        "demo-overflow  noop   m-1    2      2\n"
        "4 runs: 1 task × 1 agent × 2 levels × 2 attempts, on the local backend, at most 3 at once\n"
        "preflight: passed; nothing was started (--dry-run)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.toml"]
    bad = jobs("run", "--task", DEMO / "task.toml", "--agent", "claude", "--dry-run", cwd=tmp_path, env=BARE)
    assert bad.returncode == 2
    assert bad.stdout.splitlines()[-3:] == [
        "preflight: 2 problems; the job would not start:",
        f"  {CLAUDE_KEY}",
        f"  {_claude_cli()}",
    ]
    assert bad.stdout.splitlines()[1] == "demo-overflow  claude  -      2      1"
    assert list(tmp_path.iterdir()) == [job]


def test_a_refusal_the_preflight_could_not_foresee_is_one_line_and_never_retried(tmp_path: Path) -> None:
    """The real ``ssebench run`` child refuses (its own preflight: here the key the jobs
    preflight was not asked about): the record is ``usage``, its reason every problem on
    one line; the scheduler does not try it again."""
    folder = tmp_path / "runs" / "demo-overflow.claude.L2.a1"
    spec = RunSpec(task_file=str(DEMO / "task.toml"), task_id="demo-overflow", agent="claude", level=2,
                   job_id="j-unforeseen", run_id=folder.name, attempt=1)  # fmt: skip
    run = JobRun(spec, "claude", BARE, Capacity(1.0, 1 << 30), folder)
    state = JobState(tmp_path, {"job_id": "j-unforeseen"}, [new_run(folder.name, spec.task_file, "demo-overflow", "claude", 2, 1)])  # fmt: skip
    scheduler = Scheduler(LocalBackend(cwd=tmp_path), state, {run.run_id: run}, Policy(retry_on=("infra",)))
    assert scheduler.run([run.run_id])
    state.close()
    record = runrecord.read(folder)
    assert (record.outcome, record.status, record.exit_code) == (Outcome.USAGE, "usage_error", 2)
    assert record.reason == (
        "ssebench run refused to start: claude cannot run: no model API key: set ANTHROPIC_API_KEY, "
        "ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN (and ANTHROPIC_BASE_URL for another endpoint); "
        + _claude_cli().removeprefix("agent claude: ")
    )
    assert state.runs[run.run_id]["tries"] == 1
    assert not (tmp_path / "tries").exists()
