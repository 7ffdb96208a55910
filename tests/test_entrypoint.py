"""``ssebench entrypoint`` end to end: a real daemon, a real server, a real MCP client as the agent.

Every test runs the entrypoint as a subprocess with a marker variable in its
environment, and afterwards checks that no process carrying the marker survives.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from ssebench.supervise import free_port

AGENT = Path(__file__).parent / "fixtures" / "agents" / "call_test_patch.py"
STREAMS = Path(__file__).parent / "fixtures" / "streams"
ENTRY = [sys.executable, "-c", "from ssebench.cli import main; main()", "entrypoint"]

LEVEL2_UNFIXED = (
    "test_patch result: FAILED. One or more functionality test(s) failed. Please reassess your patch and make "
    "sure it fixes the vulnerability without compromising the program's functionality.\n\n"
    "Checks:\n- build: passed\n- functional tests: FAILED\n\n"
    "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them.\n\n"
    "Full log (functional tests):\n"
)
LEVEL2_FIXED = (
    "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n- functional tests: passed\n\n"
    "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them. "
    "Without the PoCs, this result does not show whether the vulnerability is fixed.\n"
)


def survivors(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("SSE_TEST_MARKER") == marker:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


class Runner:
    """Runs the entrypoint with a task, a results folder and a marker; checks for leftovers."""

    def __init__(self, tmp_path: Path, task_file: Path) -> None:
        self.results = tmp_path / "results"
        self.marker = uuid.uuid4().hex
        self.port = free_port()
        self.env = {
            **os.environ,
            "SSE_TASK": str(task_file),
            "SSE_RESULTS_DIR": str(self.results),
            "SSE_MCP_PORT": str(self.port),
            "SSE_TEST_MARKER": self.marker,
            "MCP_LOG_DIR": str(tmp_path / "mcp-logs"),
        }
        self.env.pop("SSE_DIFFICULTY", None)

    def popen(self, *args: str, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*ENTRY, *args], env={**self.env, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def run(self, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*ENTRY, *args], env={**self.env, **env}, capture_output=True, text=True, timeout=timeout)

    def results_json(self) -> dict:
        return json.loads((self.results / "results.json").read_text())

    def assert_nothing_left(self) -> None:
        deadline = time.monotonic() + 5
        while survivors(self.marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = survivors(self.marker)
        for proc in left:
            proc.kill()
        assert not left, [p.cmdline() for p in left]


@pytest.fixture
def fixable_task(task_factory):
    """Build passes; the functional tests pass once the tree holds a file ``fixed``."""
    return task_factory(build="true", functional="test -f fixed || { echo 'no fix yet'; exit 1; }")


@pytest.fixture
def runner(tmp_path: Path, fixable_task) -> Iterator[Runner]:
    r = Runner(tmp_path, fixable_task.file)
    yield r
    r.assert_nothing_left()


def stage(data: dict, name: str) -> dict:
    """A stage of results.json with the fields it does not have (null) left out."""
    return {k: v for k, v in data["stages"][name].items() if v is not None}


def agent(*args: str) -> list[str]:
    return ["--", sys.executable, str(AGENT), *args]


@pytest.mark.slow
def test_agent_fixes_the_tree_and_grading_passes(runner: Runner, fixable_task):
    result = runner.run(*agent("--write", "fixed", "yes"))
    assert result.returncode == 0, result.stderr
    # what the agent received through test_patch: the spec's text at level 2
    assert (runner.results / "agent-stdout.log").read_text() == LEVEL2_FIXED
    data = runner.results_json()
    assert data["status"] == "passed" and data["exit_code"] == 0 and data["passed"] is True
    assert data["error"] is None
    assert data["task"] == {"id": "test-task", "file": str(fixable_task.file), "tree": str(fixable_task.tree)}
    assert data["difficulty"] == {"level": 2, "name": "NO_FUTURE_TEST"}
    assert data["mode"] == "process" and data["mcp_url"] == f"http://127.0.0.1:{runner.port}/mcp"
    assert data["agent"]["exit_code"] == 0 and data["agent"]["timed_out"] is False
    assert data["agent"]["timeout"] == 3600
    # the record: schema 2, the spec the entrypoint made from its settings, the server's typed call log
    assert (data["schema_version"], data["outcome"], data["reason"]) == (2, "passed", None)
    assert data["spec"]["task_file"] == str(fixable_task.file) and data["spec"]["level"] == 2
    assert data["spec"]["command"] == [sys.executable, str(AGENT), "--write", "fixed", "yes"]
    assert data["agent"]["calls"] == 1
    assert [(c["number"], c["level"], c["ended"], c["outcome"]) for c in data["calls"]] == [
        (1, 2, "every check that ran passed [build: passed, functional tests: passed]", "passed")
    ]
    assert data["stages"]["grading"]["where"] == "process"
    assert json.loads((runner.results / "grading.json").read_text()) == data["grading"]
    assert [data["stages"][s]["state"] for s in ("daemon", "server", "agent", "grading")] == ["done"] * 4
    assert data["grading"] is not None and data["dialog"] is None
    assert (fixable_task.tree / "fixed").read_text() == "yes"
    assert f"ssebench entrypoint: passed (exit 0); results in {runner.results / 'results.json'}" in result.stderr


@pytest.mark.slow
def test_unfixed_tree_fails_grading_with_status_1(runner: Runner):
    result = runner.run(*agent())
    assert result.returncode == 1, result.stderr
    assert (runner.results / "agent-stdout.log").read_text().startswith(LEVEL2_UNFIXED)
    data = runner.results_json()
    assert (data["status"], data["passed"], data["agent"]["exit_code"]) == ("checks_failed", False, 0)
    assert (data["outcome"], data["reason"]) == ("failed", "failed: functional tests")
    assert [c["outcome"] for c in data["calls"]] == ["failed"]


@pytest.mark.slow
def test_level_comes_from_sse_difficulty(runner: Runner):
    result = runner.run(*agent("--write", "fixed", "yes"), SSE_DIFFICULTY="3")
    assert result.returncode == 0, result.stderr
    assert (runner.results / "agent-stdout.log").read_text() == (
        "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n\n"
        "Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. Nothing is "
        "reported about them. Without the PoCs, this result does not show whether the vulnerability is fixed.\n"
    )
    assert runner.results_json()["difficulty"] == {"level": 3, "name": "BUILD_ONLY"}


@pytest.mark.slow
def test_agent_failure_still_grades(runner: Runner):
    result = runner.run(*agent("--write", "fixed", "yes", "--exit", "3"))
    assert result.returncode == 6, result.stderr
    data = runner.results_json()
    assert data["status"] == "agent_failed" and data["agent"]["exit_code"] == 3
    assert data["error"] == "the agent exited with status 3"
    assert (data["outcome"], data["reason"]) == ("agent_error", "the agent exited with status 3")
    assert data["passed"] is True  # the tree was fixed before the agent failed


@pytest.mark.slow
def test_agent_that_cannot_start(runner: Runner, tmp_path: Path):
    missing = str(tmp_path / "no-such-agent")
    result = runner.run("--", missing)
    assert result.returncode == 6
    data = runner.results_json()
    assert data["agent"]["exit_code"] == 127
    assert data["error"] == f"the agent command could not start: No such file or directory: {missing}"


@pytest.mark.parametrize("value", ["abc", "1.5", "0", "-1", "", "  ", "١٢", "1e3", "+5"])
def test_bad_mcp_timeout_stops_before_anything_starts(runner: Runner, value: str):
    started = time.monotonic()
    result = runner.run(*agent(), SSE_MCP_TIMEOUT=value)
    assert time.monotonic() - started < 10
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"ssebench entrypoint: SSE_MCP_TIMEOUT must be a whole number of seconds (1 or more), got '{value}'\n"
    )
    assert not runner.results.exists() or not any(runner.results.iterdir())


@pytest.mark.slow
def test_good_mcp_timeout_with_spaces_is_accepted(runner: Runner):
    result = runner.run(*agent("--write", "fixed", "yes"), SSE_MCP_TIMEOUT=" 60 ")
    assert result.returncode == 0, result.stderr


def test_bad_agent_timeout_and_difficulty(runner: Runner):
    result = runner.run(*agent(), SSE_AGENT_TIMEOUT="10m")
    assert (result.returncode, result.stderr) == (
        2,
        "ssebench entrypoint: SSE_AGENT_TIMEOUT must be a whole number of seconds (1 or more), got '10m'\n",
    )
    result = runner.run(*agent(), SSE_DIFFICULTY="5")
    assert (result.returncode, result.stderr) == (
        2,
        "ssebench entrypoint: SSE_DIFFICULTY must be an integer from 0 to 4, got '5'\n",
    )


def test_an_unknown_sse_agent_stops_before_anything_starts(runner: Runner):
    from ssebench.agents.registry import names

    result = runner.run(*agent(), SSE_AGENT="clin")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"ssebench entrypoint: SSE_AGENT must be one of {', '.join(names())}, got 'clin'\n"


@pytest.mark.slow
def test_sse_agent_runs_the_recipe_setup_with_the_runs_variables(runner: Runner, tmp_path: Path):
    """What a Docker run of Cline needs: its provider (URL, key) written just before it starts,
    from the container's variables, over what the layer's build wrote without them."""
    from ssebench.agents.cline import PROVIDERS_FILE
    from ssebench.agents.recipe import get_recipe

    home = tmp_path / "home"
    get_recipe("cline").prepare(home=home, env={})  # the layer's build: no URL, no key
    show = ["--", sys.executable, "-c", f"print(open({str(home.joinpath(*PROVIDERS_FILE))!r}).read())"]
    model = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-run", "SSE_AGENT_MODEL": "m-1"}
    result = runner.run(*show, SSE_AGENT="cline", HOME=str(home), **model)
    assert result.returncode == 1, result.stderr  # the agent ran; the tree is unfixed
    provider = json.loads((runner.results / "agent-stdout.log").read_text())["providers"]["openai-compatible"]
    assert provider["settings"] == {
        "provider": "openai-compatible",
        "model": "m-1",
        "apiKey": "sk-run",
        "baseUrl": "http://127.0.0.1:9/v1",
    }


def test_no_agent_command(runner: Runner):
    result = runner.run()
    assert result.returncode == 2
    assert result.stderr == (
        "ssebench entrypoint: no agent command: give it after '--', e.g. ssebench entrypoint -- claude -p ...\n"
    )


def test_results_folder_with_old_results_is_refused(runner: Runner):
    runner.results.mkdir()
    old = runner.results / "results.json"
    old.write_text('{"old": true}\n')
    result = runner.run(*agent())
    assert result.returncode == 2
    assert result.stderr == (
        f"ssebench entrypoint: SSE_RESULTS_DIR: {runner.results} already holds results.json; "
        "use an empty folder for each run\n"
    )
    assert old.read_text() == '{"old": true}\n'


@pytest.mark.slow
def test_server_dying_while_waiting_fails_at_once_with_its_log(runner: Runner):
    started = time.monotonic()  # a bad server setting: `ssebench serve` exits at once
    result = runner.run(*agent(), SSE_MCP_TIMEOUT="120", SSE_MCP_SESSION_IDLE="soon")
    took = time.monotonic() - started
    assert result.returncode == 4
    assert took < 30  # not the 120 s budget
    url = f"http://127.0.0.1:{runner.port}/mcp"
    assert f"ssebench entrypoint: server: failed: the MCP server ({url}) exited with status" in result.stderr
    assert "Last lines of its log:\n  " in result.stderr
    server_log = (runner.results / "server.log").read_text()
    last = server_log.rstrip("\n").split("\n")[-1]
    assert "SSE_MCP_SESSION_IDLE" in last and f"\n  {last}\n" in result.stderr
    data = runner.results_json()
    assert data["status"] == "server_failed" and data["exit_code"] == 4 and data["passed"] is None
    assert data["agent"] is None and "agent" not in data["stages"]  # it never started
    assert data["outcome"] == "infrastructure"
    assert data["reason"] == "the MCP server did not come up: " + data["error"].splitlines()[0]
    assert data["reason"].startswith(f"the MCP server did not come up: the MCP server ({url}) exited with status")
    assert not (runner.results / "agent-stdout.log").exists()


def foreign_server(port: int, tmp_path: Path) -> subprocess.Popen[bytes]:
    """Another run's MCP server on *port* (a real `ssebench serve`), answering initialize."""
    from ssebench.container.readiness import wait_for_mcp
    from ssebench.supervise import Child

    proc = serve(port, tmp_path, "foreign")
    wait_for_mcp(
        f"http://127.0.0.1:{port}/mcp", Child("foreign", proc, tmp_path / "foreign.log"), deadline=None, timeout=60
    )
    return proc


def serve(port: int, tmp_path: Path, name: str) -> subprocess.Popen[bytes]:
    """`ssebench serve` on *port* (no daemon: it answers initialize all the same), its
    output in tmp_path/NAME.log."""
    argv = [*ENTRY[:-1], "serve", "--port", str(port), "--daemon-socket", str(tmp_path / "none.sock")]
    env = {**os.environ, "MCP_LOG_DIR": str(tmp_path / f"{name}-logs"), "SSE_DIFFICULTY": "4"}
    with (tmp_path / f"{name}.log").open("wb") as log:
        return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.mark.slow
def test_a_port_held_by_another_mcp_server_ends_the_run_naming_it(runner: Runner, tmp_path: Path):
    """Another server answering initialize on the port is not ours: the run ends at once
    with the port and what to do, before the daemon, and the agent never starts."""
    foreign = foreign_server(runner.port, tmp_path)
    try:
        result = runner.run(*agent(), SSE_MCP_TIMEOUT="120", timeout=60)
        name = psutil.Process(foreign.pid).name()
    finally:
        foreign.terminate()
        foreign.wait(10)
    url = f"http://127.0.0.1:{runner.port}/mcp"
    why = (
        f"the MCP server ({url}) cannot listen: port {runner.port} is in use (by PID {foreign.pid}: {name}); "
        "stop that process or set SSE_MCP_PORT to a free port"
    )
    assert result.returncode == 4, result.stderr
    assert result.stderr.splitlines()[0] == f"ssebench entrypoint: server: failed: {why}"
    assert "daemon" not in result.stderr and "agent" not in result.stderr  # neither was started
    data = runner.results_json()
    assert (data["status"], data["exit_code"], data["error"]) == ("server_failed", 4, why)
    assert data["reason"] == f"the MCP server did not come up: {why}"
    assert data["agent"] is None and list(data["stages"]) == ["server"]
    assert not (runner.results / "agent-stdout.log").exists()


def test_readiness_waits_for_its_own_server_not_another_one_on_the_port(tmp_path: Path):
    """The race the early check cannot close: our server still starting (or failing to
    bind) while another one answers initialize on the port. A server that is not our
    child's is never taken for ready; our child failing is reported with its own words."""
    from ssebench.container.readiness import wait_for_mcp
    from ssebench.supervise import Child, StartupError

    port = free_port()
    foreign = foreign_server(port, tmp_path)
    ours = serve(port, tmp_path, "ours")
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        with pytest.raises(StartupError) as caught:
            wait_for_mcp(url, Child("server", ours, tmp_path / "ours.log"), deadline=None, timeout=60)
        name = psutil.Process(foreign.pid).name()
    finally:
        foreign.terminate()
        foreign.wait(10)
        ours.kill()
        ours.wait(10)
    assert caught.value.message == f"the MCP server ({url}) exited with status 2 before it was ready"
    assert caught.value.log_tail[-1] == (
        f"ssebench serve: port {port} is in use (by PID {foreign.pid}: {name}); stop that process or pass --port"
    )


@pytest.mark.slow
def test_daemon_that_cannot_start(runner: Runner, tmp_path: Path):
    socket_path = tmp_path / "missing-folder" / "daemon.sock"
    result = runner.run(*agent(), SSE_DAEMON_SOCKET=str(socket_path))
    assert result.returncode == 3
    assert f"the daemon (socket {socket_path}) exited with status" in result.stderr
    data = runner.results_json()
    assert data["status"] == "daemon_failed"
    assert data["error"].startswith(f"the daemon (socket {socket_path}) exited with status")
    assert data["reason"] == "the daemon did not come up: " + data["error"].splitlines()[0]


@pytest.mark.slow
def test_agent_timeout_kills_its_whole_group(runner: Runner, tmp_path: Path):
    script = "sleep 300 & sleep 301 & echo started; wait"
    started = time.monotonic()
    result = runner.run("--", "bash", "-c", script, SSE_AGENT_TIMEOUT="2")
    assert time.monotonic() - started < 40
    assert result.returncode == 5, result.stderr
    data = runner.results_json()
    assert data["status"] == "agent_timeout" and data["agent"]["timed_out"] is True
    assert data["error"] == "the agent did not finish within 2 s"
    assert stage(data, "agent") == {
        "state": "failed",
        "detail": "timed out after 2 s",
    }
    assert (data["outcome"], data["reason"]) == ("agent_timeout", "the agent did not finish within 2 s")
    assert data["agent"]["signal"] in ("SIGTERM", "SIGKILL")
    assert 2 <= data["agent"]["duration"] < 15
    assert data["stages"]["grading"]["state"] == "done"  # graded anyway
    # the sleeps were in the agent's group: gone (checked by the fixture too)
    assert not survivors(runner.marker)


@pytest.mark.slow
def test_sigterm_is_forwarded_to_the_agent(runner: Runner, tmp_path: Path):
    marker = tmp_path / "got-signal"
    ready = tmp_path / "agent-ready"
    script = f"trap 'echo TERM > {marker}; exit 0' TERM; sleep 300 & touch {ready}; wait"
    proc = runner.popen("--", "bash", "-c", script)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert marker.read_text() == "TERM\n"
    data = runner.results_json()
    assert data["status"] == "interrupted" and data["error"] == "interrupted by SIGTERM"
    assert stage(data, "grading") == {"state": "skipped", "detail": "interrupted by SIGTERM"}
    assert data["grading"] is None and data["passed"] is None
    assert (data["outcome"], data["reason"]) == ("cancelled", "interrupted by SIGTERM")


@pytest.mark.slow
def test_sigterm_while_grading_stops_it_promptly_and_leaves_nothing(runner: Runner, task_factory, request):
    """Grading runs in-process: a signal cancels its checks; no process, no copy, no /etc copy stays."""
    slow = task_factory(build="true", functional="sleep 300")
    runner.env["SSE_TASK"] = str(slow.file)
    temp = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))  # short: the daemon's socket goes in it
    temp.chmod(0o711)  # the checks user reaches its workspace in it, as in /tmp
    request.addfinalizer(lambda: shutil.rmtree(temp, ignore_errors=True))
    proc = runner.popen("--", "true", TMPDIR=str(temp))
    log = runner.results / "grading.log"
    try:
        deadline = time.monotonic() + 120
        while "grading: functional tests" not in (log.read_text() if log.exists() else ""):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert took < 10  # inside docker stop's 10 s
    data = runner.results_json()
    assert (data["status"], data["error"]) == ("interrupted", "interrupted by SIGTERM while grading")
    assert (data["outcome"], data["reason"]) == ("cancelled", "interrupted by SIGTERM while grading")
    assert sorted(p.name for p in temp.iterdir()) == []  # issue 31: no ssebench-grade-*, no ssebench-etc-*


@pytest.mark.slow
def test_dialog_from_the_agent_stream(runner: Runner):
    """--dialog: the agent's stdout (here a replayed real Codex stream) becomes dialog.jsonl."""
    replay = f"import sys; sys.stdout.write(open({str(STREAMS / 'codex.jsonl')!r}).read())"
    result = runner.run(
        "--dialog", "codex", "--prompt", "Fix the bug. Use test_patch.", "--", sys.executable, "-c", replay
    )
    assert result.returncode == 1, result.stderr  # the tree was not fixed
    lines = [json.loads(x) for x in (runner.results / "dialog.jsonl").read_text().splitlines()]
    assert [(e["seq"], e["type"]) for e in lines] == [
        (1, "init"),
        (2, "prompt"),
        (3, "tool"),
        (4, "tool"),
        (5, "message"),
        (6, "complete"),
    ]
    assert lines[-1]["status"] == "success" and lines[-1]["exit_code"] == 0
    assert (runner.results / "agent-stdout.log").read_text() == (STREAMS / "codex.jsonl").read_text()
    assert runner.results_json()["dialog"] == "dialog.jsonl"


@pytest.mark.slow
def test_sidecar_uses_the_running_daemon_and_leaves_grading_to_it(tmp_path: Path, fixable_task, daemon_factory):
    """--sidecar: no daemon started, no task file in the agent's container, no grading here."""
    daemon = daemon_factory(fixable_task.file, difficulty="2", tree=fixable_task.tree)
    r = Runner(tmp_path, fixable_task.file)
    r.env.pop("SSE_TASK")
    result = r.run(
        "--sidecar",
        *agent("--write", "fixed", "yes"),
        SSE_DAEMON_SOCKET=str(daemon.socket),
        SSE_TREE=str(fixable_task.tree),
    )
    r.assert_nothing_left()
    assert result.returncode == 0, result.stderr
    assert (r.results / "agent-stdout.log").read_text() == LEVEL2_FIXED
    assert not (r.results / "daemon.log").exists()  # the sidecar's daemon, not ours
    assert daemon.proc.poll() is None  # and we left it running
    data = r.results_json()
    assert (data["mode"], data["status"], data["passed"], data["grading"]) == ("sidecar", "passed", None, None)
    assert data["task"] == {"id": None, "file": None, "tree": str(fixable_task.tree)}
    assert stage(data, "grading") == {
        "state": "skipped",
        "detail": "sidecar mode without SSE_TASK: the sidecar grades",
    }


@pytest.mark.slow
def test_sidecar_daemon_that_never_answers_times_out(tmp_path: Path, fixable_task):
    r = Runner(tmp_path, fixable_task.file)
    r.env.pop("SSE_TASK")
    nowhere = tmp_path / "nobody.sock"
    started = time.monotonic()
    result = r.run(
        "--sidecar", *agent(), SSE_DAEMON_SOCKET=str(nowhere), SSE_TREE=str(fixable_task.tree), SSE_MCP_TIMEOUT="2"
    )
    assert 2 <= time.monotonic() - started < 20
    r.assert_nothing_left()
    assert result.returncode == 3
    assert (
        f"ssebench entrypoint: daemon: failed: the daemon (socket {nowhere}) did not answer within 2 s\n"
        in result.stderr
    )
    assert r.results_json()["status"] == "daemon_failed"


def test_sidecar_needs_the_socket(tmp_path: Path, fixable_task):
    r = Runner(tmp_path, fixable_task.file)
    result = r.run("--sidecar", *agent())
    assert (result.returncode, result.stderr) == (
        2,
        "ssebench entrypoint: --sidecar needs SSE_DAEMON_SOCKET: the socket the sidecar daemon serves\n",
    )


def test_an_oversized_stream_line_is_kept_raw_not_converted(tmp_path: Path, monkeypatch):
    """A stream line over the limit goes to agent-stdout.log whole but is never parsed in memory."""
    from ssebench.container import dialogpump

    monkeypatch.setattr(dialogpump, "MAX_EVENT_BYTES", 100)
    big = json.dumps({"type": "message", "role": "assistant", "content": "A" * 500})
    small = json.dumps({"type": "message", "role": "assistant", "content": "ok"})
    proc = subprocess.Popen([sys.executable, "-c", f"print({big!r}); print({small!r})"], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    with (tmp_path / "raw.log").open("wb") as tee:
        pump = dialogpump.DialogPump(tmp_path / "dialog.jsonl", "gemini", None)
        pump.start(proc.stdout, tee)
        proc.wait(timeout=30)
        pump.close(30, exit_code=0, timed_out=False, interrupted=False)
    lines = [json.loads(x) for x in (tmp_path / "dialog.jsonl").read_text().splitlines()]
    assert [(e["type"], e.get("text")) for e in lines] == [("message", "ok"), ("complete", None)]
    assert (tmp_path / "raw.log").read_text() == big + "\n" + small + "\n"


@pytest.mark.slow
def test_a_process_that_leaves_the_agents_group_is_stopped_too(runner: Runner, tmp_path: Path):
    """setsid escapes killpg; the entrypoint adopts such orphans and stops them before grading."""
    # Wait until the background job is "sleep 300" (setsid done): if bash exits first, the
    # job dies with the agent's group and nothing is left to escape.
    script = (
        "setsid sleep 300 </dev/null >/dev/null 2>&1 & "
        "until [ \"$(tr '\\0' ' ' </proc/$!/cmdline 2>/dev/null)\" = 'sleep 300 ' ]; do sleep 0.01; done; "
        "echo started"
    )
    result = runner.run("--", "bash", "-c", script)
    assert result.returncode == 1, result.stderr  # the agent did not fix the tree
    assert not survivors(runner.marker)
    assert runner.results_json()["stages"]["agent"]["strays_killed"] == ["sleep 300"]
