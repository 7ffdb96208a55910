"""A root daemon's checks run as uid 65534: the folders bwrap opens as that uid must be in its reach.

Issue 31: a CI script's ``TMPDIR=$(mktemp -d)`` (0700, root's) made ``demo``, ``up``, ``grade``
and ``run`` refuse to start. They now put the sandbox's folders (workspace, minimal /etc,
bwrap copy, probe) in the first system temp folder that uid can reach, private as before.
Each command runs in a mount namespace of its own with a fresh tmpfs on /tmp, so what it
leaves there is seen exactly, whatever else runs on the machine. Also here:
``SSE_SANDBOX_BIND`` naming a folder out of that uid's reach is one line naming the folder
that denies it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import DEMO_TASK, REPO
from tests.helpers.daemon import SSEBENCH, run_ssebench, running_daemon, short_tempdir
from tests.test_server_support import call_sync

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(os.geteuid() != 0, reason="applies to a root daemon (its checks run as uid 65534)"),
    pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux) for a private /tmp"),
]

# Run inside `unshare --mount`: a fresh /tmp (and /var/tmp when asked), TMPDIR=/tmp/ci (0700,
# as `mktemp -d` makes it), the command; then what is left in /tmp, as one JSON line.
DRIVER = r"""
import json, os, signal, subprocess, sys
spec = json.loads(sys.argv[1])
keep = os.open(spec["keep"], os.O_PATH)  # the checkout: a clone under /tmp stays reachable
for where, mode in spec["mounts"]:
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"mode={mode}", "tmpfs", where], check=True)
    if spec["keep"].startswith(where.rstrip("/") + "/"):
        os.makedirs(spec["keep"], mode=0o755)
        subprocess.run(["mount", "--no-canonicalize", "--bind", f"/proc/{os.getpid()}/fd/{keep}", spec["keep"]], check=True)
os.mkdir("/tmp/ci", 0o700)
env = {**os.environ, "TMPDIR": "/tmp/ci", "MCP_LOG_DIR": "/tmp/logs", **spec["env"]}
proc = subprocess.Popen(spec["argv"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        stdin=subprocess.DEVNULL)
print(json.dumps({"pid": proc.pid}), flush=True)
out, err = proc.communicate()
results = "/tmp/results/results.json"
print(json.dumps({
    "status": proc.returncode, "stdout": out, "stderr": err,
    "tmp": sorted(os.listdir("/tmp")), "tmpdir": sorted(os.listdir("/tmp/ci")),
    "run_status": json.load(open(results))["status"] if os.path.exists(results) else None,
}), flush=True)
"""

# What a command may leave in /tmp: the TMPDIR it was given (empty), the log folder it was
# told to use, the results folder it was told to write.
ALLOWED = {"ci", "logs", "results"}
#: a checkout cloned under /tmp is bound back into the private /tmp (its first folder there)
if REPO.is_relative_to("/tmp"):
    ALLOWED.add(REPO.relative_to("/tmp").parts[0])


def in_private_tmp(*args: str, env: dict[str, str] | None = None, mounts: tuple = (("/tmp", "1777"),)):
    """Start ``ssebench ARGS`` in a mount namespace with its own /tmp; the driver's process."""
    spec = {"argv": [SSEBENCH, *args], "env": env or {}, "mounts": list(mounts), "keep": str(REPO)}
    return subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "--", sys.executable, "-c", DRIVER, json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def finished(driver: subprocess.Popen[str], timeout: float = 540) -> dict:
    out, err = driver.communicate(timeout=timeout)
    assert driver.returncode == 0, err
    return json.loads(out.splitlines()[-1])


def assert_left_nothing(done: dict) -> None:
    assert done["tmpdir"] == [], "left in TMPDIR"
    assert set(done["tmp"]) <= ALLOWED, f"left in /tmp: {sorted(set(done['tmp']) - ALLOWED)}"


@pytest.mark.slow
def test_grade_with_a_private_tmpdir() -> None:
    done = finished(in_private_tmp("grade", "--task", str(DEMO_TASK)))
    assert (done["status"], done["stderr"]) == (1, ""), done["stderr"]
    assert done["stdout"].startswith(
        f"Grade of task 'demo-overflow' on {DEMO_TASK.parent / 'src'}: FAILED (2 of 4 checks failed)\n"
    )
    assert_left_nothing(done)


@pytest.mark.slow
def test_run_with_a_private_tmpdir() -> None:
    done = finished(in_private_tmp("run", "--task", str(DEMO_TASK), "--results", "/tmp/results", "--", "true"))
    assert done["status"] == 1, done["stderr"] + done["stdout"]
    assert "cannot sandbox" not in done["stdout"] + done["stderr"]
    assert done["run_status"] == "checks_failed"  # graded: the agent changed nothing
    assert_left_nothing(done)


@pytest.mark.slow
def test_demo_with_a_private_tmpdir() -> None:
    done = finished(in_private_tmp("demo", "--levels", "0"))
    assert (done["status"], done["stderr"]) == (0, ""), done["stderr"]
    assert "test_patch result: every check passed." in done["stdout"].splitlines()
    assert_left_nothing(done)


@pytest.mark.slow
def test_up_with_a_private_tmpdir_keeps_its_folders_private() -> None:
    from ssebench.server.stack import free_port

    port = free_port()
    driver = in_private_tmp("up", "--task", str(DEMO_TASK), "--port", str(port), "--difficulty", "3")
    try:
        assert driver.stdout is not None
        pid = json.loads(driver.stdout.readline())["pid"]
        text = _call_when_up(f"http://127.0.0.1:{port}", driver)
        assert text.startswith("test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n")
        # The namespace's /tmp, seen through the process: the sandbox's folders are root's,
        # searchable (0711) where bwrap must pass, listable by no one else.
        tmp = Path(f"/proc/{pid}/root/tmp")
        ours = {e.name: e.stat() for e in tmp.iterdir() if e.name.startswith("ssebench-")}
        assert {n.rsplit("-", 1)[0] for n in ours} == {"ssebench-daemon", "ssebench-etc"}, ours
        for name, st in ours.items():
            assert (st.st_uid, st.st_mode & 0o777) == (0, 0o711), name
        os.kill(pid, signal.SIGINT)
        done = finished(driver)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
    assert done["status"] == 0, done["stderr"]
    assert "(difficulty 3, BUILD_ONLY); Ctrl-C stops." in done["stdout"]
    assert_left_nothing(done)


def _call_when_up(base: str, driver: subprocess.Popen[str], timeout: float = 120) -> str:
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        assert driver.poll() is None, driver.communicate()
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                return call_sync(base + "/mcp").text
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "ssebench up did not answer"
        time.sleep(0.1)


def test_no_temp_folder_in_reach_is_one_line() -> None:
    """/tmp and /var/tmp private too: nothing the checks' uid can reach; refused, naming why."""
    done = finished(
        in_private_tmp("grade", "--task", str(DEMO_TASK), mounts=(("/tmp", "0700"), ("/var/tmp", "0700"))), 120
    )
    assert (done["status"], done["stdout"]) == (2, "")
    assert done["stderr"] == (
        "ssebench grade: cannot sandbox checks: the daemon is root, so checks run as uid 65534 (SSE_SANDBOX_UID), "
        "which cannot traverse /tmp to reach its workspace in /tmp/ci (nor reach /tmp or /var/tmp): "
        "allow it (chmod o+x), or set TMPDIR to a folder it can reach\n"
    )
    assert_left_nothing(done)


def test_a_daemon_with_a_private_tmpdir_works_in_tmp(task_factory) -> None:
    """The daemon's workspace goes to /tmp (0711, its owner record naming it); TMPDIR stays empty."""
    t = task_factory(pocs=["fixed"])
    private = short_tempdir()  # 0700, root's: as TMPDIR=$(mktemp -d)
    try:
        with running_daemon(t.file, env={"TMPDIR": str(private)}) as d:
            assert {name: c["state"] for name, c in d.result().items() if name != "_run"} == {
                "build": "passed",
                "functional": "passed",
            }
            mine = [w for w in Path("/tmp").glob("ssebench-daemon-*") if _owner_pid(w) == d.proc.pid]
            assert len(mine) == 1 and mine[0].stat().st_mode & 0o777 == 0o711
            assert list(private.iterdir()) == []
        assert not mine[0].exists()
    finally:
        shutil.rmtree(private)


def _owner_pid(workspace: Path) -> int | None:
    try:
        return json.loads((workspace / "owner.json").read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


@pytest.mark.parametrize("command", ["daemon", "grade"])
def test_an_extra_bind_out_of_reach_names_the_folder_that_denies_it(tmp_path: Path, command: str) -> None:
    private = tmp_path / "root"  # like /root: 0700
    private.mkdir(mode=0o700)
    pyenv = private / ".pyenv"
    pyenv.mkdir()
    t = _task(tmp_path)
    sockets = short_tempdir()
    args = ["--socket", str(sockets / "d.sock")] if command == "daemon" else []
    done = run_ssebench(command, "--task", str(t), *args, env={"SSE_SANDBOX_BIND": f"/usr/share:{pyenv}"})
    shutil.rmtree(sockets)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench {command}: SSE_SANDBOX_BIND: {pyenv} is out of reach of uid 65534, which runs the checks: "
        f"{private} (drwx------, owner root) denies it search permission; bind a folder outside it, "
        f"or allow that (chmod o+x {private})\n"
    )
    missing = tmp_path / "nowhere"
    done = run_ssebench("grade", "--task", str(t), env={"SSE_SANDBOX_BIND": str(missing)})
    assert (done.returncode, done.stderr) == (2, f"ssebench grade: SSE_SANDBOX_BIND: {missing} does not exist\n")


def _task(tmp_path: Path) -> Path:
    from tests.helpers.tasks import make_task

    return make_task(tmp_path / "task").file


def test_a_bwrap_out_of_reach_is_copied_where_it_is_reachable(tmp_path: Path) -> None:
    """A bwrap (not the bundled layout) in a folder uid 65534 cannot search: copied into a
    0755 holder it can reach, then probed as usual (here: a bwrap that cannot make namespaces)."""
    from ssebench.daemon.sandbox_setup import FIX_HINT

    private = tmp_path / "root"
    private.mkdir(mode=0o700)
    fake = private / "bwrap"
    fake.write_text(
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.11.0'; exit 0; }\n"
        "echo 'bwrap: No permissions to create a new namespace' >&2; exit 1\n"
    )
    fake.chmod(0o755)
    done = run_ssebench("grade", "--task", str(_task(tmp_path)), env={"SSE_BWRAP": str(fake)})
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench grade: cannot sandbox checks (bwrap: No permissions to create a new namespace): {FIX_HINT}\n"
    )
