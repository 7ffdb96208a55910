"""The README's manual flow, as a user types it: ``ssebench up`` + ``claude mcp add``.

Issue 3 is done when ``claude mcp add ssebench http://localhost:3000/mcp --transport http
--scope user`` against ``ssebench up`` works for a real client. Here, with the real Claude
Code CLI in a private HOME and only the port changed: ``ssebench up`` on a copy of the
example task at level 2 (a real process in its own session, as from a terminal), ``up``
suggests ``ssebench agents install claude --url`` with its actual URL (issue 12: that
one sets a tool timeout), the spec's line is run as typed, ``claude mcp get`` reports the entry
connected, a headless run by Claude's run recipe against the scripted Anthropic model hands
the model the spec's level-2 text verbatim, and Ctrl-C (SIGINT to up's process group) ends
``up`` with status 0 leaving no process and no private socket folder behind.

Unlike tests/e2e/test_cli_agents.py, nothing here goes through ``ssebench agents install``
or ``running_stack``: the entry is the one ``claude mcp add`` writes (no ``timeout`` key),
the URL says ``localhost`` (not 127.0.0.1), and the server runs inside ``up``.
"""

from __future__ import annotations

import os
import shlex
import signal
import stat
import subprocess
import uuid
from pathlib import Path

import psutil
import pytest
import tomlkit

from ssebench.server.stack import free_port, start, stop, wait_server
from tests.e2e.conftest import SSEBENCH, AgentRun, clean_env, copy_task, read_server_log, run_group, run_recipe
from tests.e2e.expected import DEMO_TASK, LEVEL2_ALL_RAN_PASSED, assert_model_received, assert_one_call
from tests.helpers.daemon import assert_gone, marked_processes

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# issue 3's "Done when" line, word for word; only the port differs in the test
SPEC_LINE = "claude mcp add ssebench http://localhost:3000/mcp --transport http --scope user"
CLI_TIMEOUT = 240


def _socket_of(daemon: psutil.Process) -> Path:
    """The ``--socket`` path on the daemon's command line (``up`` picks it privately)."""
    argv = daemon.cmdline()
    return Path(argv[argv.index("--socket") + 1])


def test_claude_mcp_add_against_ssebench_up(agent_clis: Path, tmp_path: Path) -> None:
    task = copy_task(DEMO_TASK, tmp_path / "task")
    tree = task.parent / str(tomlkit.parse(task.read_text())["source"])
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    env = clean_env(home, agent_clis)
    port = free_port()
    line = SPEC_LINE.replace(":3000/", f":{port}/")
    marker = f"claude-mcp-add-{uuid.uuid4().hex}"  # inherited by everything up starts
    up_env = {**env, "SSE_DIFFICULTY": "2", "MCP_LOG_DIR": str(tmp_path / "mcp-logs"), "SSE_TEST_MARK": marker}
    up_out = tmp_path / "up.out"

    # 1. `ssebench up` from a terminal: its own session, serving until Ctrl-C
    with open(up_out, "xb") as out:
        up = start(
            [SSEBENCH, "up", "--task", str(task), "--port", str(port)],
            up_env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_server(f"http://127.0.0.1:{port}/healthz", up)
        printed = up_out.read_text()
        # up suggests the registration that sets a tool timeout; the spec's line works too
        assert f"\n  ssebench agents install claude --url http://localhost:{port}/mcp\n" in printed, printed
        children = psutil.Process(up.pid).children(recursive=True)
        daemons = [p for p in children if "daemon" in p.cmdline()]
        assert len(daemons) == 1, [p.cmdline() for p in children]
        sock_dir = _socket_of(daemons[0]).parent
        assert sock_dir.is_dir() and stat.S_IMODE(sock_dir.stat().st_mode) == 0o700, sock_dir
        assert {p.pid for p in marked_processes(marker)} >= {up.pid, daemons[0].pid}

        # 2. the spec's line, run as a user types it, into the private HOME
        add = run_group([str(agent_clis / "claude"), *shlex.split(line)[1:]], env=env, cwd=tree, timeout=60)
        assert add.returncode == 0, f"{add.stdout}\n{add.stderr}"
        assert f"Added HTTP MCP server ssebench with URL: http://localhost:{port}/mcp to user config" in add.stdout, (
            add.stdout
        )
        got = run_group(["claude", "mcp", "get", "ssebench"], env=env, cwd=tree, timeout=60)
        assert got.returncode == 0, f"{got.stdout}\n{got.stderr}"
        for expected in (
            "Scope: User config",
            "Status: ✔ Connected",
            "Type: http",
            f"URL: http://localhost:{port}/mcp",
        ):
            assert expected in got.stdout, got.stdout

        # 3. a headless run by Claude's run recipe, against the scripted model
        proc, seconds, model = run_recipe(
            "claude", mcp_url=f"http://localhost:{port}/mcp", home=home, env=env, cwd=tree, timeout=CLI_TIMEOUT
        )
        # up's output carries the server's log: one line per finished call (logged before
        # the reply went out, so it is there once the CLI is done)
        server = read_server_log(up_out)
        run = AgentRun(
            "claude", proc.returncode, proc.stdout, proc.stderr, seconds, model, server.builds, home, server.tail
        )
        assert_one_call(run)
        assert_model_received("claude", run, LEVEL2_ALL_RAN_PASSED)

        # 4. Ctrl-C: SIGINT to up's foreground process group
        os.killpg(up.pid, signal.SIGINT)
        assert up.wait(30) == 0, up_out.read_text(errors="replace")
    finally:
        stop(up)
    assert_gone(children)
    assert marked_processes(marker) == []
    assert not sock_dir.exists(), f"up left its socket folder behind: {sock_dir}"
