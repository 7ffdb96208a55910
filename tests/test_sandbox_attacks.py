"""The attack suite of issue 9: the agent's own code, run as a check, tries to learn what
its level withholds, reach the host, or take the daemon down — at every level where
checks run (0-3 through the daemon, 4 through ``ssebench grade``, which runs every
check). Nothing withheld may reach any log, and the daemon must answer the next call.

The attacks are one bash script in the tree (``attack.sh``), run by every check the
level enables; it prints everything it manages to read, so a leak shows up in a log.
The resource attacks (fork bomb, 4 GB allocation, 5 GB of output) are separate tests.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.daemon import run_ssebench, short_tempdir
from tests.helpers.tasks import make_task

pytestmark = pytest.mark.timeout(300)

SUPPORT_MARK = "SUPPORT-FILE-IS-READABLE"
LEVEL_CHECKS = {
    0: ["build", "pocs", "intent", "functional"],
    1: ["build", "pocs", "functional"],
    2: ["build", "functional"],
    3: ["build"],
}


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


def _attack_task(
    root: Path, *, daemon_pid_file: Path, listener: Listener, secret: Path, host_tmp_file: Path
) -> tuple[object, dict[str, str]]:
    marks = {
        name: f"{name.upper()}-{secrets.token_hex(8)}" for name in ("poc1", "poc2", "intent", "taskfile", "hosttmp")
    }
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
echo "== writes"; echo PWNED > {root / "task" / "src" / "PWNED"} 2>&1; echo PWNED > {host_tmp_file.parent / "PWNED"} 2>&1
echo PWNED > "$SSE_TASK_DIR/PWNED" 2>&1
echo "== network"; (exec 3<>/dev/tcp/127.0.0.1/{listener.port} && echo CONNECTED) 2>&1
echo "== socket"; ls -la /tmp /run 2>&1
exit 1
"""
    task = make_task(
        task_dir,
        pocs=[marks["poc1"], marks["poc2"]],
        poc_run="bash attack.sh",
        functional="bash attack.sh",
        intent="bash attack.sh",
        intent_diff=f"""diff --git a/intent-added.txt b/intent-added.txt
new file mode 100644
--- /dev/null
+++ b/intent-added.txt
@@ -0,0 +1 @@
+{marks["intent"]}
""",
        build="bash attack.sh; true",
        tree_files={"attack.sh": attack, "tests/cases/a.in": "x\n"},
        description="attack",
        top_toml=f"# {marks['taskfile']}",
    )
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


def _assert_no_leak(text: str, marks: dict[str, str], secret_mark: str, where: str, check: str | None = None) -> None:
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


def _assert_host_untouched(task, host_tmp: Path, listener: Listener) -> None:
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
    task, marks = _attack_task(
        tmp_path, daemon_pid_file=pid_file, listener=listener, secret=secret, host_tmp_file=host_tmp / "visible.txt"
    )
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
    task, marks = _attack_task(
        tmp_path,
        daemon_pid_file=tmp_path / "none.pid",
        listener=listener,
        secret=secret,
        host_tmp_file=host_tmp / "visible.txt",
    )
    done = run_ssebench(
        "grade",
        "--task",
        str(task.file),
        "--json",
        env={"SSE_DIFFICULTY": "4", "MY_API_KEY": "ATTACKAPIKEY"},
        timeout=240,
    )
    assert done.returncode == 1, done.stderr
    _assert_no_leak(done.stdout + done.stderr, marks, secret_mark, "grade's output")
    _assert_host_untouched(task, host_tmp, listener)


# -- resource attacks ---------------------------------------------------------------------------


def _last_bytes(d, run_id: str, check: str, n: int = 4096) -> bytes:
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
        "[ssebench] process limit reached (1024 processes): the command and every process it started were killed.\n"
    )
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
    assert log.endswith(
        "[ssebench] memory limit reached (4 GiB): the command and every process it started were killed.\n"
    )
    assert d.proc.poll() is None
    t2 = d.result()
    assert t2["build"]["state"] == "failed"  # the same bomb again: the daemon still answers


@pytest.mark.slow
def test_5_gb_of_output_is_cut_at_the_limit(task_factory, daemon_factory):
    # The default limit (1 GiB): the check is killed near it, the log is cut to it.
    t = task_factory(build="yes 0123456789abcdef0123456789abcdef | head -c 5G", functional="true")
    d = daemon_factory(t.file, difficulty="2")
    r = d.result()
    note = (
        "[ssebench] output limit reached: the check wrote more than 1 GiB of output; it was "
        "killed and its log was cut here.\n"
    )
    assert r["build"]["state"] == "failed"
    assert r["build"]["log_bytes"] <= (1 << 30) + 2 + len(note)
    assert _last_bytes(d, r["_run"], "build").endswith(note.encode())
    assert r["functional"]["state"] == "not_run"
    assert d.result(["build"])["build"]["state"] == "failed"  # and the daemon answers again


@pytest.mark.slow
# The watchdog counts every process in /proc (docs/security.md): the fork bomb below,
# run beside this test on another worker, made its 1 GiB check a process-limit kill in
# CI. One group: one worker, one after the other.
@pytest.mark.xdist_group("watchdog")
def test_limits_without_cgroups_watchdog(task_factory, daemon_factory):
    # Where no cgroup is writable (most containers) a watchdog enforces pids and memory.
    t = task_factory(build="for i in $(seq 300); do sleep 30 & done; wait")
    d = daemon_factory(t.file, difficulty="3", env={"SSE_SANDBOX_CGROUP": "off"}, args=("--pids-limit", "100"))
    r = d.result()
    assert r["build"]["state"] == "failed"
    assert d.log(r["_run"], "build").endswith(
        "[ssebench] process limit reached (100 processes): the command and every process it started were killed.\n"
    )
    t2 = task_factory(build="python3 -c \"import time; x = b'x' * (1 << 30); time.sleep(30)\"")
    d2 = daemon_factory(t2.file, difficulty="3", env={"SSE_SANDBOX_CGROUP": "off"}, args=("--memory-limit", "256M"))
    r2 = d2.result()
    assert r2["build"]["state"] == "failed"
    assert d2.log(r2["_run"], "build").endswith(
        "[ssebench] memory limit reached (256 MiB): the command and every process it started were killed.\n"
    )
    assert d2.get("/health").json()["status"] == "ok"


@pytest.mark.slow
@pytest.mark.xdist_group("watchdog")
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
        script = (
            f"echo $$ > {net}/cgroup.procs; exec {sys.executable} -c "
            "'from ssebench.cli import main; main()' grade --task " + str(t.file)
        )
        done = subprocess.run(
            ["sh", "-c", script],
            env={**os.environ, "SSE_SANDBOX_CGROUP": "off"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, done.stderr
        assert done.stdout.rstrip().endswith(
            "[ssebench] process limit reached (1024 processes): the command and every process it started were killed."
        )
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


# -- issue 18: what a check sees is decided by mounts; nothing survives a check; no uid 0 ----


@pytest.fixture
def usr_share() -> Iterator[Path]:
    """A folder under /usr/local/share (every sandbox binds /usr), removed afterwards."""
    base = Path("/usr/local/share")
    if not os.access(base, os.W_OK):
        pytest.skip("needs a writable /usr/local/share (runs as root in CI)")
    path = base / f"ssebench-test-{secrets.token_hex(4)}"
    path.mkdir(mode=0o755)
    yield path
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _assert_clean(texts: list[str], marks: dict[str, str], secret_mark: str, checks: list[str]) -> None:
    for check, text in zip(checks, texts, strict=False):
        _assert_no_leak(text, marks, secret_mark, f"the {check} log", check)


@pytest.mark.slow
@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_task_folder_under_usr_is_masked_through_the_daemon(
    level, tmp_path, usr_share, daemon_factory, listener, root_secret
):
    # /usr is bound into every sandbox: a task folder below it (a task under
    # /usr/local/share, the demo task of a wheel installed into a venv under /usr/local)
    # is masked by an empty read-only tmpfs; the attack reads it by its absolute path.
    secret, secret_mark = root_secret
    host_tmp = tmp_path / "hosttmp"
    host_tmp.mkdir()
    task, marks = _attack_task(
        usr_share,
        daemon_pid_file=tmp_path / "none.pid",
        listener=listener,
        secret=secret,
        host_tmp_file=host_tmp / "visible.txt",
    )
    d = daemon_factory(task.file, difficulty=str(level))
    r = d.result()
    texts = [d.log(r["_run"], c) for c in LEVEL_CHECKS[level] if r[c]["has_log"]]
    assert texts and all("== network" in t for t in texts)  # the script ran to the end
    assert "No such file or directory" in texts[0]  # the task folder by its path: empty
    _assert_clean(texts, marks, secret_mark, [c for c in LEVEL_CHECKS[level] if r[c]["has_log"]])
    _assert_no_leak(d.stderr(), marks, secret_mark, "the daemon's stderr")
    _assert_host_untouched(task, host_tmp, listener)
    assert sorted(p.name for p in task.dir.iterdir()) == ["helper.sh", "intent.diff", "pocs", "src", "task.toml"]


@pytest.mark.slow
def test_task_folder_under_usr_is_masked_in_grade(usr_share):
    # grade shows the tail of a failing check's log: the attack prints little, then fails.
    mark = "USRPOC-" + secrets.token_hex(8)
    task_dir = usr_share / "task"
    build = (
        f"cat {task_dir}/pocs/* {task_dir}/task.toml {task_dir}/intent.diff 2>&1; "
        f"ls -la {usr_share} {task_dir} 2>&1; find / -xdev -name 'poc-*' 2>/dev/null; false"
    )
    task = make_task(
        task_dir, build=build, pocs=[mark], intent="true", functional="true", top_toml=f"# TASKFILE-{mark}"
    )
    done = run_ssebench("grade", "--task", str(task.file), "--json", env={"SSE_DIFFICULTY": "4"}, timeout=240)
    assert done.returncode == 1, done.stderr
    assert f"'{task_dir}/pocs/*': No such file or directory" in done.stdout
    assert mark not in done.stdout + done.stderr and "diff --git" not in done.stdout
    assert sorted(p.name for p in task.dir.iterdir()) == ["intent.diff", "pocs", "src", "task.toml"]


def _opt_task(root: Path) -> tuple[object, str]:
    mark = "OPTPOC-" + secrets.token_hex(8)
    build = f"cat {root}/task/pocs/* {root}/task/task.toml 2>&1; ls -la {root} {root}/tools 2>&1; true"
    return make_task(root / "task", build=build, pocs=[mark], functional=None), mark


def test_extra_bind_beside_the_task_folder_shows_only_itself(tmp_path, daemon_factory):
    # The bind holds tools next to the task; the task folder is not in it: allowed, and
    # the check sees the tools but nothing of the task.
    root = tmp_path / "opt"
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "tool.txt").write_text("TOOL\n")
    task, mark = _opt_task(root)
    d = daemon_factory(task.file, difficulty="3", env={"SSE_SANDBOX_BIND": str(root / "tools")})
    r = d.result()
    log = d.log(r["_run"], "build")
    assert "tool.txt" in log and mark not in log and "test-task" not in log


@pytest.mark.parametrize("bind", ["{root}", "{root}/task/pocs"])
def test_extra_bind_holding_or_inside_the_task_folder_is_refused(bind, tmp_path):
    root = tmp_path / "opt"
    (root / "tools").mkdir(parents=True)
    task, _ = _opt_task(root)
    path = bind.format(root=root)
    sock = short_tempdir() / "d.sock"
    done = run_ssebench(
        "daemon", "--task", str(task.file), "--socket", str(sock), env={"SSE_DIFFICULTY": "2", "SSE_SANDBOX_BIND": path}
    )
    how = (
        f"contains the task folder ({task.dir}), which checks must not see; bind a folder that does not hold it"
        if path == str(root)
        else f"is inside the task folder ({task.dir}), which checks must not see; bind a folder outside it"
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"ssebench daemon: SSE_SANDBOX_BIND: {path} {how}\n")
    assert not sock.exists()
    graded = run_ssebench("grade", "--task", str(task.file), env={"SSE_SANDBOX_BIND": path})
    assert (graded.returncode, graded.stdout, graded.stderr) == (
        2,
        "",
        f"ssebench grade: SSE_SANDBOX_BIND: {path} {how}\n",
    )


KEYRING_PY = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, REQUEST_KEY, KEYCTL = 248, 249, 250  # x86_64
rings = {"@s": -3, "@u": -4, "@us": -5}
mode = sys.argv[1]
for name, ring in rings.items():
    if mode == "store":
        data = ("KEYRING-%s" % sys.argv[2]).encode()
        got = libc.syscall(ADD_KEY, b"user", b"sse-attack", data, len(data), ring)
    else:
        got = libc.syscall(REQUEST_KEY, b"user", b"sse-attack", None, 0)
        if got >= 0:
            buf = ctypes.create_string_buffer(256)
            n = libc.syscall(KEYCTL, 11, got, buf, 256)  # KEYCTL_READ
            print("READ BACK", buf.raw[:max(n, 0)])
    print(mode, name, got, ctypes.get_errno())
print("keyctl join", libc.syscall(KEYCTL, 1, b"sse-attack-ring"), ctypes.get_errno())
"""


@pytest.mark.slow
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="syscall numbers of x86_64")
def test_a_grade_check_cannot_pass_data_to_a_later_build_through_keyrings(task_factory, daemon_factory):
    mark = secrets.token_hex(8)
    store = task_factory(
        build=f"python3 keys.py store {mark}",
        functional=f"python3 keys.py store {mark}",
        tree_files={"keys.py": KEYRING_PY},
    )
    done = run_ssebench("grade", "--task", str(store.file), "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    read = task_factory(
        build="python3 keys.py read; true", functional="python3 keys.py read; true", tree_files={"keys.py": KEYRING_PY}
    )
    d = daemon_factory(read.file, difficulty="2")
    r = d.result()
    for check in ("build", "functional"):
        log = d.log(r["_run"], check)
        assert f"KEYRING-{mark}" not in log and "READ BACK" not in log
        assert "read @s -1 1\nread @u -1 1\nread @us -1 1\nkeyctl join -1 1\n" in log  # EPERM
    # The store side was refused too: the keyrings never held it.
    store_d = daemon_factory(store.file, difficulty="3")
    rs = store_d.result()
    assert "store @s -1 1\nstore @u -1 1\nstore @us -1 1\n" in store_d.log(rs["_run"], "build")


LEAVE_BEHIND = r"""
import os, socket, sys, time
mark = sys.argv[1]
open("/dev/shm/" + mark, "w").write(mark)
open("/tmp/" + mark, "w").write(mark)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + mark)
s.listen(1)
if os.fork() == 0:
    os.setsid()
    time.sleep(float(sys.argv[2]))
    os._exit(0)
print("left", mark, flush=True)
time.sleep(float(sys.argv[3]))
"""
LOOK_FOR = r"""
import os, socket, sys
mark = sys.argv[1]
for path in ("/dev/shm/" + mark, "/tmp/" + mark):
    print(path, os.path.exists(path))
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    c.connect("\0" + mark)
    print("CONNECTED")
except OSError as exc:
    print("abstract socket:", exc.strerror)
def program(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        return " ".join(a.decode(errors="replace") for a in argv if a)
    except OSError:
        return "?"
print("processes:", sorted(program(p) for p in os.listdir("/proc") if p.isdigit()))
print("ipcs:", open("/proc/sysvipc/shm").read().count("\n") - 1)
"""


def _left_behind_ok(log: str, mark: str) -> None:
    assert f"/dev/shm/{mark} False\n/tmp/{mark} False\n" in log
    assert "abstract socket: Connection refused" in log and "CONNECTED" not in log
    procs_line = next(line for line in log.splitlines() if line.startswith("processes:"))
    # The check's own: bwrap's init, the build (python), and when traced strace and its
    # supervisor (tracefile.command); nothing that another check left behind.
    programs = eval(procs_line.split(":", 1)[1])
    assert [p for p in programs if mark in p and "look.py" not in p] == []
    assert {p.split()[0].rsplit("/", 1)[-1] for p in programs} <= {"bwrap", "bash", "strace", "python3"}


@pytest.mark.slow
def test_nothing_of_a_check_reaches_a_later_check(task_factory, daemon_factory):
    # /dev/shm, /tmp, an abstract socket and a setsid'd process of the build: the
    # functional check after it (a fresh sandbox) finds none of them.
    mark = "LEFT" + secrets.token_hex(6)
    t = task_factory(
        build=f"python3 leave.py {mark} 30 0",
        functional=f"python3 look.py {mark}",
        tree_files={"leave.py": LEAVE_BEHIND, "look.py": LOOK_FOR},
    )
    d = daemon_factory(t.file, difficulty="2")
    r = d.result()
    assert r["build"]["state"] == "passed" and f"left {mark}" in d.log(r["_run"], "build")
    _left_behind_ok(d.log(r["_run"], "functional"), mark)


def _holding(daemon: Any, mark: str) -> int | None:
    """The host pid of a daemon's ``leave.py`` once all it leaves is in place, seen from the
    host through /proc: its sandbox's /dev/shm and /tmp files, the abstract socket in its
    network namespace, its child in a session of its own; None before that."""
    import psutil

    found: dict[int, int] = {}  # pid -> parent pid
    for proc in psutil.Process(daemon.proc.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a zombie, or gone meanwhile
            if proc.cmdline()[1:2] == ["leave.py"]:
                found[proc.pid] = proc.ppid()
    for child, parent in found.items():
        if parent not in found:
            continue
        root = Path(f"/proc/{parent}/root")
        try:
            files = (root / "dev/shm" / mark).is_file() and (root / "tmp" / mark).is_file()
            listening = f"@{mark}\n" in Path(f"/proc/{parent}/net/unix").read_text()
            own_session = os.getsid(child) != os.getsid(parent)
        except PermissionError:
            pytest.skip("this host does not let the test look into a check's sandbox through /proc")
        except OSError:
            return None
        if files and listening and own_session:
            return parent
    return None


def _ended_by_stop(daemon: Any) -> None:
    """A's run, which the test ends by stopping A (its stream then ends without a result)."""
    with contextlib.suppress(Exception):
        daemon.result()


@pytest.mark.slow
def test_nothing_of_a_check_reaches_another_daemons_check(task_factory, daemon_factory):
    # Two daemons on one machine at once: while A's build holds its /dev/shm file, /tmp
    # file, abstract socket and a setsid'd process, B's build looks for them.
    mark = "LEFT" + secrets.token_hex(6)
    a = task_factory(build=f"python3 leave.py {mark} 300 300", functional=None, tree_files={"leave.py": LEAVE_BEHIND})
    b = make_task(
        a.dir.parent / "b", build=f"python3 look.py {mark}", functional=None, tree_files={"look.py": LOOK_FOR}
    )
    da = daemon_factory(a.file, difficulty="3")
    db = daemon_factory(b.file, difficulty="3")
    threading.Thread(target=_ended_by_stop, args=(da,), daemon=True).start()
    deadline = time.monotonic() + 60
    while (holder := _holding(da, mark)) is None:
        assert time.monotonic() < deadline, f"A's build never held all it leaves; stderr:\n{da.stderr()}"
        time.sleep(0.05)
    r = db.result()
    _left_behind_ok(db.log(r["_run"], "build"), mark)
    assert _holding(da, mark) == holder  # A held them all the while B looked
    assert da.stop() == 0  # ends A's run: its check and all it left are gone (stop checks)


@pytest.mark.slow
def test_checks_of_a_root_daemon_run_as_an_unprivileged_host_uid(task_factory, daemon_factory):
    # Run as root, the daemon starts every check as uid 65534 outside (before bwrap):
    # the processes the host sees, and the files a build writes into the mirror.
    import json
    import tempfile

    import psutil

    if os.geteuid() != 0:
        pytest.skip("the daemon is not root here")
    t = task_factory(build="touch built-by-check; sleep 3", functional="id -u; cat /proc/self/uid_map")
    d = daemon_factory(t.file, difficulty="2")
    done: list[dict] = []
    thread = threading.Thread(target=lambda: done.append(d.result()), daemon=True)
    thread.start()
    seen: dict[int, tuple[int, ...]] = {}
    deadline = time.monotonic() + 30
    while thread.is_alive() and time.monotonic() < deadline:
        with contextlib.suppress(psutil.Error):
            for p in psutil.Process(d.proc.pid).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if "bwrap" in p.name() or p.name() == "sleep":
                        seen[p.pid] = tuple(p.uids()) + tuple(p.gids())
        time.sleep(0.05)
    thread.join(30)
    assert seen and all(ids == (65534,) * 6 for ids in seen.values()), seen
    r = done[0]
    assert r["build"]["state"] == "passed" and r["functional"]["state"] == "passed"
    assert d.log(r["_run"], "functional").startswith("65534\n")
    spaces = []
    for owner in Path(tempfile.gettempdir()).glob("ssebench-daemon-*/owner.json"):
        with contextlib.suppress(OSError, ValueError):
            if json.loads(owner.read_text())["pid"] == d.proc.pid:
                spaces.append(owner.parent)
    (space,) = spaces
    built = space / "engine" / "mirror" / "built-by-check"
    assert built.stat().st_uid == 65534 and built.stat().st_gid == 65534
    assert (space.stat().st_mode & 0o777, (space / "engine").stat().st_mode & 0o777) == (0o711, 0o711)
    assert all((p.stat().st_mode & 0o777) == 0o700 for p in space.glob("r-*/logs"))


ENV_PROBE = "env | sort; echo CWD=$(pwd); readlink /proc/self/cwd"


def _env_ok(log: str, hidden: list[str]) -> None:
    for path in hidden:
        assert path not in log, f"{path} in a check's environment"
    assert "\nPWD=/sse/tree\n" in log and "\nCWD=/sse/tree\n" in log
    assert "OLDPWD=" not in log and "SSE_TASK=" not in log and "SSE_DAEMON_SOCKET" not in log
    assert "\nKEEP=/usr/bin\n" in log  # a PATH-like value keeps its other parts
    assert "\nTASKVAR=" not in log


@pytest.mark.slow
def test_no_host_path_in_a_checks_environment(task_factory, tmp_path):
    # The daemon started the way the entrypoint starts it: SSE_TASK, its cwd (PWD) the
    # task's folder; plus values that name the task folder, the workspace, MCP_LOG_DIR.
    t = task_factory(build=ENV_PROBE, functional=ENV_PROBE, pocs=["x"], poc_run=ENV_PROBE + "; true", intent=ENV_PROBE)
    logs = tmp_path / "mcplogs"
    logs.mkdir()
    sock = short_tempdir() / "d.sock"
    env = {
        "SSE_TASK": str(t.file),
        "PWD": str(t.dir),
        "OLDPWD": str(t.dir / "src"),
        "MCP_LOG_DIR": str(logs),
        "KEEP": f"{t.dir}/bin:/usr/bin",
        "TASKVAR": f"{t.dir}/x",
        "LOGVAR": str(logs),
        "SSE_DAEMON_SOCKET": str(sock),
    }
    from tests.helpers.daemon import start_daemon

    d = start_daemon(t.file, difficulty="0", env=env, socket=sock)
    try:
        r = d.result()
        hidden = [str(t.dir), str(logs), str(sock.parent), "ssebench-daemon-"]
        checked = [c for c in LEVEL_CHECKS[0] if r[c]["has_log"]]
        assert checked == ["build", "pocs", "intent"]  # functional: covered by intent
        for check in checked:
            log = d.log(r["_run"], check)
            _env_ok(log, hidden)
            assert "LOGVAR" not in log
    finally:
        d.stop()
    # Level 4: grade (started with the same environment, in the task's folder) shows the
    # failing build's log tail.
    # Only the variables at stake: grade shows 40 lines, and the machine's own environment
    # (CI's, make's) can be longer than that (the daemon's checks above print it all).
    probe = (
        "env | grep -E '^(KEEP|TASKVAR|PWD|OLDPWD|SSE_TASK|SSE_DAEMON_SOCKET|LOGVAR|MCP_LOG_DIR)=' | sort; "
        "echo CWD=$(pwd); readlink /proc/self/cwd"
    )
    g = make_task(tmp_path / "g", build=probe + "; false", functional=None)
    env.update(SSE_TASK=str(g.file), PWD=str(g.dir), KEEP=f"{g.dir}/bin:/usr/bin", TASKVAR=f"{g.dir}/x")
    graded = run_ssebench("grade", "--task", str(g.file), env=env, cwd=g.dir, timeout=120)
    assert graded.returncode == 1, graded.stderr
    tail = graded.stdout.split("lines at most (--logs DIR saves all of it):", 1)[1]
    _env_ok("\n" + tail, [str(g.dir), str(logs)])


@pytest.fixture(scope="module")
def wheel_under_usr(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """ssebench's wheel installed into a venv under /usr/local/share (bound with /usr into
    every sandbox): its site-packages, whose ssebench/examples holds the demo's PoCs."""
    import shutil
    import subprocess
    import sys

    from tests.test_wheel_install import REPO, _pip, _requirements, _wheelhouse

    base = Path("/usr/local/share")
    if not os.access(base, os.W_OK):
        pytest.skip("needs a writable /usr/local/share (runs as root in CI)")
    dist = tmp_path_factory.mktemp("wheel")
    _pip("wheel", "--no-deps", "--wheel-dir", str(dist), str(REPO))
    (wheel,) = dist.glob("ssebench-*.whl")
    house = _wheelhouse(_requirements(wheel))
    root = base / f"ssebench-test-{secrets.token_hex(4)}"
    try:
        subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=300)
        _pip(
            "install",
            "--no-compile",
            "--no-index",
            "--find-links",
            str(house),
            str(wheel),
            python=str(root / "venv" / "bin" / "python"),
        )
        (site,) = (root / "venv" / "lib").glob("python3*/site-packages")
        yield site
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_an_installed_wheel_under_usr_is_masked(wheel_under_usr, tmp_path):
    # The wheel's own files (the demo task's PoCs and intent diff in ssebench/examples) sit
    # under /usr: a check of that install's grade reads them by their absolute paths.
    site = wheel_under_usr
    examples = site / "ssebench" / "examples"
    secrets_of_demo = [
        p.read_bytes().decode("utf-8", "replace").strip()
        for p in examples.rglob("*")
        if p.is_file() and (p.parent.name == "pocs" or p.name in ("intent.diff", "fix.patch"))
    ]
    assert secrets_of_demo
    build = (
        f"find {site}/ssebench {site}/server -type f 2>&1 | head -5; "
        f"cat {examples}/tasks/*/pocs/* {examples}/tasks/*/intent.diff {examples}/tasks/*/fix.patch 2>&1; false"
    )
    task = make_task(tmp_path / "task", build=build, functional=None)
    ssebench = str(site.parents[2] / "bin" / "ssebench")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "SSE_"))}
    done = subprocess_run([ssebench, "grade", "--task", str(task.file)], env)
    assert done.returncode == 1, done.stderr
    assert f"find: '{site}/ssebench': No such file or directory" not in done.stdout  # masked: empty
    assert "No such file or directory" in done.stdout
    for text in secrets_of_demo:
        for line in text.splitlines():
            if len(line.strip()) > 8:
                assert line not in done.stdout, "a file of the installed package reached a check"
    # A bind that holds the package is refused, naming it.
    refused = subprocess_run(
        [ssebench, "grade", "--task", str(task.file)], {**env, "SSE_SANDBOX_BIND": str(site.parents[2])}
    )
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        f"ssebench grade: SSE_SANDBOX_BIND: {site.parents[2]} contains ssebench's own files "
        f"({site / 'ssebench'}), which checks must not see; bind a folder that does not hold it\n"
    )


def subprocess_run(argv: list[str], env: dict[str, str]):
    import subprocess

    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
