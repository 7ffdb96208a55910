"""The daemon as a process: timeouts and leftovers, queueing, signals, disconnects,
SSE_DIFFICULTY, and its socket."""

from __future__ import annotations

import os
import signal
import socket
import stat
import threading
import time
import uuid
from pathlib import Path

import httpx
import psutil
import pytest

from ssebench.daemon.paths import SocketError, default_socket_path, ensure_private_dir, resolve_socket_path
from tests.helpers.daemon import marked_processes, run_ssebench, short_tempdir, start_daemon, wait_until

NOTE = "[ssebench] timed out after 1 s: the command and every process it started were killed.\n"

# Starts processes that leave the check's process group in every usual way, then hangs.
ESCAPES = (
    "sleep 300 & "  # plain background child
    "setsid sleep 301 & "  # new session
    "(setsid sh -c 'sleep 302 & sleep 303' &) ; "  # daemonized (double fork + setsid)
    "nohup sleep 304 >/dev/null 2>&1 & "
    "echo started; sleep 1000"
)


# -- timeouts and leftovers --------------------------------------------------------------------


def test_timeout_kills_the_whole_group_and_escaped_descendants(task_factory, daemon_factory):
    mark = uuid.uuid4().hex
    t = task_factory(build=ESCAPES, build_timeout=1)
    d = daemon_factory(t.file, difficulty="3", env={"SSE_TEST_MARK": mark})
    start = time.monotonic()
    r = d.result()
    assert time.monotonic() - start < 5
    assert r["build"]["state"] == "failed" and r["build"]["timed_out"] is True
    assert d.log(r["_run"], "build") == "started\n\n" + NOTE
    assert marked_processes(mark, exclude=[d.proc.pid]) == []
    assert d.leftovers() == []  # nothing left, not even an unreaped zombie


def test_leftovers_of_a_check_that_ends_normally_are_killed(task_factory, daemon_factory):
    mark = uuid.uuid4().hex
    t = task_factory(build=ESCAPES.replace("sleep 1000", "true"), functional="true")
    d = daemon_factory(t.file, difficulty="2", env={"SSE_TEST_MARK": mark})
    r = d.result()
    assert r["build"]["state"] == "passed"
    assert r["functional"]["state"] == "passed"
    # Escaped processes of a check that ended by itself are swept right after the run.
    assert wait_until(lambda: marked_processes(mark, exclude=[d.proc.pid]) == [], timeout=3)
    assert wait_until(lambda: d.leftovers() == [], timeout=3)


def test_poc_timeout(task_factory, daemon_factory):
    t = task_factory(pocs=["fixed", "fixed"], poc_run="sleep 30", poc_timeout=1, functional="true")
    d = daemon_factory(t.file, difficulty="1")
    r = d.result()
    assert r["pocs"]["state"] == "failed" and r["pocs"]["timed_out"] is True
    assert (r["pocs"]["pocs_passed"], r["pocs"]["pocs_total"]) == (0, 2)
    assert r["functional"]["state"] == "passed"
    assert d.log(r["_run"], "pocs") == "\n" + NOTE


# -- one run at a time ------------------------------------------------------------------------------


@pytest.mark.slow
def test_concurrent_runs_serialize_in_arrival_order(task_factory, daemon_factory, tmp_path):
    order = tmp_path / "order.txt"
    t = task_factory(
        build='v=$(cat VALUE); echo "start $v" >> "$ORDER_FILE"; sleep 1; '
        'echo "end $v" >> "$ORDER_FILE"; echo "value $v"'
    )
    # Without the sandbox: the checks write ORDER_FILE on the host, which a sandbox forbids.
    d = daemon_factory(t.file, difficulty="3", env={"ORDER_FILE": str(order)}, args=("--no-sandbox",))
    results: dict[int, list[dict]] = {}
    first_lines: dict[int, str] = {}
    threads = []

    def client(n: int, ready: threading.Event) -> None:
        with d.client().stream("POST", "/runs") as r:
            lines = r.iter_lines()
            first_lines[n] = next(lines)
            ready.set()  # the daemon has snapshotted this request's tree
            import json

            results[n] = [json.loads(first_lines[n])] + [json.loads(x) for x in lines if x]

    for n in range(1, 5):
        (t.tree / "VALUE").write_text(str(n))
        ready = threading.Event()
        th = threading.Thread(target=client, args=(n, ready))
        th.start()
        threads.append(th)
        assert ready.wait(10)
    for th in threads:
        th.join(30)
    assert order.read_text().split("\n")[:-1] == [f"{x} {n}" for n in range(1, 5) for x in ("start", "end")]
    assert '"started"' in first_lines[1]
    for n in range(2, 5):  # how many are ahead depends on how fast the requests arrived
        assert results[n][0]["event"] == "queued" and 1 <= results[n][0]["position"] <= n - 1
    for n, events in results.items():
        result = events[-1]
        assert result["event"] == "result"
        assert d.log(result["run_id"], "build") == f"value {n}\n\n"
    assert len({events[-1]["run_id"] for events in results.values()}) == 4


@pytest.mark.slow
def test_health_reports_busy_and_queued(task_factory, daemon_factory):
    t = task_factory(build="sleep 0.8")
    d = daemon_factory(t.file, difficulty="3")
    threads = [threading.Thread(target=d.run) for _ in range(2)]
    for th in threads:
        th.start()
    assert wait_until(lambda: d.get("/health").json()["queued"] == 1)
    assert d.get("/health").json()["busy"] is True
    for th in threads:
        th.join(10)
    health = d.get("/health").json()
    assert health | {"version": None, "builds": None, "build_trace": None, "last_run": None} == {
        "status": "ok",
        "version": None,
        "difficulty": 3,
        "busy": False,
        "queued": 0,
        "sandbox": "bwrap 0.11.0",
        "builds": None,
        "build_trace": None,
        "last_run": None,
    }
    assert health["build_trace"].startswith("strace ")  # probed once, at the first build
    builds = health["builds"]
    assert builds["incremental"] + builds["clean"] + builds["unchanged"] == len(threads)


# -- disconnects and signals ------------------------------------------------------------------------


def test_client_disconnect_kills_the_running_check_and_frees_the_daemon(task_factory, daemon_factory):
    mark = uuid.uuid4().hex
    # The switch is a file in the tree: the sandboxed check sees nothing of the task folder.
    t = task_factory(build="if [ -e slow ]; then " + ESCAPES + "; fi; echo quick")
    (t.tree / "slow").touch()
    d = daemon_factory(t.file, difficulty="3", env={"SSE_TEST_MARK": mark})
    with d.client().stream("POST", "/runs") as r:
        lines = r.iter_lines()  # held: dropping it would close the response early
        assert next(lines).startswith('{"event": "started"')
        assert next(lines) == '{"event": "check_started", "check": "build"}'
        assert wait_until(lambda: len(marked_processes(mark, exclude=[d.proc.pid])) >= 6)
    # The response is closed: the check and everything it started must go.
    assert wait_until(lambda: marked_processes(mark, exclude=[d.proc.pid]) == [])
    assert wait_until(lambda: d.leftovers() == [])
    (t.tree / "slow").unlink()
    r = d.result()
    assert r["build"]["state"] == "passed"
    assert d.log(r["_run"], "build") == "quick\n\n"


def test_disconnect_while_queued_drops_only_that_request(task_factory, daemon_factory):
    t = task_factory(build="sleep 0.6; echo done")
    d = daemon_factory(t.file, difficulty="3")
    first: list = []
    th = threading.Thread(target=lambda: first.extend(d.run()))
    th.start()
    assert wait_until(lambda: d.get("/health").json()["busy"])
    with d.client().stream("POST", "/runs") as r:
        assert '"queued"' in next(r.iter_lines())
    th.join(10)
    assert first[-1]["event"] == "result"
    assert d.result()["build"]["state"] == "passed"
    assert d.get("/health").json()["queued"] == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly_killing_the_running_check(task_factory, sig):
    mark = uuid.uuid4().hex
    t = task_factory(build=ESCAPES)
    d = start_daemon(t.file, difficulty="3", env={"SSE_TEST_MARK": mark})
    events: list[str] = []

    def client() -> None:
        try:
            with d.client().stream("POST", "/runs") as r:
                events.extend(r.iter_lines())
        except httpx.HTTPError as exc:
            events.append(f"transport error: {exc}")

    th = threading.Thread(target=client)
    th.start()
    assert wait_until(lambda: len(marked_processes(mark, exclude=[d.proc.pid])) >= 6)
    d.proc.send_signal(sig)
    assert d.proc.wait(10) == 0
    th.join(10)
    assert not d.socket.exists()
    assert marked_processes(mark, exclude=[d.proc.pid]) == []
    assert events and events[-1] == '{"event": "error", "message": "the daemon is shutting down"}', events


# -- SSE_DIFFICULTY -------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["", "5", "-1", "two", "2.0", "02", "+2", "\u0662", " ", "1 2", "4\n4"])
def test_bad_difficulty_exits_2_before_listening(task_factory, raw):
    t = task_factory()
    sock = short_tempdir() / "d.sock"
    proc = run_ssebench("daemon", "--task", str(t.file), "--socket", str(sock), env={"SSE_DIFFICULTY": raw})
    assert proc.returncode == 2
    assert proc.stderr == f"SSE_DIFFICULTY must be an integer from 0 to 4, got '{raw}'\n"
    assert not sock.exists()


@pytest.mark.parametrize(("raw", "level"), [(None, 2), ("0", 0), (" 3 ", 3), ("\t4\n", 4)])
def test_good_difficulty(task_factory, daemon_factory, raw, level):
    d = daemon_factory(task_factory().file, difficulty=raw)
    assert d.get("/health").json()["difficulty"] == level


def test_bad_difficulty_is_reported_before_a_bad_task(tmp_path):
    proc = run_ssebench("daemon", "--task", str(tmp_path / "none.toml"), env={"SSE_DIFFICULTY": "9"})
    assert (proc.returncode, proc.stderr) == (2, "SSE_DIFFICULTY must be an integer from 0 to 4, got '9'\n")


def test_tree_that_is_not_a_folder(task_factory, tmp_path):
    t = task_factory()
    proc = run_ssebench(
        "daemon", "--task", str(t.file), "--tree", str(tmp_path / "nope"), "--socket", str(short_tempdir() / "d.sock")
    )
    assert (proc.returncode, proc.stderr) == (2, f"ssebench daemon: --tree {tmp_path / 'nope'}: is not a folder\n")


# -- the socket ------------------------------------------------------------------------------------


def test_stale_socket_is_replaced(task_factory, daemon_factory):
    sock_path = short_tempdir() / "d.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock_path))
    dead.close()  # the file stays; nothing listens: a crashed daemon's socket
    assert stat.S_ISSOCK(sock_path.lstat().st_mode)
    d = daemon_factory(task_factory().file, socket=sock_path)
    assert d.get("/health").status_code == 200


def test_live_socket_is_refused(task_factory, daemon_factory):
    t = task_factory()
    d = daemon_factory(t.file)
    proc = run_ssebench("daemon", "--task", str(t.file), "--socket", str(d.socket))
    assert proc.returncode == 1
    assert proc.stderr == f"ssebench daemon: {d.socket}: another daemon is already listening on this socket\n"
    assert d.get("/health").status_code == 200  # the first one is untouched


def test_file_in_the_way_is_not_replaced(task_factory):
    path = short_tempdir() / "d.sock"
    path.write_text("precious")
    proc = run_ssebench("daemon", "--task", str(task_factory().file), "--socket", str(path))
    assert proc.returncode == 1
    assert proc.stderr == f"ssebench daemon: {path}: exists and is not a socket; refusing to replace it\n"
    assert path.read_text() == "precious"


def test_socket_from_environment(task_factory, daemon_factory):
    path = short_tempdir() / "env.sock"
    t = task_factory()
    d = start_daemon(t.file, socket=path, pass_socket=False, env={"SSE_DAEMON_SOCKET": str(path)})
    try:
        assert d.get("/health").status_code == 200
    finally:
        d.stop()
    assert not path.exists()


def test_socket_path_resolution(tmp_path):
    uid = os.getuid()
    assert resolve_socket_path("/x/s.sock", {"SSE_DAEMON_SOCKET": "/y"}) == Path("/x/s.sock")
    assert resolve_socket_path(None, {"SSE_DAEMON_SOCKET": "/y/s", "XDG_RUNTIME_DIR": "/run/u"}) == Path("/y/s")
    assert resolve_socket_path(None, {"XDG_RUNTIME_DIR": "/run/user/7"}) == Path("/run/user/7/ssebench/daemon.sock")
    assert resolve_socket_path(None, {}) == Path(f"/tmp/ssebench-{uid}/daemon.sock")
    assert default_socket_path({"XDG_RUNTIME_DIR": "relative"}) == Path(f"/tmp/ssebench-{uid}/daemon.sock")


def test_default_socket_folder_must_be_private(tmp_path):
    good = tmp_path / "good"
    ensure_private_dir(good)
    assert stat.S_IMODE(good.stat().st_mode) == 0o700
    ensure_private_dir(good)  # idempotent
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    with pytest.raises(SocketError, match="is accessible by other users"):
        ensure_private_dir(loose)
    link = tmp_path / "link"
    link.symlink_to(good)
    with pytest.raises(SocketError, match="is a symlink"):
        ensure_private_dir(link)


def test_default_socket_location(task_factory, tmp_path):
    runtime = short_tempdir()
    t = task_factory()
    sock = runtime / "ssebench" / "daemon.sock"
    d = start_daemon(t.file, socket=sock, pass_socket=False, env={"XDG_RUNTIME_DIR": str(runtime)})
    try:
        assert stat.S_IMODE((runtime / "ssebench").stat().st_mode) == 0o700
        assert stat.S_IMODE(d.socket.stat().st_mode) == 0o600
    finally:
        d.stop()


def test_no_process_left_after_stop(task_factory):
    t = task_factory(build="true")
    d = start_daemon(t.file, difficulty="3")
    pid = d.proc.pid
    d.result()
    assert d.stop() == 0
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


# -- big output --------------------------------------------------------------------------------------


class RssSampler:
    """Samples a process's resident set size in a thread until stopped."""

    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self.proc.memory_info().rss)
            time.sleep(0.02)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.slow
def test_500_mb_of_output_leaves_the_daemon_rss_flat(task_factory, daemon_factory):
    size = 500_000_000
    t = task_factory(build=f"yes 0123456789abcdef | head -c {size}; echo tail-of-stderr >&2")
    d = daemon_factory(t.file, difficulty="3")
    d.result()  # warm up: first run imports and allocates what every run needs
    idle = psutil.Process(d.proc.pid).memory_info().rss
    with RssSampler(d.proc.pid) as during_run:
        r = d.result()
    assert r["build"]["state"] == "passed"
    # stdout does not end in a newline (500e6 is no multiple of 17): one is added, then the blank line
    assert r["build"]["log_bytes"] == size + 2 + len("tail-of-stderr\n")
    received = 0
    with RssSampler(d.proc.pid) as during_log:
        with d.client().stream("GET", f"/runs/{r['_run']}/logs/build") as resp:
            tail = b""
            for chunk in resp.iter_bytes():
                received += len(chunk)
                tail = (tail + chunk)[-64:]
    assert received == r["build"]["log_bytes"]
    assert tail.endswith(b"cdef\n0123456789ab\n\ntail-of-stderr\n")  # 500e6 % 17 == 12
    growth = max(during_run.samples + during_log.samples) - idle
    assert growth < 30 * 2**20, f"daemon RSS grew by {growth / 2**20:.1f} MiB (idle {idle / 2**20:.1f} MiB)"


@pytest.mark.parametrize("raw", ["0", "-1", "soon", "inf"])
def test_bad_heartbeat_setting(task_factory, raw):
    t = task_factory()
    sock = short_tempdir() / "d.sock"
    proc = run_ssebench("daemon", "--task", str(t.file), "--socket", str(sock), env={"SSE_DAEMON_HEARTBEAT": raw})
    assert proc.returncode == 2
    assert proc.stderr == (f"ssebench daemon: SSE_DAEMON_HEARTBEAT must be a positive number of seconds, got '{raw}'\n")
    assert not sock.exists()


def test_socket_path_too_long(task_factory, tmp_path):
    folder = tmp_path / ("d" * 110)
    folder.mkdir()
    path = folder / "x.sock"
    proc = run_ssebench("daemon", "--task", str(task_factory().file), "--socket", str(path))
    assert (proc.returncode, proc.stderr) == (
        1,
        f"ssebench daemon: {path}: too long for a Unix socket path (at most 107 bytes)\n",
    )
