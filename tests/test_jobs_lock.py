"""``jobs run`` and the ssebench.lock beside a task: a task whose files differ from it is
refused (each named, nothing started, no job folder), unless ``--ignore-lock``; each
run's spec carries the lock's hash and whether the lock was ignored."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.helpers.daemon import run_ssebench
from tests.helpers.jobs import jobs
from tests.helpers.tasks import make_task


def locked_dataset(root: Path) -> Path:
    task = make_task(root / "ds" / "toggle", task_id="toggle", pocs=["x"], functional="true")
    done = run_ssebench("dataset", "lock", str(root / "ds"), "--no-verify", env={"SSEBENCH_CACHE": str(root / "c")})
    assert done.returncode == 0, done.stderr
    return task.file


def job_file(root: Path, task: Path) -> Path:
    job = root / "job.toml"
    job.write_text(f'tasks = ["{task}"]\nlevels = [2]\n[[agents]]\nname = "noop"\ncommand = ["true"]\n')
    return job


def test_a_task_that_differs_from_its_lock_is_refused(tmp_path: Path) -> None:
    task = locked_dataset(tmp_path)
    (task.parent / "src" / "README").write_text("edited after the lock\n")
    done = jobs("run", job_file(tmp_path, task), "--results", tmp_path / "out")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "ssebench jobs: preflight found 1 problem; nothing was started:\n"
        f"  lock: {task}: differs from the lock {tmp_path / 'ds' / 'ssebench.lock'}: "
        "task 'toggle': changed: toggle/src/README (ssebench dataset verify names every change; "
        "lock again, or run with --ignore-lock)\n"
    )
    assert not (tmp_path / "out").exists()


def test_ignore_lock_runs_it_and_the_specs_say_so(tmp_path: Path) -> None:
    task = locked_dataset(tmp_path)
    lock_hash = "sha256:" + hashlib.sha256((tmp_path / "ds" / "ssebench.lock").read_bytes()).hexdigest()
    (task.parent / "src" / "README").write_text("edited after the lock\n")
    done = jobs("run", job_file(tmp_path, task), "--results", tmp_path / "out", "--ignore-lock")
    assert done.returncode in (0, 1), done.stderr
    assert json.loads((tmp_path / "out" / "job.json").read_text())["runs"]

    from ssebench.dataset.lock import preflight
    from ssebench.jobs import folder as jobfolder

    hashes, refusals = preflight([task], ignore=True)
    assert (hashes, refusals) == ({task: lock_hash}, [])
    from ssebench.jobs.state import read

    document = read(tmp_path / "out")
    job = jobfolder.reopen(tmp_path / "out", document, False)
    state = jobfolder.continue_state(tmp_path / "out", document, job)
    try:
        runs = jobfolder.runs(job, state, "process", hashes, True)
    finally:
        state.close()
    assert [(r.spec.lock_hash, r.spec.ignore_lock) for r in runs.values()] == [(lock_hash, True)]
