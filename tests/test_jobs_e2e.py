"""``ssebench jobs`` on the local backend, for real: 16 runs of ``ssebench run`` (real
daemon, real server, real make/gcc, a real MCP client), their folders and the report.

The job (tests/helpers/jobs.py) is 2 tasks × 2 custom agents × 2 levels × 2 attempts; every
run's result is known, so each folder and each number of the report is checked exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.jobs import jobs, run_ids, write_job

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("job")
    for folder in (base, *list(base.parents)[:2]):  # the daemon's checks (uid 65534) traverse it
        folder.chmod(folder.stat().st_mode | 0o011)
    job_file = write_job(base)
    done = jobs("run", job_file, "--results", base / "out")
    assert done.returncode == 0, done.stderr
    assert done.stderr.endswith(
        f"job {base / 'out'}: 16 runs: 8 checks_failed, 8 passed\nreport: ssebench jobs report {base / 'out'}\n"
    )
    return base / "out"


def expected(run_id: str) -> tuple[str, int]:
    return ("passed", 0) if ".fixer." in run_id else ("checks_failed", 1)


def test_every_run_folder_holds_its_exact_results(job: Path) -> None:
    document = json.loads((job / "job.json").read_text(encoding="utf-8"))
    assert [r["run_id"] for r in document["runs"]] == run_ids()
    for record in document["runs"]:
        status, code = expected(record["run_id"])
        assert (record["state"], record["status"], record["exit_status"], record["tries"]) == (
            "graded",
            status,
            code,
            1,
        )
        assert record["folder"] == f"runs/{record['run_id']}"
        folder = job / record["folder"]
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        assert (results["status"], results["exit_code"], results["passed"]) == (status, code, code == 0)
        assert results["difficulty"]["level"] == record["level"]
        assert results["task"]["id"] == record["task_id"]
        calls = (folder / "server.log").read_text(encoding="utf-8").count("test_patch call ")
        assert calls == (1 if ".fixer." in record["run_id"] else 0)
        assert {"daemon.log", "server.log", "grading.json", "ssebench-run.log"} <= {p.name for p in folder.iterdir()}
    assert not (job / "tries").exists()


def test_the_report_numbers_are_exact(job: Path) -> None:
    done = jobs("report", job, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    cells = {(c["agent"], c["level"]): c for c in report["cells"]}
    assert list(cells) == [("fixer", 0), ("fixer", 2), ("noop", 0), ("noop", 2)]
    for (agent, level), c in cells.items():
        fixer = agent == "fixer"
        assert (c["runs"], c["graded"], c["passed"], c["k"]) == (4, 4, 4 if fixer else 0, 2)
        assert c["pass_rate"] == (1.0 if fixer else 0.0)
        assert c["pass_rate_ci95"] == pytest.approx([0.5101, 1.0] if fixer else [0.0, 0.4899], abs=1e-4)
        assert c["pass_at_k"] == (1.0 if fixer else 0.0)
        assert c["test_patch_calls"] == (4 if fixer else 0)
        assert c["test_patch_endings"] == {  # level 0 runs every check, level 2 withholds the PoCs
            e: (4 if fixer and e == "passed" else 0)
            for e in ("passed", "failed", "no_checks", "internal_failure", "cancelled", "error")
        }
        assert (c["agent_failures"], c["infra_failures"], c["not_run"]) == (0, 0, 0)
        durations = sorted(
            json.loads((job / "runs" / f"{t}.{agent}.L{level}.a{a}" / "results.json").read_text())["duration"]
            for t in ("demo-overflow", "toggle")
            for a in (1, 2)
        )
        assert c["duration_median"] == pytest.approx((durations[1] + durations[2]) / 2)
        assert c["duration_p90"] == pytest.approx(durations[2] + (durations[3] - durations[2]) * 0.7)
    tasks = {t["task"]: t for t in report["tasks"]}
    assert list(tasks) == ["demo-overflow", "toggle"]
    for t in tasks.values():
        assert (t["runs"], t["graded"], t["passed"], t["pass_rate"], t["test_patch_calls"]) == (8, 8, 4, 0.5, 4)
        assert t["pass_at_k"] == 0.5  # the mean over its agent × level groups: 1, 1, 0, 0


def test_resume_of_a_finished_job_runs_nothing(job: Path) -> None:
    before = (job / "runs" / "toggle.noop.L2.a1" / "results.json").read_bytes()
    done = jobs("resume", job)
    assert done.returncode == 0, done.stderr
    assert (job / "runs" / "toggle.noop.L2.a1" / "results.json").read_bytes() == before
    assert "[" not in done.stderr  # no run line: nothing ran
