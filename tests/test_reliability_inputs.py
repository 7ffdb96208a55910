"""Bad input never crashes with a traceback and never starts anything half-way (issue 11,
items 4, 5, 7, 8): entrypoint settings, the entrypoint under SIGTERM, the task loader,
the config writers. Real processes and real files throughout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssebench.container.processes import free_port
from ssebench.task import Task, TaskError, load_task

ENTRY = [sys.executable, "-c", "from ssebench.cli import main; main()", "entrypoint"]


def survivors(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("SSE_TEST_MARKER") == marker:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def entry_env(tmp_path: Path, task_file: Path, marker: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "SSE_TASK": str(task_file), "SSE_RESULTS_DIR": str(tmp_path / "results"),
           "SSE_MCP_PORT": str(free_port()), "SSE_TEST_MARKER": marker, "MCP_LOG_DIR": str(tmp_path / "mcp-logs")}
    env.pop("SSE_DIFFICULTY", None)
    env.update(extra)
    return env


def run_entry(tmp_path: Path, task_file: Path, *args: str, timeout: float = 60,
              **extra: str) -> subprocess.CompletedProcess[str]:
    marker = uuid.uuid4().hex
    result = subprocess.run([*ENTRY, *args], env=entry_env(tmp_path, task_file, marker, **extra),
                            capture_output=True, text=True, timeout=timeout)
    assert not survivors(marker)
    return result


def assert_refused_before_start(result: subprocess.CompletedProcess[str], tmp_path: Path, message: str) -> None:
    """Exit 2, one line naming the problem, no traceback, nothing started or written."""
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr == f"ssebench entrypoint: {message}\n"
    results = tmp_path / "results"
    assert not results.exists() or not any(results.iterdir())  # no daemon.log: nothing started


# --------------------------------------------------------------------------- item 4: settings


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("variable", "value", "message"), [
    ("SSE_MCP_HOST", "256.1.1.1",
     "SSE_MCP_HOST must be an IPv4 address (four numbers from 0 to 255) or a host name, got '256.1.1.1'"),
    ("SSE_MCP_HOST", "[::1", "SSE_MCP_HOST must be an IPv4 or IPv6 address or a host name, got '[::1'"),
    ("SSE_MCP_HOST", "localhost:99",
     "SSE_MCP_HOST must be an address without a port (give the port in SSE_MCP_PORT), got 'localhost:99'"),
    ("SSE_MCP_HOST", "local host", "SSE_MCP_HOST must be an IPv4 or IPv6 address or a host name, got 'local host'"),
    ("SSE_MCP_HOST", "fe80::1%eth0", "SSE_MCP_HOST must be an IPv4 or IPv6 address or a host name, "
                                     "got 'fe80::1%eth0'"),
    ("SSE_MCP_PORT", "99999", "SSE_MCP_PORT must be a TCP port from 1 to 65535, got '99999'"),
    ("SSE_MCP_PATH", "/mcp\nX-Evil: 1", "SSE_MCP_PATH must hold only URL path characters (letters, digits, "
                                        "-._~!$&'()*+,;=:@/ and %XX), got '/mcp\\nX-Evil: 1'"),
    ("SSE_MCP_PATH", "/a?b", "SSE_MCP_PATH must hold only URL path characters (letters, digits, "
                             "-._~!$&'()*+,;=:@/ and %XX), got '/a?b'"),
    ("SSE_MCP_PATH", "mcp", "SSE_MCP_PATH must start with '/', got 'mcp'"),
    ("SSE_TREE", "/tmp/a\nb", "SSE_TREE must be a path without control characters, got '/tmp/a\\nb'"),
    ("SSE_RESULTS_DIR", "/tmp/r\tx", "SSE_RESULTS_DIR must be a path without control characters, got '/tmp/r\\tx'"),
    ("MCP_LOG_DIR", "/tmp/l\nx", "MCP_LOG_DIR must be a path without control characters, got '/tmp/l\\nx'"),
    ("SSE_DAEMON_SOCKET", "/tmp/" + "s" * 120, "SSE_DAEMON_SOCKET is 125 bytes long; a Unix socket path may have "
                                               f"at most 107, got '/tmp/{'s' * 120}'"),
])
def test_malformed_setting_stops_before_anything_starts(tmp_path: Path, task_factory, variable: str, value: str,
                                                        message: str) -> None:
    task = task_factory()
    result = run_entry(tmp_path, task.file, "--", "true", **{variable: value})
    assert_refused_before_start(result, tmp_path, message)


@pytest.mark.timeout(60)
def test_a_path_setting_that_is_not_utf8_is_refused(tmp_path: Path, task_factory) -> None:
    task = task_factory()
    env = {k.encode(): v.encode() for k, v in entry_env(tmp_path, task.file, uuid.uuid4().hex).items()}
    env[b"SSE_TREE"] = b"/tmp/\xff"
    result = subprocess.run([*ENTRY, "--", "true"], env=env, capture_output=True, text=True, timeout=50)
    assert_refused_before_start(result, tmp_path, "SSE_TREE must be a path in UTF-8, got b'/tmp/\\xff'")


@pytest.mark.timeout(60)
def test_results_folder_that_cannot_be_created_is_a_setting_error(tmp_path: Path, task_factory) -> None:
    task = task_factory()
    blocker = tmp_path / "file"
    blocker.write_text("not a folder\n")
    result = run_entry(tmp_path, task.file, "--", "true", SSE_RESULTS_DIR=str(blocker / "results"))
    assert (result.returncode, result.stderr) == (
        2, f"ssebench entrypoint: SSE_RESULTS_DIR: cannot create '{blocker / 'results'}': Not a directory\n")
    assert blocker.read_text() == "not a folder\n"


def test_ipv6_and_bracketed_hosts_make_a_valid_url() -> None:
    from ssebench.container.settings import from_environment

    assert from_environment({"SSE_MCP_HOST": "::1"}).mcp_url == "http://[::1]:3000/mcp"
    assert from_environment({"SSE_MCP_HOST": "[::1]", "SSE_MCP_PORT": "8080"}).mcp_url == "http://[::1]:8080/mcp"
    assert from_environment({"SSE_MCP_HOST": "my-box.example"}).mcp_url == "http://my-box.example:3000/mcp"
    assert from_environment({"SSE_MCP_PATH": "/a/%20b"}).mcp_url == "http://127.0.0.1:3000/a/%20b"


# --------------------------------------------------------------------------- item 7: the task loader


def write_task(root: Path, body: bytes) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    file = root / "task.toml"
    file.write_bytes(body)
    return file


GOOD = b'id = "t"\nsource = "src"\n[build]\nrun = "true"\n'


def test_bom_task_is_accepted(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, b"\xef\xbb\xbf" + GOOD))
    assert (task.id, task.build.run) == ("t", "true")


@pytest.mark.parametrize(("body", "fault"), [
    (b"a = " + b"[" * 5000, "not valid TOML for a task: arrays or tables nested too deeply"),
    (b"a = " + b"{b = " * 3000, "not valid TOML for a task: arrays or tables nested too deeply"),
    (GOOD.replace(b'run = "true"', b'run = "true\\u0000; rm -rf x"'),
     "key 'build.run': a string must not contain control characters, found U+0000"),
    (GOOD.replace(b'run = "true"', b'run = """\ntrue\nmake\\u001b[2J\n"""'),
     "key 'build.run': a string must not contain control characters, found U+001B (line 2 of the value)"),
    (GOOD.replace(b'source = "src"', b'source = "s\\nrc"'),
     "key 'source': a path must not contain control characters, found U+000A"),
    (GOOD + b"timeout = 1" + b"0" * 400 + b"\n",
     "key 'build.timeout': must be at most 604800 seconds (a week), got a 401-digit number"),
    (b"\xef\xbb\xbf\xef\xbb\xbf" + GOOD, "not valid TOML: Invalid statement (at line 1, column 1)"),
])
def test_bad_task_gives_one_line(tmp_path: Path, body: bytes, fault: str) -> None:
    file = write_task(tmp_path, body)
    with pytest.raises(TaskError) as err:
        load_task(file)
    assert str(err.value) == f"{file}: {fault}"


def test_multi_line_run_with_tabs_is_fine(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, GOOD.replace(b'run = "true"', b'run = """\nif true; then\n\ttrue\nfi\n"""')))
    assert task.build.run == "if true; then\n\ttrue\nfi\n"


def test_oversized_task_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    file = write_task(tmp_path, GOOD + b"# " + b"x" * (2 * 1024 * 1024) + b"\n")
    with pytest.raises(TaskError) as err:
        load_task(file)
    assert str(err.value) == (f"{file}: the task file is larger than 1024 KiB; a task file names its PoCs and "
                              "diffs, it does not hold them")


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("body", "fault"), [
    (b"a = " + b"[" * 5000, "not valid TOML for a task: arrays or tables nested too deeply"),
    (GOOD.replace(b'run = "true"', b'run = "tr\\u0000ue"'),
     "key 'build.run': a string must not contain control characters, found U+0000"),
])
def test_entrypoint_refuses_bad_task_with_exit_2(tmp_path: Path, body: bytes, fault: str) -> None:
    file = write_task(tmp_path / "task", body)
    result = run_entry(tmp_path, file, "--", "true")
    assert_refused_before_start(result, tmp_path, f"{file}: {fault}")


@pytest.mark.timeout(60)
def test_entrypoint_runs_a_bom_task_past_the_loader(tmp_path: Path) -> None:
    """A BOM task loads: the entrypoint goes on to the next check (here: no agent command)."""
    file = write_task(tmp_path / "task", b"\xef\xbb\xbf" + GOOD)
    result = run_entry(tmp_path, file)
    assert (result.returncode, result.stderr) == (
        2, "ssebench entrypoint: no agent command: give it after '--', e.g. ssebench entrypoint -- claude -p ...\n")


toml_fragments = st.sampled_from([
    b'id = "t"\n', b'source = "src"\n', b"[build]\n", b'run = "true"\n', b"timeout = 5\n", b"[pocs]\n",
    b'files = ["x"]\n', b"[intent]\n", b'diff = "d"\n', b"[functional]\n", b"network = true\n", b"[", b"]",
    b"{", b"}", b'"', b"'''", b'"""', b"=", b"\x00", b"\xef\xbb\xbf", b"\xff", b"\n", b"1e999", b"-0",
    b"1979-05-27T07:32:00Z", b"\\u0000", b"\\uD800", b"a.b.c", b"#", b"\r\n", b"[[x]]\n", b"inf", b"nan",
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.one_of(st.binary(max_size=300), st.lists(toml_fragments, max_size=25).map(b"".join),
                      st.lists(toml_fragments, max_size=12).map(lambda parts: GOOD + b"".join(parts))))
def test_fuzzed_task_files_give_a_task_or_one_line(body: bytes) -> None:
    with tempfile.TemporaryDirectory() as root:
        file = write_task(Path(root), body)
        try:
            task = load_task(file)
        except TaskError as exc:
            message = str(exc)
            assert message.startswith(f"{file}: ") and "\n" not in message and "\r" not in message
        else:
            assert isinstance(task, Task)


# --------------------------------------------------------------------------- item 5: SIGTERM like docker stop


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_sigterm_with_an_agent_ignoring_term_finishes_inside_docker_stops_10s(tmp_path: Path, task_factory) -> None:
    """`docker stop`: SIGTERM, then SIGKILL 10 s later. The agent ignores TERM (so does its
    child); the entrypoint's one grace period must end, results.json be written and the
    entrypoint exit before that kill."""
    task = task_factory()
    ready = tmp_path / "agent-ready"
    marker = uuid.uuid4().hex
    script = f"trap '' TERM; sleep 300 & touch {ready}; while :; do wait; done"
    proc = subprocess.Popen([*ENTRY, "--", "bash", "-c", script], env=entry_env(tmp_path, task.file, marker),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed_by_docker = False
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the agent never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        try:
            _, stderr = proc.communicate(timeout=10)  # what docker stop waits by default
        except subprocess.TimeoutExpired:
            killed_by_docker = True
            proc.kill()
            _, stderr = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not killed_by_docker, "the entrypoint was still running 10 s after SIGTERM"
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    assert (data["status"], data["error"]) == ("interrupted", "interrupted by SIGTERM")
    assert data["agent"]["signal"] == "SIGKILL"  # it ignored TERM: killed after the grace
    assert data["stages"]["grading"] == {"state": "skipped", "detail": "interrupted by SIGTERM"}
    deadline = time.monotonic() + 5
    while survivors(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not survivors(marker)
