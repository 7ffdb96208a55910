"""``ssebench task verify --docker`` and ``dataset lock|verify --docker`` on a real engine:
the demo verified in the task image ``run --docker`` builds (the real daemon runner and
sandbox inside), the table and ``--json`` users see, the image's digest as the engine says
it, the digest carried into the lock; the usage errors; nothing left behind, also after
Ctrl-C. The engine and the base image come as tests/e2e/test_docker.py gets them (skipped,
saying why, where no engine can start).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ssebench import settings
from ssebench.taskverifydocker import VERIFY_LABEL
from tests.e2e.test_docker import base_image, docker_host  # noqa: F401 (the shared fixtures)
from tests.helpers.daemon import SSEBENCH, run_ssebench
from tests.test_task_verify import timeless

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
HEADER = "  tree     check             PoC                 expected  got     time"
UNFIXED_ROWS = [
    "  unfixed  build             -                   passed    passed  T s",
    "  unfixed  PoCs              pocs/long-name      failed    failed  T s",
    "  unfixed  PoCs              pocs/sixteen-chars  failed    failed  T s",
    "  unfixed  intent tests      -                   failed    failed  T s",
    "  unfixed  functional tests  -                   passed    passed  T s",
]
FIXED_ROWS = [
    "  fixed    build             -                   passed    passed  T s",
    "  fixed    PoCs              pocs/long-name      passed    passed  T s",
    "  fixed    PoCs              pocs/sixteen-chars  passed    passed  T s",
    "  fixed    intent tests      -                   passed    passed  T s",
    "  fixed    functional tests  -                   passed    passed  T s",
]

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("docker")]


@pytest.fixture(scope="module")
def task_image(base_image: str) -> tuple[str, str]:  # noqa: F811
    """The task image (tag, image ID) this checkout builds, built here once (as run --docker)."""
    from ssebench.container.engine import DockerEngine
    from ssebench.container.images import build_task_image

    engine = DockerEngine.locate()
    tag = build_task_image(engine, base_image)
    return tag, engine.docker("image", "inspect", "--format", "{{.Id}}", tag).stdout.strip()


@pytest.fixture
def env(tmp_path: Path, base_image: str) -> dict[str, str]:  # noqa: F811
    """A private verdict cache (sharing the dependency wheels the image is built from) and
    temp folder: what a run leaves there is checked."""
    cache = tmp_path / "cache"
    cache.mkdir()
    wheels = settings.cache_dir("wheels")
    wheels.mkdir(parents=True, exist_ok=True)
    (cache / "wheels").symlink_to(wheels)
    (tmp_path / "tmp").mkdir()
    return {"SSEBENCH_CACHE": str(cache), "TMPDIR": str(tmp_path / "tmp"), "SSEBENCH_BASE_IMAGE": base_image}


def demo_copy(root: Path) -> tuple[Path, Path]:
    """The demo and its fix beside it, in a dataset folder of their own."""
    ds = root / "ds"
    shutil.copytree(EXAMPLES / "demo-overflow", ds / "demo-overflow")
    shutil.copy(EXAMPLES / "demo-overflow.fix.patch", ds / "demo-overflow.fix.patch")
    return ds / "demo-overflow", ds / "demo-overflow.fix.patch"


def ssebench(*args: str | Path, env: dict[str, str]) -> tuple[int, str, str]:
    done = run_ssebench(*map(str, args), env=env, timeout=600)
    return done.returncode, done.stdout, done.stderr


def containers(tag: str) -> list[str]:
    listed = subprocess.run(
        ["docker", "ps", "--all", "--quiet", "--filter", f"ancestor={tag}", "--filter", f"label={VERIFY_LABEL}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return listed.stdout.split()


def test_the_demo_with_its_fix_is_sound_in_the_task_image(
    tmp_path: Path, env: dict[str, str], task_image: tuple[str, str]
) -> None:
    tag, digest = task_image
    task, fix = demo_copy(tmp_path)
    code, out, err = ssebench("task", "verify", task, "--fix", fix, "--docker", env=env)
    assert (code, err) == (0, ""), out
    assert timeless(out).splitlines() == [
        f"Verify of task 'demo-overflow' ({task / 'task.toml'}), with fix {fix}, 1 run of each check, "
        f"in image {digest}:",
        HEADER,
        *UNFIXED_ROWS,
        *FIXED_ROWS,
        "Verdict: sound",
    ]
    assert containers(tag) == [] and list((tmp_path / "tmp").iterdir()) == []


def test_json_carries_the_image_id_and_the_lock_records_it(
    tmp_path: Path, env: dict[str, str], task_image: tuple[str, str]
) -> None:
    tag, digest = task_image
    task, fix = demo_copy(tmp_path)
    code, out, err = ssebench("task", "verify", task, "--fix", fix, "--docker", "--json", env=env)
    assert (code, err) == (0, "")
    verdict = json.loads(out)
    assert verdict["image"] == digest and digest.startswith("sha256:")
    assert (verdict["file"], verdict["fix"], verdict["sound"]) == (str(task / "task.toml"), str(fix), True)
    assert [(e["tree"], e["check"], e["poc"], e["got"]) for e in verdict["expectations"]][:3] == [
        ("unfixed", "build", None, ["passed"]),
        ("unfixed", "pocs", "pocs/long-name", ["failed"]),
        ("unfixed", "pocs", "pocs/sixteen-chars", ["failed"]),
    ]
    # dataset lock --docker reuses that verdict (made in this image, for these bytes).
    code, out, err = ssebench("dataset", "lock", task.parent, "--docker", env=env)
    assert (code, err) == (0, ""), out
    assert "demo-overflow: sound at " in out and "(cached)" in out
    lock = json.loads((task.parent / "ssebench.lock").read_text())
    assert lock["tasks"][0]["image"] == digest
    assert ssebench("dataset", "verify", task.parent / "ssebench.lock", "--docker", env=env)[0] == 0
    # A lock made in another image: dataset verify --docker names it; without --docker files alone count.
    lock["tasks"][0]["image"] = "sha256:" + "0" * 64
    (task.parent / "ssebench.lock").write_text(json.dumps(lock))
    code, out, err = ssebench("dataset", "verify", task.parent / "ssebench.lock", "--docker", env=env)
    assert (code, err) == (1, "")
    assert out.splitlines()[1:] == [
        f"  task 'demo-overflow': verified in image sha256:{'0' * 64}; the task image is now {digest} "
        "(ssebench dataset lock --docker verifies it there)"
    ]
    assert ssebench("dataset", "verify", task.parent / "ssebench.lock", env=env)[0] == 0
    assert containers(tag) == [] and list((tmp_path / "tmp").iterdir()) == []


def test_without_the_fix_every_poc_still_triggers(
    tmp_path: Path, env: dict[str, str], task_image: tuple[str, str]
) -> None:
    task, _ = demo_copy(tmp_path)
    code, out, err = ssebench("task", "verify", task, "--docker", env=env)
    assert (code, err) == (0, "")
    assert timeless(out).splitlines()[1:] == [
        HEADER,
        *UNFIXED_ROWS,
        "Verdict: sound",
        "Warnings:",
        "  - no --fix given: only the unfixed tree was verified",
    ]


def test_no_engine_and_no_base_image_are_one_line_exit_2(tmp_path: Path, env: dict[str, str]) -> None:
    task, fix = demo_copy(tmp_path)
    code, out, err = ssebench(
        "task", "verify", task, "--docker", env={**env, "DOCKER_HOST": "unix:///nonexistent.sock"}
    )
    assert (code, out) == (2, "")
    assert err.startswith("ssebench task verify: docker: no Docker engine answers at unix:///nonexistent.sock; ")
    assert err.count("\n") == 1
    code, out, err = ssebench("task", "verify", task, "--docker", env={**env, "SSEBENCH_BASE_IMAGE": "ssebench-none:0"})
    assert (code, out) == (2, "")
    assert err.startswith(
        "ssebench task verify: docker: the base image ssebench-none:0 is not in the Docker engine at "
    )
    assert err.count("\n") == 1
    code, out, err = ssebench("task", "verify", task, "--docker", "--no-sandbox", env=env)
    assert (code, err) == (
        2,
        "ssebench task verify: --no-sandbox: --docker verifies in the sandbox the task image gives the daemon\n",
    )
    code, out, err = ssebench(
        "dataset", "lock", task.parent, "--docker", env={**env, "SSEBENCH_BASE_IMAGE": "ssebench-none:0"}
    )
    assert (code, out) == (2, "") and err.startswith("ssebench dataset: docker: the base image ssebench-none:0 ")
    assert not (task.parent / "ssebench.lock").exists()


def test_ctrl_c_leaves_no_container_and_no_temp_folder(
    tmp_path: Path, env: dict[str, str], task_image: tuple[str, str]
) -> None:
    tag, _ = task_image
    task, fix = demo_copy(tmp_path)
    process = subprocess.Popen(
        [SSEBENCH, "task", "verify", str(task), "--fix", str(fix), "--docker"],
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while not containers(tag):  # a condition with a deadline: the container is up
            assert process.poll() is None, "verify ended before its container started"
            assert time.monotonic() < deadline, "no verify container started in 300 s"
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=120) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert containers(tag) == []
    assert list((tmp_path / "tmp").iterdir()) == []
