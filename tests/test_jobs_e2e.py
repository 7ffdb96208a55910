"""``ssebench jobs`` on the local backend, for real: 16 runs of ``ssebench run`` (real
daemon, real server, real make/gcc, a real MCP client), their folders and the report.

The job (tests/helpers/jobs.py) is 2 tasks × 2 custom agents × 2 levels × 2 attempts; every
run's result is known, so each folder and each number of the report is checked exactly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.jobs import assert_report, assert_run_folders, jobs, write_job

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


def test_every_run_folder_holds_its_exact_results(job: Path) -> None:
    assert_run_folders(job)


def test_the_report_numbers_are_exact(job: Path) -> None:
    assert_report(job)


def test_resume_of_a_finished_job_runs_nothing(job: Path) -> None:
    before = (job / "runs" / "toggle.noop.L2.a1" / "results.json").read_bytes()
    done = jobs("resume", job)
    assert done.returncode == 0, done.stderr
    assert (job / "runs" / "toggle.noop.L2.a1" / "results.json").read_bytes() == before
    assert done.stderr == f"nothing to resume: 16/16 runs finished (report: ssebench jobs report {job})\n"
