"""The commands: ``serve`` refusing a bad level, ``up`` serving until Ctrl-C, ``demo``."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from test_report import SPEC_BUILD_FAILED_2, SPEC_LEVEL_0, SPEC_LEVEL_2, SPEC_LEVEL_4, SPEC_REASONS
from test_server_support import VULN_P2, call_sync, set_markers, write_task

from ssebench.difficulty import Check
from ssebench.server.cli import _default_demo_task
from ssebench.server.stack import free_port, ssebench_argv, stop, wait_server
from tests.conftest import DEMO_TASK

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("raw", ["", " ", "5", "-1", "two", "2.0", "02", "+2", "\u0662", "0x2", "2 2"])
def test_serve_refuses_a_bad_difficulty_before_importing_fastmcp(raw: str) -> None:
    port = free_port()
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *ssebench_argv("serve", "--port", str(port))[1:]],
        env={**os.environ, "SSE_DIFFICULTY": raw},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    message = f"SSE_DIFFICULTY must be an integer from 0 to 4, got '{raw}'"
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert lines == [message]
    assert proc.stdout == ""
    # Nothing that binds a port was even loaded (what makes the refusal quick; its time is
    # not asserted: a loaded CI machine makes any bound flaky).
    assert not re.search(r"\| +(fastmcp|uvicorn|mcp)(\.|$)", proc.stderr, re.M)


def test_up_serves_until_ctrl_c_and_leaves_nothing(tmp_path: Path) -> None:
    task = write_task(tmp_path / "task")
    port = free_port()
    err = tmp_path / "up.err"
    with open(err, "xb") as err_file:
        proc = subprocess.Popen(
            ssebench_argv("up", "--task", str(task), "--port", str(port)),
            env={**os.environ, "SSE_DIFFICULTY": "2", "MCP_LOG_DIR": str(tmp_path / "logs")},
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
            start_new_session=True,
        )
    try:
        wait_server(f"http://127.0.0.1:{port}/healthz", proc)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "the daemon runs as a child of up"
        assert call_sync(f"http://127.0.0.1:{port}/mcp").text == SPEC_LEVEL_2
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(15) == 0
        out = proc.stdout.read() if proc.stdout else ""
        assert out == (
            f"ssebench: serving test_patch at http://localhost:{port}/mcp (difficulty 2, NO_FUTURE_TEST); "
            "Ctrl-C stops.\n"
            "Register it with Claude Code (with a one-hour tool timeout) with:\n"
            f"  ssebench agents install claude --url http://localhost:{port}/mcp\n"
            "(other agents: ssebench agents install --help)\n"
        )
        gone, alive = psutil.wait_procs(children, timeout=10)
        assert alive == []
    finally:
        stop(proc)
    # One line per call: level, outcome summary, duration; nothing about withheld checks.
    calls = [line for line in err.read_text().splitlines() if "ssebench.server.calls" in line]
    assert len(calls) == 1, err.read_text()
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ssebench.server.calls INFO test_patch call 1 \(level 2\): "
        r"every check that ran passed \[build: passed, functional tests: passed\] in \d+\.\d s",
        calls[0],
    )


def test_up_difficulty_sets_the_level_of_the_daemon_and_the_server(tmp_path: Path) -> None:
    """Issue 31: ``up --difficulty N`` is SSE_DIFFICULTY for both (the flag wins over the
    variable); level 0 asks the daemon for every check, which a daemon at 2 would refuse."""
    task = write_task(tmp_path / "task")
    port = free_port()
    proc = subprocess.Popen(
        ssebench_argv("up", "--task", str(task), "--port", str(port), "--difficulty", "0"),
        env={**os.environ, "SSE_DIFFICULTY": "2", "MCP_LOG_DIR": str(tmp_path / "logs")},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        wait_server(f"http://127.0.0.1:{port}/healthz", proc)
        assert call_sync(f"http://127.0.0.1:{port}/mcp").text == SPEC_LEVEL_0
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(15) == 0
        assert proc.stdout is not None
        assert proc.stdout.readline() == (
            f"ssebench: serving test_patch at http://localhost:{port}/mcp (difficulty 0, FULL_ASSISTANCE); "
            "Ctrl-C stops.\n"
        )
    finally:
        stop(proc)


@pytest.mark.parametrize("raw", ["7", "two", "", "02"])
def test_up_refuses_a_bad_difficulty_as_run_does(raw: str) -> None:
    port = free_port()
    up = subprocess.run(
        ssebench_argv("up", "--task", "none.toml", "--port", str(port), "--difficulty", raw),
        capture_output=True,
        text=True,
        timeout=60,
    )
    run = subprocess.run(
        ssebench_argv("run", "--task", str(DEMO_TASK), "--difficulty", raw, "--", "true"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (up.returncode, up.stdout) == (2, "")
    assert up.stderr == f"ssebench up: SSE_DIFFICULTY must be an integer from 0 to 4, got '{raw}'\n"
    assert run.stderr.replace("ssebench run:", "ssebench up:") == up.stderr


def test_up_help_names_the_variable() -> None:
    shown = subprocess.run(ssebench_argv("up", "--help"), capture_output=True, text=True, timeout=60).stdout
    words = " ".join(shown.split())
    assert (
        "Start the SDK daemon (private socket) and the test_patch server on one task, at the difficulty level "
        "--difficulty or SSE_DIFFICULTY says (default 2)." in words
    )
    assert (
        "--difficulty N SSE_DIFFICULTY for the daemon and the server, 0-4 (default: $SSE_DIFFICULTY, else 2)" in words
    )


@pytest.mark.parametrize("command", ["serve", "up"])
def test_a_busy_port_is_one_line_naming_its_holder(tmp_path: Path, command: str) -> None:
    task = write_task(tmp_path / "task")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        args = ["--task", str(task)] if command == "up" else []
        proc = subprocess.run(
            ssebench_argv(command, *args, "--port", str(port)),
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "SSE_DIFFICULTY": "2"},
        )
    assert proc.returncode == 2
    assert proc.stdout == ""
    name = psutil.Process().name()
    assert proc.stderr == (
        f"ssebench {command}: port {port} is in use (by PID {os.getpid()}: {name}); stop that process or pass --port\n"
    )


def test_serve_prints_a_start_line_and_warns_without_a_daemon(tmp_path: Path) -> None:
    port = free_port()
    sock = tmp_path / "nothing-here.sock"
    out, err = tmp_path / "serve.out", tmp_path / "serve.err"
    with open(out, "xb") as out_file, open(err, "xb") as err_file:
        proc = subprocess.Popen(
            ssebench_argv(
                "serve", "--port", str(port), "--daemon-socket", str(sock), "--log-dir", str(tmp_path / "logs")
            ),
            env={**os.environ, "SSE_DIFFICULTY": "3"},
            stdout=out_file,
            stderr=err_file,
            start_new_session=True,
        )
    try:
        wait_server(f"http://127.0.0.1:{port}/healthz", proc)
    finally:
        stop(proc)
    assert out.read_text() == (
        f"ssebench serve: test_patch at http://localhost:{port}/mcp (difficulty 3, BUILD_ONLY); daemon socket {sock}\n"
    )
    assert err.read_text().splitlines()[0] == (
        f"ssebench serve: warning: no daemon socket at {sock} yet; test_patch calls report an "
        "internal failure until `ssebench daemon` listens there"
    )


def test_up_with_a_bad_task_exits_with_the_daemons_message(tmp_path: Path) -> None:
    bad = tmp_path / "task.toml"
    bad.write_text('id = "x"\n')
    proc = subprocess.run(
        ssebench_argv("up", "--task", str(bad), "--port", str(free_port())),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert str(bad) in proc.stderr and "source" in proc.stderr


def test_up_with_a_missing_task_prints_one_line(tmp_path: Path) -> None:
    """The daemon's own reason, once: not followed by ``up``'s account of the daemon's exit."""
    proc = subprocess.run(
        ssebench_argv("up", "--task", "missing/task.toml", "--port", str(free_port())),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "SSE_DIFFICULTY": "2"},
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"{tmp_path / 'missing' / 'task.toml'}: the task file does not exist\n"


FIX_REMOVING_THE_BUG = """\
diff --git a/vuln-p2 b/vuln-p2
deleted file mode 100644
--- a/vuln-p2
+++ /dev/null
@@ -1 +0,0 @@
-x
"""


@pytest.mark.slow
def test_demo_shows_unfixed_and_fixed_results(tmp_path: Path) -> None:
    task = write_task(tmp_path / "task")
    set_markers(task.parent / "src", **{VULN_P2: True})
    (task.parent.with_name(task.parent.name + ".fix.patch")).write_text(FIX_REMOVING_THE_BUG)
    before = (task.parent / "src" / VULN_P2).read_bytes()
    proc = subprocess.run(
        ssebench_argv("demo", "--task", str(task), "--levels", "0"),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    unfixed, _, fixed = proc.stdout.partition("--- test_patch after applying task.fix.patch")
    assert "--- test_patch on the unfixed tree" in unfixed
    assert f"test_patch result: FAILED. {SPEC_REASONS[Check.POCS]}" in unfixed
    assert "- PoCs: FAILED (passed 1 of 2; stopped at the first that still triggers the bug)" in unfixed
    assert "test_patch result: every check passed." in fixed
    # The task's own tree is untouched.
    assert (task.parent / "src" / VULN_P2).read_bytes() == before


@pytest.mark.slow
def test_demo_on_the_example_task() -> None:
    task = _default_demo_task()
    assert task.is_file(), f"the example task is missing: {task}"
    proc = subprocess.run(ssebench_argv("demo"), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    sections = proc.stdout.split("======== difficulty level ")
    level2 = next(s for s in sections if s.startswith("2, NO_FUTURE_TEST"))
    level0 = next(s for s in sections if s.startswith("0, FULL_ASSISTANCE"))
    # At the default level the vulnerable tree passes everything it is shown...
    assert level2.count("test_patch result: every check that ran passed.") == 2
    # ...at level 0 the PoCs catch the bug, and the fix passes every check.
    unfixed0, _, fixed0 = level0.partition("--- test_patch after applying demo-overflow.fix.patch")
    assert f"test_patch result: FAILED. {SPEC_REASONS[Check.POCS]}" in unfixed0
    assert "test_patch result: every check passed." in fixed0


@pytest.mark.parametrize(
    ("level", "checks", "text", "expected", "outcome"),
    [
        (
            2,
            "build=passed functional=passed",
            SPEC_LEVEL_2,
            "every check that ran passed [build: passed, functional tests: passed]",
            "passed",
        ),
        (
            0,
            "build=passed pocs=passed:2/2 intent=passed functional=covered",
            SPEC_LEVEL_0,
            "every check passed [build: passed, PoCs: passed, intent tests: passed, functional tests: passed]",
            "passed",
        ),
        (4, "", SPEC_LEVEL_4, "no checks ran", "no_checks"),
        (
            2,
            "build=failed functional=not_run",
            SPEC_BUILD_FAILED_2,
            "FAILED [build: FAILED, functional tests: not run]",
            "failed",
        ),
    ],
)
def test_the_call_log_line_says_only_what_the_agent_was_told(
    level: int, checks: str, text: str, expected: str, outcome: str
) -> None:
    """The line is told from the states the call recorded, and they are those of the spec's text."""
    from ssebench.contract import CheckResult
    from ssebench.difficulty import LEVELS
    from ssebench.server import calllog
    from ssebench.server.report import LogSection, State, render

    results = []
    for item in checks.split():
        name, _, state = item.partition("=")
        state, _, counts = state.partition(":")
        passed, _, total = counts.partition("/")
        results.append(
            CheckResult(
                Check(name),
                State.PASSED if state == "covered" else State(state),
                pocs_passed=int(passed or 0),
                pocs_total=int(total or 0),
                covered_by_intent=state == "covered",
            )
        )
    log = LogSection(Check.BUILD, "<log>") if "build=failed" in checks else None
    assert render(LEVELS[level], results, log) == text
    assert calllog.summary(LEVELS[level], calllog._Ending(tuple(results))) == expected
    assert calllog.outcome(LEVELS[level], calllog._Ending(tuple(results))) == outcome  # the typed record's word


def test_the_call_log_line_of_an_internal_failure() -> None:
    from ssebench.difficulty import LEVELS
    from ssebench.server import calllog

    assert calllog.summary(LEVELS[2], calllog._Ending(internal=True)) == "internal failure"
    assert calllog.summary(LEVELS[2], calllog._Ending()) == "unexpected reply"
    assert calllog.outcome(LEVELS[2], calllog._Ending(internal=True)) == "internal_failure"
    assert calllog.outcome(LEVELS[2], calllog._Ending()) == "error"


def test_serve_refuses_a_calls_file_it_cannot_open_before_binding(tmp_path: Path) -> None:
    port = free_port()
    where = tmp_path / "missing" / "calls.jsonl"
    proc = subprocess.run(
        [*ssebench_argv("serve", "--port", str(port), "--calls-file", str(where))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"ssebench serve: --calls-file {where}: No such file or directory\n"
