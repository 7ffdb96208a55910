"""``ssebench run -- CMD`` in process mode: a whole run with a scripted MCP-client agent."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AGENT = Path(__file__).parent / "fixtures" / "agents" / "call_test_patch.py"
RUN = [sys.executable, "-c", "from ssebench.cli import main; main()", "run"]


def run(*args: str, timeout: float = 180, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SSE_")}
    return subprocess.run(
        [*RUN, *args], env={**base, "COLUMNS": "120", **env}, capture_output=True, text=True, timeout=timeout
    )


def tree_digest(tree: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(tree.rglob("*")):
        digest.update(str(path.relative_to(tree)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def task(task_factory):
    return task_factory(build="true", functional="test -f fixed")


@pytest.mark.slow
def test_run_a_command_end_to_end(task, tmp_path: Path):
    results = tmp_path / "run"
    before = tree_digest(task.tree)
    result = run(
        "--task",
        str(task.file),
        "--results",
        str(results),
        "--difficulty",
        "1",
        "--json",
        "--",
        sys.executable,
        str(AGENT),
        "--write",
        "fixed",
        "yes",
        SSE_JOB_ID="j1",
        SSE_JOB_RUN="j1/r7",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # --json: stdout is results.json, nothing else
    assert data == json.loads((results / "results.json").read_text())
    assert data["status"] == "passed" and data["passed"] is True
    # the spec made from the flags, with the job's ids from its variables
    spec = {k: data["spec"][k] for k in ("task_file", "task_id", "agent", "level", "backend", "job_id", "run_id")}
    assert spec == {
        "task_file": str(task.file),
        "task_id": "test-task",
        "agent": None,
        "level": 1,
        "backend": "process",
        "job_id": "j1",
        "run_id": "r7",
    }
    assert data["agent"]["calls"] == 1 and [c["outcome"] for c in data["calls"]] == ["passed"]
    assert data["difficulty"] == {"level": 1, "name": "NO_INTENT_TEST"}
    # the agent worked in a copy: the task's own tree is untouched
    assert data["task"]["tree"] == str(results / "tree")
    assert (results / "tree" / "fixed").read_text() == "yes"
    assert tree_digest(task.tree) == before
    # what the agent got from test_patch at level 1 on a task without PoCs
    assert (results / "agent-stdout.log").read_text() == (
        "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n"
        "- PoCs: passed (the task has none)\n- functional tests: passed\n\n"
        "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is reported about them.\n"
    )
    # the live display went to stderr, with the final stage table and the summary
    for stage in ("setup", "daemon", "server", "agent", "grading"):
        assert f"│ {stage}" in result.stderr
    assert "passed (exit 0)" in result.stderr


@pytest.mark.slow
def test_run_reports_a_failed_check_in_the_table(task, tmp_path: Path):
    results = tmp_path / "run"
    result = run("--task", str(task.file), "--results", str(results), "--", sys.executable, str(AGENT))
    assert result.returncode == 1, result.stderr
    assert "checks_failed (exit 1)" in result.stdout
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]] for line in result.stdout.splitlines() if line.startswith("│")
    ]
    assert ["passed", "no"] in rows
    assert ["build", "passed"] in rows and ["PoCs", "passed"] in rows and ["functional tests", "failed"] in rows
    assert ["agent", "exit 0"] not in rows and any(r[0] == "agent" and r[1].startswith("exit 0, ") for r in rows)
    assert f"{results / 'results.json'}" in result.stdout
    assert json.loads((results / "results.json").read_text())["passed"] is False


def test_run_needs_an_agent_or_a_command_not_both(task):
    result = run("--task", str(task.file), "--agent", "claude", "--", "true")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "ssebench run: give either --agent NAME or a command after '--', not both or neither\n"
    result = run("--task", str(task.file))
    assert result.returncode == 2


def test_run_refuses_a_results_folder_in_use(task, tmp_path: Path):
    results = tmp_path / "used"
    results.mkdir()
    (results / "keep.txt").write_text("mine")
    result = run("--task", str(task.file), "--results", str(results), "--", "true")
    assert result.returncode == 2
    assert result.stderr == f"ssebench run: --results {results}: exists and is not an empty folder\n"
    assert [p.name for p in results.iterdir()] == ["keep.txt"]


def test_run_refuses_a_bad_difficulty_and_a_bad_task(task, tmp_path: Path):
    result = run("--task", str(task.file), "--difficulty", "02", "--results", str(tmp_path / "r"), "--", "true")
    assert (result.returncode, result.stderr) == (
        2,
        "ssebench run: SSE_DIFFICULTY must be an integer from 0 to 4, got '02'\n",
    )
    assert not (tmp_path / "r").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text('id = "x"\n')
    result = run("--task", str(bad), "--", "true")
    assert result.returncode == 2
    assert result.stderr == f"ssebench run: {bad}: key 'source': missing (required)\n"


def write_spec(folder: Path, task_file: Path, **fields: object) -> Path:
    spec = {"task_file": str(task_file), "task_id": "test-task", "level": 2, **fields}
    path = folder / "spec.json"
    path.write_text(json.dumps(spec))
    return path


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--task", "x.toml"], "--task"),
        (["--agent", "claude", "--difficulty", "1"], "--agent, --difficulty"),
        (["--agent-timeout", "5", "--", "true"], "--agent-timeout, -- CMD"),
    ],
)
def test_a_spec_with_the_flags_it_replaces_is_a_usage_error_naming_them(
    task, tmp_path: Path, flags: list[str], named: str
):
    spec = write_spec(tmp_path, task.file, command=["true"])
    result = run("--spec", str(spec), "--results", str(tmp_path / "r"), *flags)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"ssebench run: --spec says what to run: drop {named} (or drop --spec)\n"
    assert not (tmp_path / "r").exists()


def test_a_bad_spec_is_one_line_naming_the_file(task, tmp_path: Path):
    spec = write_spec(tmp_path, task.file, level=9, command=["true"])
    result = run("--spec", str(spec))
    assert (result.returncode, result.stderr) == (
        2,
        f"ssebench run: --spec {spec}: not a run spec: level: Input should be less than or equal to 4\n",
    )
    other = write_spec(tmp_path, task.file, task_id="another", command=["true"])
    result = run("--spec", str(other))
    assert (result.returncode, result.stderr) == (
        2,
        f"ssebench run: --spec {other}: task_id 'another', but {task.file} is task 'test-task'\n",
    )
    assert run().stderr == "ssebench run: give --task FILE or --spec FILE\n"


@pytest.mark.slow
def test_a_spec_runs_and_is_copied_into_the_record(task, tmp_path: Path):
    """What ssebench jobs passes (job, run, attempt, limits) comes back in the record unchanged."""
    fields = {
        "command": [sys.executable, str(AGENT), "--write", "fixed", "yes"],
        "level": 1,
        "agent_timeout": 120.0,
        "job_id": "job-1",
        "run_id": "run-3",
        "attempt": 2,
        "run_timeout": 900.0,
        "lock_hash": "sha256:abc",
    }
    spec = write_spec(tmp_path, task.file, **fields)
    results = tmp_path / "run"
    result = run("--spec", str(spec), "--results", str(results), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads((results / "results.json").read_text())
    assert data["spec"] == {
        **json.loads(spec.read_text()),
        "agent": None,
        "model": None,
        "backend": "process",
        "mcp_timeout": None,
        "ignore_lock": False,
    }
    assert data["difficulty"]["level"] == 1 and data["agent"]["timeout"] == 120


# a bundled agent whose CLI or key is missing: tests/test_preflight.py


@pytest.mark.slow
def test_a_relative_agent_path_is_from_where_run_was_started(task, tmp_path: Path):
    script = tmp_path / "agent.sh"
    script.write_text('#!/bin/sh\necho "ran in $(pwd)"\n')
    script.chmod(0o755)
    results = tmp_path / "run"
    proc = subprocess.run(
        [*RUN, "--task", str(task.file), "--results", str(results), "--", "./agent.sh"],
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "120"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 1, proc.stderr  # ran, did not fix the tree
    assert (results / "agent-stdout.log").read_text() == f"ran in {results / 'tree'}\n"
    assert json.loads((results / "results.json").read_text())["spec"]["command"] == [str(script)]  # as it ran


@pytest.mark.slow
def test_run_a_command_with_a_dialog(task, tmp_path: Path):
    """--dialog with '-- CMD': the command's stream (a replayed real Gemini stream) becomes dialog.jsonl."""
    stream = Path(__file__).parent / "fixtures" / "streams" / "gemini.jsonl"
    results = tmp_path / "run"
    result = run(
        "--task",
        str(task.file),
        "--results",
        str(results),
        "--dialog",
        "gemini",
        "--prompt",
        "Go.",
        "--",
        "cat",
        str(stream),
    )
    assert result.returncode == 1, result.stderr
    lines = [json.loads(x) for x in (results / "dialog.jsonl").read_text().splitlines()]
    # Gemini's own user message is the prompt line: the --prompt text is not added a second time
    assert [(e["type"], e.get("text")) for e in lines[:2]] == [
        ("init", None),
        ("prompt", "Fix the bug. Use test_patch."),
    ]
    assert [e["type"] for e in lines] == ["init", "prompt", "tool", "tool", "message", "complete"]
