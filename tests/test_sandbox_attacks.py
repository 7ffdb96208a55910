"""The attack suite of issue 9: the agent's own code, run as a check, tries to learn what
its level withholds, reach the host, or take the daemon down — at every level where
checks run (0-3 through the daemon, 4 through ``ssebench grade``, which runs every
check). Nothing withheld may reach any log, and the daemon must answer the next call.

The attacks are one bash script in the tree (``attack.sh``), run by every check the
level enables; it prints everything it manages to read, so a leak shows up in a log.
The resource attacks (fork bomb, 4 GB allocation, 5 GB of output) are separate tests.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.daemon import run_ssebench
from tests.helpers.tasks import make_task

pytestmark = pytest.mark.timeout(300)

SUPPORT_MARK = "SUPPORT-FILE-IS-READABLE"
LEVEL_CHECKS = {0: ["build", "pocs", "intent", "functional"], 1: ["build", "pocs", "functional"],
                2: ["build", "functional"], 3: ["build"]}


class Listener:
    """A real TCP listener on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    lst = Listener()
    yield lst
    lst.close()


@pytest.fixture
def root_secret() -> Iterator[tuple[Path, str]]:
    """A marker file only root may read, under /root (like a host secret)."""
    mark = "ROOTSECRET-" + secrets.token_hex(8)
    home = Path("/root")
    if not os.access(home, os.W_OK):
        pytest.skip("needs a writable /root (runs as root in CI)")
    path = home / f".ssebench-attack-{secrets.token_hex(4)}"
    path.write_text(mark + "\n")
    path.chmod(0o600)
    yield path, mark
    path.unlink(missing_ok=True)


def _attack_task(root: Path, *, daemon_pid_file: Path, listener: Listener, secret: Path,
                 host_tmp_file: Path) -> tuple[object, dict[str, str]]:
    marks = {name: f"{name.upper()}-{secrets.token_hex(8)}" for name in
             ("poc1", "poc2", "intent", "taskfile", "hosttmp")}
    task_dir = root / "task"
    attack = f"""#!/bin/bash
# Everything this manages to read ends up in the check's log.
T={task_dir}
echo "== task dir by env: $SSE_TASK_DIR"; ls -laR "$SSE_TASK_DIR"
echo "== support files: $(cd "$SSE_TASK_DIR" && find . -mindepth 1 | sort | tr '\\n' ' ')"; cat "$SSE_TASK_DIR"/helper.sh
cat "$SSE_TASK_DIR"/task.toml "$SSE_TASK_DIR"/intent.diff "$SSE_TASK_DIR"/pocs/* 2>&1
echo "== task dir by absolute path"; cat "$T"/task.toml "$T"/intent.diff "$T"/pocs/* 2>&1
find / -xdev \\( -name 'task.toml' -o -name 'intent.diff' -o -name 'poc-*' \\) -not -path '/proc/*' 2>/dev/null | while read f; do echo "found $f"; cat "$f"; done
echo "== symlink to a PoC"; cat tests/cases/zz.in 2>&1
echo "== /proc"; ls /proc | tr '\\n' ' '; echo
cat /proc/1/environ 2>&1 | tr '\\0' '\\n'
DPID=$(cat {daemon_pid_file} 2>/dev/null)
echo "daemon pid from host file: $DPID"
for p in $DPID $(ls /proc | grep -E '^[0-9]+$'); do tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null; echo; tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null; done
kill -9 {os.getpid()} 2>&1; kill -9 $DPID 2>&1
echo "== host secrets"; cat /etc/shadow /etc/gshadow {secret} 2>&1; ls -la /root /home /run /var/run 2>&1
env | sort
echo "== other runs and the daemon workspace"; ls -d /tmp/ssebench-* 2>&1; cat /tmp/ssebench-*/*/logs/* /tmp/ssebench-*/*/*/* 2>&1 | head -c 100000
cat {host_tmp_file} 2>&1
echo "== writes"; echo PWNED > {root / 'task' / 'src' / 'PWNED'} 2>&1; echo PWNED > {host_tmp_file.parent / 'PWNED'} 2>&1
echo PWNED > "$SSE_TASK_DIR/PWNED" 2>&1
echo "== network"; (exec 3<>/dev/tcp/127.0.0.1/{listener.port} && echo CONNECTED) 2>&1
echo "== socket"; ls -la /tmp /run 2>&1
exit 1
"""
    task = make_task(task_dir, pocs=[marks["poc1"], marks["poc2"]], poc_run="bash attack.sh",
                     functional="bash attack.sh", intent="bash attack.sh",
                     intent_diff=f"""diff --git a/intent-added.txt b/intent-added.txt
new file mode 100644
--- /dev/null
+++ b/intent-added.txt
@@ -0,0 +1 @@
+{marks["intent"]}
""", build="bash attack.sh; true", tree_files={"attack.sh": attack, "tests/cases/a.in": "x\n"},
                     description="attack", top_toml=f"# {marks['taskfile']}")
    (task.tree / "tests" / "cases" / "zz.in").symlink_to(task.pocs[0])
    # A support file: every check may read it (and only it) at $SSE_TASK_DIR.
    (task_dir / "helper.sh").write_text(f"echo {SUPPORT_MARK}\n")
    host_tmp_file.write_text(marks["hosttmp"] + "\n")
    return task, marks


def _shadow_lines() -> list[str]:
    try:
        return [line for line in Path("/etc/shadow").read_text().splitlines() if ":" in line and len(line) > 12]
    except OSError:
        return []


def _assert_no_leak(text: str, marks: dict[str, str], secret_mark: str, where: str,
                    check: str | None = None) -> None:
    # What a check may see by design: the PoC step the one PoC it runs (the attack fails
    # the first, so the second never runs), the intent check the tree after git apply.
    allowed = {"pocs": {"poc1"}, "intent": {"intent"}}.get(check or "", set())
    for name, mark in marks.items():
        if name not in allowed:
            assert mark not in text, f"{name} marker leaked into {where}"
    assert secret_mark not in text, f"root-only file leaked into {where}"
    assert "MY_API_KEY" not in text and "ATTACKAPIKEY" not in text, f"daemon env secret leaked into {where}"
    for line in _shadow_lines():
        assert line not in text, f"/etc/shadow leaked into {where}"
    assert "CONNECTED" not in text, f"network reached from {where}"
    assert "diff --git" not in text, f"intent diff leaked into {where}"


def _assert_host_untouched(task, host_tmp: Path, listener: Listener) -> None:  # noqa: ANN001
    assert not (task.tree / "PWNED").exists()
    assert not (host_tmp / "PWNED").exists()
    assert not (task.dir / "PWNED").exists()
    assert listener.accepted == 0


@pytest.mark.slow
@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_attacks_through_the_daemon(level, tmp_path, daemon_factory, listener, root_secret):
    secret, secret_mark = root_secret
    host_tmp = tmp_path / "hosttmp"
    host_tmp.mkdir()
    pid_file = tmp_path / "daemon.pid"
    task, marks = _attack_task(tmp_path, daemon_pid_file=pid_file, listener=listener, secret=secret,
                               host_tmp_file=host_tmp / "visible.txt")
    d = daemon_factory(task.file, difficulty=str(level), env={"MY_API_KEY": "ATTACKAPIKEY"})
    pid_file.write_text(str(d.proc.pid))
    r = d.result()
    assert list(r)[:-1] == LEVEL_CHECKS[level] or set(LEVEL_CHECKS[level]) <= set(r)
    texts = []
    for check in LEVEL_CHECKS[level]:
        if r[check]["has_log"]:
            text = d.log(r["_run"], check)
            texts.append(text)
            _assert_no_leak(text, marks, secret_mark, f"the {check} log", check)
            assert "== network" in text  # the script really ran to the end
            # /sse/task holds the support files only (the PoC step: and the one PoC it runs).
            seen = "./helper.sh ./pocs ./pocs/poc-1 " if check == "pocs" else "./helper.sh "
            assert f"== support files: {seen}\n" in text
            assert f"echo {SUPPORT_MARK}\n" in text
            assert "/sse/task/PWNED: Read-only file system" in text
    # Everything else the daemon wrote is clean too: its own log (stderr).
    _assert_no_leak(d.stderr(), marks, secret_mark, "the daemon's stderr")
    assert d.proc.poll() is None
    served = d.get("/health").json()
    assert served["sandbox"] == "bwrap 0.11.0" and served["status"] == "ok"
    _assert_host_untouched(task, host_tmp, listener)
    # The next call works.
    assert d.result()["build"]["state"] == "passed"
    assert d.proc.poll() is None


@pytest.mark.slow
def test_attacks_at_level_4_through_grade(tmp_path, listener, root_secret):
    # At level 4 the daemon runs no check; final grading runs them all.
    secret, secret_mark = root_secret
    host_tmp = tmp_path / "hosttmp"
    host_tmp.mkdir()
    task, marks = _attack_task(tmp_path, daemon_pid_file=tmp_path / "none.pid", listener=listener,
                               secret=secret, host_tmp_file=host_tmp / "visible.txt")
    done = run_ssebench("grade", "--task", str(task.file), "--json",
                        env={"SSE_DIFFICULTY": "4", "MY_API_KEY": "ATTACKAPIKEY"}, timeout=240)
    assert done.returncode == 1, done.stderr
    _assert_no_leak(done.stdout + done.stderr, marks, secret_mark, "grade's output")
    _assert_host_untouched(task, host_tmp, listener)


# -- resource attacks ---------------------------------------------------------------------------

def _last_bytes(d, run_id: str, check: str, n: int = 4096) -> bytes:  # noqa: ANN001
    tail = b""
    with d.client(timeout=120) as c, c.stream("GET", f"/runs/{run_id}/logs/{check}") as resp:
        assert resp.status_code == 200
        for chunk in resp.iter_bytes():
            tail = (tail + chunk)[-n:]
    return tail


@pytest.mark.slow
def test_fork_bomb_fails_the_check_and_the_daemon_lives_on(task_factory, daemon_factory):
    t = task_factory(build=":(){ :|:& };:; sleep 60", functional="true")
    d = daemon_factory(t.file, difficulty="3")
    r = d.result()
    assert r["build"]["state"] == "failed"
    assert d.log(r["_run"], "build").endswith(
        "[ssebench] process limit reached (1024 processes): the command and every process it "
        "started were killed.\n")
    assert d.proc.poll() is None
    assert d.get("/health").json()["status"] == "ok"


@pytest.mark.slow
def test_4_gb_allocation_fails_the_check_and_the_daemon_lives_on(task_factory, daemon_factory):
    t = task_factory(build="python3 -c \"x = b'x' * (4 << 30); print('allocated')\"")
    d = daemon_factory(t.file, difficulty="3")
    r = d.result()
    assert r["build"]["state"] == "failed"
    log = d.log(r["_run"], "build")
    assert "allocated" not in log
    assert log.endswith("[ssebench] memory limit reached (4 GiB): the command and every process it "
                        "started were killed.\n")
    assert d.proc.poll() is None
    t2 = d.result()
    assert t2["build"]["state"] == "failed"  # the same bomb again: the daemon still answers


@pytest.mark.slow
def test_5_gb_of_output_is_cut_at_the_limit(task_factory, daemon_factory):
    # The default limit (1 GiB): the check is killed near it, the log is cut to it.
    t = task_factory(build="yes 0123456789abcdef0123456789abcdef | head -c 5G", functional="true")
    d = daemon_factory(t.file, difficulty="2")
    r = d.result()
    note = ("[ssebench] output limit reached: the check wrote more than 1 GiB of output; it was "
            "killed and its log was cut here.\n")
    assert r["build"]["state"] == "failed"
    assert r["build"]["log_bytes"] <= (1 << 30) + 2 + len(note)
    assert _last_bytes(d, r["_run"], "build").endswith(note.encode())
    assert r["functional"]["state"] == "not_run"
    assert d.result(["build"])["build"]["state"] == "failed"  # and the daemon answers again


@pytest.mark.slow
def test_limits_without_cgroups_watchdog(task_factory, daemon_factory):
    # Where no cgroup is writable (most containers) a watchdog enforces pids and memory.
    t = task_factory(build="for i in $(seq 300); do sleep 30 & done; wait")
    d = daemon_factory(t.file, difficulty="3", env={"SSE_SANDBOX_CGROUP": "off"}, args=("--pids-limit", "100"))
    r = d.result()
    assert r["build"]["state"] == "failed"
    assert d.log(r["_run"], "build").endswith(
        "[ssebench] process limit reached (100 processes): the command and every process it "
        "started were killed.\n")
    t2 = task_factory(build="python3 -c \"import time; x = b'x' * (1 << 30); time.sleep(30)\"")
    d2 = daemon_factory(t2.file, difficulty="3", env={"SSE_SANDBOX_CGROUP": "off"},
                        args=("--memory-limit", "256M"))
    r2 = d2.result()
    assert r2["build"]["state"] == "failed"
    assert d2.log(r2["_run"], "build").endswith(
        "[ssebench] memory limit reached (256 MiB): the command and every process it started were "
        "killed.\n")
    assert d2.get("/health").json()["status"] == "ok"


@pytest.mark.slow
def test_fork_bomb_under_the_watchdog(task_factory, tmp_path):
    # No cgroup for the checks (as in most containers): the watchdog must kill a real fork
    # bomb and fail the check with the limit line. A pids cgroup around `ssebench grade` is
    # the test's safety net for the host: the watchdog is a poll, and a bomb can overshoot
    # it by thousands before it is killed (it once reached this net in a clean CI run), so
    # the test does not claim the net is never needed (docs/security.md says so).
    import subprocess
    import sys

    net = Path("/sys/fs/cgroup/pids") / f"ssebench-test-{secrets.token_hex(4)}"
    try:
        net.mkdir()
        (net / "pids.max").write_text("6000")
    except OSError:
        pytest.skip("needs a writable cgroup v1 pids hierarchy for the safety net")
    try:
        t = task_factory(build=":(){ :|:& };:; sleep 60", functional=None, pocs=None)
        script = (f"echo $$ > {net}/cgroup.procs; exec {sys.executable} -c "
                  "'from ssebench.cli import main; main()' grade --task " + str(t.file))
        done = subprocess.run(["sh", "-c", script], env={**os.environ, "SSE_SANDBOX_CGROUP": "off"},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stderr
        assert done.stdout.rstrip().endswith(
            "[ssebench] process limit reached (1024 processes): the command and every process it "
            "started were killed.")
        # The bomb is gone, not only the check: nothing is left in the net once grade exited.
        left = (net / "cgroup.procs").read_text().split()
        for _ in range(100):
            if not left:
                break
            time.sleep(0.1)
            left = (net / "cgroup.procs").read_text().split()
        assert left == []
    finally:
        for _ in range(100):
            try:
                net.rmdir()
                break
            except OSError:
                time.sleep(0.1)
