"""The check sandbox (ssebench/daemon/sandbox.py, docs/security.md): what a check sees,
the ``network`` key, the output limit, ``--no-sandbox``, refusing to start without
namespaces, and a symlinked ``--tree``. Real daemons, real bwrap, real checks."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from ssebench.daemon.limits import Limits, parse_size
from ssebench.daemon.sandbox import TreeView, poc_path
from ssebench.daemon.sandbox_setup import FIX_HINT
from tests.helpers.daemon import run_ssebench, short_tempdir
from tests.helpers.tasks import make_task

pytestmark = pytest.mark.timeout(120)


def states(result: dict) -> dict[str, str]:
    return {k: v["state"] for k, v in result.items() if not k.startswith("_")}


def test_a_check_sees_only_its_tree_the_system_and_a_private_tmp(task_factory, daemon_factory, tmp_path):
    (tmp_path / "host-file").write_text("host\n")
    t = task_factory(
        build=(
            'set -e; test "$(id -u)" = 65534; test "$(ls /)" = "$(printf "bin\\ndev\\netc\\nlib\\nlib64\\nproc\\nsbin\\nsse\\ntmp\\nusr")"; '
            'test ! -e /etc/shadow; test -r /etc/passwd; test -z "$(ls -A /tmp)"; '
            f'test ! -e {tmp_path}/host-file; test "$(ls /proc | grep -cE "^[0-9]+$")" -lt 10; '
            "echo built > artefact; cc --version >/dev/null; echo ok"
        )
    )
    d = daemon_factory(t.file, difficulty="3")
    r = d.result()
    assert states(r) == {"build": "passed"}, d.log(r["_run"], "build")
    assert d.log(r["_run"], "build") == "ok\n\n"
    assert not (t.tree / "artefact").exists()  # the agent's tree is only read


def test_intent_diff_comes_through_a_pipe_and_git_runs_in_the_sandbox(task_factory, daemon_factory):
    # The tree's own .git/config would run core.fsmonitor on the host if git ran there.
    t = task_factory(
        intent='test "$(cat intent-added.txt)" = added && test -z "$(ls -A "$SSE_TASK_DIR")" && echo intent-ok'
    )
    (t.tree / ".git").mkdir()
    (t.tree / ".git" / "config").write_text(
        "[core]\n\tfsmonitor = touch fsmonitor-ran; touch /tmp/escaped-" + t.dir.name + "; false\n"
    )
    (t.tree / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (t.tree / ".git" / "objects").mkdir()
    (t.tree / ".git" / "refs").mkdir()
    d = daemon_factory(t.file, difficulty="0")
    r = d.result(["intent"])
    log = d.log(r["_run"], "intent")
    assert not Path("/tmp/escaped-" + t.dir.name).exists()
    assert "diff --git" not in log
    assert r["intent"]["state"] == "passed", log
    assert log.endswith("intent-ok\n\n")


def test_network_is_off_unless_the_check_asks(tmp_path, daemon_factory):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    try:
        connect = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected"
        t = make_task(
            tmp_path / "t", build=connect, functional=connect, extra_toml="network = true\n"
        )  # appended to the last table: [functional]
        d = daemon_factory(t.file, difficulty="2")
        r = d.result()
        assert r["build"]["state"] == "failed"
        assert "connected" not in d.log(r["_run"], "build")
        t2 = make_task(tmp_path / "t2", build=connect, top_toml="", functional=None, extra_toml="network = true\n")
        r2 = daemon_factory(t2.file, difficulty="3").result()
        assert r2["build"]["state"] == "passed"
    finally:
        server.close()


def test_output_limit_cuts_the_log_and_the_daemon_answers_again(task_factory, daemon_factory):
    t = task_factory(build="yes abcdefghijklmnop | head -c 50M; echo never-here >&2")
    d = daemon_factory(t.file, difficulty="3", env={"SSE_OUTPUT_LIMIT": "1M"})
    r = d.result()
    assert r["build"]["state"] == "failed"
    log = d.log(r["_run"], "build")
    note = (
        "[ssebench] output limit reached: the check wrote more than 1 MiB of output; it was "
        "killed and its log was cut here.\n"
    )
    assert log.endswith(note)
    assert "never-here" not in log
    assert len(log.encode()) <= (1 << 20) + 2 + len(note)
    r2 = d.result()
    assert r2["build"]["state"] == "failed" and d.get("/health").json()["status"] == "ok"


def test_no_sandbox_is_logged_and_shown_by_health(task_factory, daemon_factory):
    t = task_factory(build='test "$SSE_TASK_DIR" != /sse/task && test -r "$SSE_TASK_DIR/task.toml"')
    d = daemon_factory(t.file, difficulty="3", args=("--no-sandbox",))
    assert d.get("/health").json()["sandbox"] == "off (--no-sandbox)"
    assert "sandbox: off (--no-sandbox)" in d.stderr()
    assert d.result()["build"]["state"] == "passed"
    d2 = daemon_factory(t.file, difficulty="3", env={"SSE_NO_SANDBOX": "1"})
    assert d2.get("/health").json()["sandbox"] == "off (--no-sandbox)"


def _failing_bwrap(tmp_path: Path) -> Path:
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.11.0'; exit 0; }\n"
        "echo 'bwrap: No permissions to create a new namespace' >&2; exit 1\n"
    )
    fake.chmod(0o755)  # like a real bwrap: run by the checks' uid when the daemon is root
    return fake


def test_daemon_refuses_to_start_where_namespaces_are_not_permitted(task_factory, tmp_path):
    t = task_factory()
    sock = short_tempdir() / "d.sock"
    proc = run_ssebench(
        "daemon",
        "--task",
        str(t.file),
        "--socket",
        str(sock),
        env={"SSE_BWRAP": str(_failing_bwrap(tmp_path)), "SSE_DIFFICULTY": "2"},
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        f"ssebench daemon: cannot sandbox checks (bwrap: No permissions to create a new namespace): {FIX_HINT}\n"
    )
    assert not sock.exists()


def test_grade_refuses_without_namespaces_and_runs_with_no_sandbox(task_factory, tmp_path):
    t = task_factory(build='test -r "$SSE_TASK_DIR/task.toml"')
    env = {"SSE_BWRAP": str(_failing_bwrap(tmp_path))}
    proc = run_ssebench("grade", "--task", str(t.file), env=env)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"ssebench grade: cannot sandbox checks (bwrap: No permissions to create a new namespace): {FIX_HINT}\n"
    )
    assert run_ssebench("grade", "--task", str(t.file), "--no-sandbox", env=env).returncode == 0
    assert run_ssebench("grade", "--task", str(t.file)).returncode == 1  # sandboxed: no task file


def test_bad_limit_values_stop_the_daemon_before_it_listens(task_factory):
    t = task_factory()
    sock = short_tempdir() / "d.sock"
    proc = run_ssebench(
        "daemon", "--task", str(t.file), "--socket", str(sock), "--output-limit", "lots", env={"SSE_DIFFICULTY": "2"}
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "ssebench daemon: --output-limit must be a size in bytes (e.g. 1073741824, 512M, 1G), got 'lots'\n"
    )
    assert not sock.exists()
    proc = run_ssebench(
        "daemon", "--task", str(t.file), "--socket", str(sock), env={"SSE_DIFFICULTY": "2", "SSE_PIDS_LIMIT": "-3"}
    )
    assert proc.returncode == 2
    assert proc.stderr == "ssebench daemon: SSE_PIDS_LIMIT must be a whole number (1 or more), got '-3'\n"
    assert not sock.exists()


def test_a_symlinked_tree_is_resolved_once_at_start(task_factory, daemon_factory, tmp_path):
    t = task_factory(build="cat which")
    one, two = tmp_path / "one", tmp_path / "two"
    for d, text in ((one, "one"), (two, "two")):
        d.mkdir()
        (d / "which").write_text(text + "\n")
    link = tmp_path / "tree-link"
    link.symlink_to(one)
    d = daemon_factory(t.file, difficulty="3", tree=link)
    link.unlink()
    link.symlink_to(two)
    r = d.result()
    assert d.log(r["_run"], "build") == "one\n\n"


def test_symlinks_in_the_tree_resolve_inside_the_sandbox_only(task_factory, daemon_factory):
    t = task_factory(pocs=["fixed"], build="test ! -e leak && test -L leak && echo ok")
    (t.tree / "leak").symlink_to(t.pocs[0])
    d = daemon_factory(t.file, difficulty="3")
    r = d.result()
    assert r["build"]["state"] == "passed"


# -- the pure parts ------------------------------------------------------------------------------


def test_parse_size_and_limits_from_env():
    assert parse_size("X", "1G") == 1 << 30
    assert parse_size("X", "512M") == 512 << 20
    assert parse_size("X", "512MiB") == 512 << 20
    assert parse_size("X", "4096") == 4096
    with pytest.raises(ValueError, match="X must be a size in bytes"):
        parse_size("X", "0")
    limits = Limits.from_env({"SSE_MEMORY_LIMIT": "2G", "SSE_PIDS_LIMIT": "64"}, output="10M")
    assert limits == Limits(memory=2 << 30, pids=64, output=10 << 20)
    assert Limits.from_env({}) == Limits(memory=4 << 30, pids=1024, output=1 << 30)


def test_poc_path_keeps_the_place_under_the_task_folder():
    assert poc_path(Path("/t"), Path("/t/pocs/a")) == "/sse/task/pocs/a"
    assert poc_path(Path("/t"), Path("/elsewhere/b")) == "/sse/task/.poc/b"


def test_tree_views():
    assert not TreeView.bind(Path("/x")).is_overlay
    view = TreeView.overlay(Path("/l"), Path("/u"), Path("/w"))
    assert view.is_overlay and (view.lower, view.upper, view.work) == (Path("/l"), Path("/u"), Path("/w"))


def test_overlay_probe(tmp_path):
    from ssebench.daemon.sandbox import Sandbox
    from ssebench.daemon.sandbox_setup import detect, overlay_supported

    assert overlay_supported(tmp_path, Sandbox(None)) is False
    fs = os.popen(f"stat -f -c %T {tmp_path}").read().strip()
    assert overlay_supported(tmp_path, detect()) is (fs != "overlayfs")


@pytest.mark.slow
def test_entrypoint_no_sandbox_reaches_the_daemon_and_grading(task_factory, tmp_path):
    # A check that passes only unsandboxed (it reads the task file): the flag must reach
    # both the daemon the entrypoint starts and `ssebench grade`.
    import json
    import subprocess
    import sys

    from ssebench.supervise import free_port

    t = task_factory(build='test -r "$SSE_TASK_DIR/task.toml"', functional=None)
    entry = [sys.executable, "-c", "from ssebench.cli import main; main()", "entrypoint"]
    for flag, status in ((["--no-sandbox"], "passed"), ([], "checks_failed")):
        results = tmp_path / f"results{len(flag)}"
        env = {
            **os.environ,
            "SSE_TASK": str(t.file),
            "SSE_RESULTS_DIR": str(results),
            "SSE_MCP_PORT": str(free_port()),
            "MCP_LOG_DIR": str(tmp_path / "logs"),
        }
        env.pop("SSE_DIFFICULTY", None)
        env.pop("SSE_NO_SANDBOX", None)
        done = subprocess.run([*entry, *flag, "--", "true"], env=env, capture_output=True, text=True, timeout=100)
        assert json.loads((results / "results.json").read_text())["status"] == status, done.stderr


# -- issue 18: masks, seccomp, the checks' uid ----------------------------------------------


def test_seccomp_program_per_machine():
    import struct

    from ssebench.daemon.seccomp import seccomp_program

    assert seccomp_program("riscv64") is None  # unknown numbers: no filter (docs/security.md)
    for machine in ("x86_64", "aarch64"):
        prog = seccomp_program(machine)
        assert prog is not None and len(prog) % 8 == 0
        ops = [struct.unpack("=HBBI", prog[i : i + 8]) for i in range(0, len(prog), 8)]
        assert ops[0] == (0x20, 0, 0, 4)  # first: load the architecture
        rets = {k for code, _, _, k in ops if code == 0x06}
        assert rets == {0x7FFF0000, 0x80000000, 0x00050001}  # allow, kill, EPERM
        for i, (code, jt, jf, _) in enumerate(ops):  # every jump lands inside the program
            assert code == 0x06 or i + 1 + max(jt, jf) < len(ops)


def test_bad_check_uid_is_refused_with_one_line(task_factory):
    if os.geteuid() != 0:
        pytest.skip("SSE_SANDBOX_UID applies to a root daemon")
    t = task_factory()
    for raw in ("0", "nobody", "65534:0"):
        done = run_ssebench(
            "daemon",
            "--task",
            str(t.file),
            "--socket",
            str(short_tempdir() / "d.sock"),
            env={"SSE_DIFFICULTY": "2", "SSE_SANDBOX_UID": raw},
        )
        assert (done.returncode, done.stderr) == (
            2,
            f"ssebench daemon: SSE_SANDBOX_UID must be UID or UID:GID, not 0 (checks never run as root), got '{raw}'\n",
        )


def test_checks_run_as_the_configured_uid(task_factory, daemon_factory):
    if os.geteuid() != 0:
        pytest.skip("SSE_SANDBOX_UID applies to a root daemon")
    t = task_factory(build="echo x > owned; id -u", functional="test -s owned && echo ok")
    d = daemon_factory(t.file, difficulty="2", env={"SSE_SANDBOX_UID": "4321:4322"})
    r = d.result()
    assert r["build"]["state"] == "passed" and r["functional"]["state"] == "passed"
    assert d.log(r["_run"], "build").startswith("65534\n")  # inside: always 65534
    import json
    import tempfile

    (space,) = [
        o.parent
        for o in Path(tempfile.gettempdir()).glob("ssebench-daemon-*/owner.json")
        if json.loads(o.read_text())["pid"] == d.proc.pid
    ]
    st = (space / "engine" / "mirror" / "owned").stat()
    assert (st.st_uid, st.st_gid) == (4321, 4322)  # outside: the configured uid


def test_own_files_of_a_checkout_are_the_whole_checkout():
    from ssebench.daemon.hostpaths import own_files

    repo = Path(__file__).resolve().parent.parent
    assert own_files() == [repo]


def test_masks_only_where_a_bound_folder_shows_the_path(tmp_path):
    from ssebench.daemon.sandbox import Sandbox

    box = Sandbox("bwrap", "0.11.0")
    box.hide("the task folder", tmp_path)  # under the private /tmp: nothing to mask
    box.hide("a file", "/usr/bin/env")
    box.hide("a folder", "/usr/share")
    args = box._mask_args()
    assert args == ["--ro-bind", "/dev/null", "/usr/bin/env", "--tmpfs", "/usr/share", "--remount-ro", "/usr/share"]
    env = box.environment(
        {
            "PATH": f"{tmp_path}/bin:/usr/bin",
            "X": f"{tmp_path}/x",
            "PWD": str(tmp_path),
            "SSE_TASK": "/t/task.toml",
            "OLDPWD": "/x",
        }
    )
    assert env == {"PATH": "/usr/bin", "PWD": "/sse/tree", "HOME": "/tmp", "TMPDIR": "/tmp"}
