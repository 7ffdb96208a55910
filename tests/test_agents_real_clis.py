"""The real agent CLIs read what `ssebench agents install` wrote, next to the user's own
settings and comments, with the URL and the timeout in their units; and after uninstall the
server is gone. (Whether they then call test_patch is proven in tests/e2e/.)

Uses engineer D's pinned CLIs from npm (tests/e2e/conftest.py: ``install_clis``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import clean_env, install_clis

pytestmark = [pytest.mark.e2e]

SSEBENCH = str(Path(sys.executable).with_name("ssebench"))
URL = "http://127.0.0.1:9/mcp"  # nothing listens there: the CLIs only read the config


@pytest.fixture(scope="module")
def bin_dir() -> Path:
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm/node not found on PATH: the agent CLIs cannot be installed here")
    return install_clis(lambda line: print(line, file=sys.stderr))


@pytest.fixture
def env(tmp_path: Path, bin_dir: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {**clean_env(home, bin_dir), "GEMINI_CLI_TRUST_WORKSPACE": "true"}


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)


def install(agent: str, env: dict[str, str], cwd: Path, *extra: str) -> None:
    done = run([SSEBENCH, "agents", "install", agent, "--url", URL, "--timeout", "1234", *extra], env, cwd)
    assert done.returncode == 0, done.stderr


def uninstall(agent: str, env: dict[str, str], cwd: Path) -> None:
    done = run([SSEBENCH, "agents", "uninstall", agent], env, cwd)
    assert done.returncode == 0, done.stderr


def test_claude_reads_url_and_timeout_in_ms(env: dict[str, str], tmp_path: Path) -> None:
    home = Path(env["HOME"])
    (home / ".claude.json").write_text(
        '{\n  "numStartups": 3,\n  "mcpServers": {\n    "other": '
        '{"type": "http", "url": "http://127.0.0.1:8/mcp"}\n  }\n}\n'
    )
    install("claude", env, tmp_path)
    shown = run(["claude", "mcp", "get", "ssebench"], env, tmp_path).stdout
    assert f"URL: {URL}" in shown
    assert "Timeout: 1234000ms" in shown
    assert "Type: http" in shown
    uninstall("claude", env, tmp_path)
    assert "ssebench" not in run(["claude", "mcp", "list"], env, tmp_path).stdout


def test_codex_reads_the_table_with_its_timeouts(env: dict[str, str], tmp_path: Path) -> None:
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('# mine\nmodel = "o4-mini"  # keep\n\n[mcp_servers.other]\nurl = "http://127.0.0.1:8/mcp"\n')
    install("codex", env, tmp_path)
    done = run(["codex", "mcp", "get", "ssebench", "--json"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    server = json.loads(done.stdout)
    assert server["transport"]["type"] == "streamable_http"
    assert server["transport"]["url"] == URL
    assert (server["tool_timeout_sec"], server["startup_timeout_sec"]) == (1234, 300)
    uninstall("codex", env, tmp_path)
    listed = run(["codex", "mcp", "list"], env, tmp_path).stdout
    assert "other" in listed and "ssebench" not in listed


def test_gemini_reads_a_commented_settings_file(env: dict[str, str], tmp_path: Path) -> None:
    settings = Path(env["HOME"]) / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        '// my settings\n{\n  "ui": {"hideBanner": true}, // trailing comment\n  /* block */\n'
        '  "mcpServers": {\n    "other": {"httpUrl": "http://127.0.0.1:8/mcp"}\n  }\n}\n'
    )
    install("gemini", env, tmp_path)
    listed = run(["gemini", "mcp", "list"], env, tmp_path)
    assert f"ssebench: {URL} (http)" in listed.stdout + listed.stderr
    assert "other: http://127.0.0.1:8/mcp (http)" in listed.stdout + listed.stderr


def test_opencode_reads_a_jsonc_file(env: dict[str, str], tmp_path: Path) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "opencode" / "opencode.jsonc"
    config.parent.mkdir(parents=True)
    config.write_text('{\n  // opencode settings\n  "$schema": "https://opencode.ai/config.json",\n}\n')
    install("opencode", env, tmp_path)
    listed = run(["opencode", "mcp", "list"], env, tmp_path)
    out = listed.stdout + listed.stderr
    assert "ssebench" in out and URL in out
    assert "1 server(s)" in out


def test_qwen_lists_the_entry_beside_the_users_server(env: dict[str, str], tmp_path: Path) -> None:
    settings = Path(env["HOME"]) / ".qwen" / "settings.json"
    settings.parent.mkdir()
    original = '{\n  // mine\n  "mcpServers": {"other": {"httpUrl": "http://127.0.0.1:8/mcp"}}\n}\n'
    settings.write_text(original)
    install("qwen", env, tmp_path)
    entry = json.loads(settings.read_text().replace("  // mine\n", ""))["mcpServers"]["ssebench"]
    assert entry == {"httpUrl": URL, "timeout": 1_234_000, "trust": True, "alwaysLoadTools": True}
    listed = run(["qwen", "mcp", "list"], env, tmp_path)
    out = listed.stdout + listed.stderr
    assert "other: http://127.0.0.1:8/mcp (http)" in out
    assert f"ssebench: {URL} (http)" in out
    uninstall("qwen", env, tmp_path)
    # qwen itself rewrote the file when it read it (it adds "$version" and reflows it), so
    # the check is that only our entry went: the user's comment and server stay
    left = settings.read_text()
    assert "// mine" in left and '"other"' in left and "ssebench" not in left
    assert "ssebench" not in (lambda p: p.stdout + p.stderr)(run(["qwen", "mcp", "list"], env, tmp_path))


def test_kilo_reads_a_jsonc_file_with_its_timeout(env: dict[str, str], tmp_path: Path) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "kilo" / "kilo.jsonc"
    config.parent.mkdir(parents=True)
    config.write_text('{\n  // kilo settings\n  "$schema": "https://app.kilo.ai/config.json",\n}\n')
    install("kilo", env, tmp_path)
    assert "// kilo settings" in config.read_text()
    kilo_env = {**env, "KILO_NO_DAEMON": "1", "KILO_DISABLE_AUTOUPDATE": "1", "KILO_DISABLE_MODELS_FETCH": "1"}
    listed = run(["kilo", "mcp", "list"], kilo_env, tmp_path)
    out = listed.stdout + listed.stderr
    assert "ssebench" in out and URL in out, out
    # `kilo debug config` prints the configuration Kilo resolved, as JSON
    resolved = run(["kilo", "debug", "config"], kilo_env, tmp_path).stdout
    mcp = json.loads(resolved[resolved.index("{") :])["mcp"]
    assert mcp["ssebench"] == {"type": "remote", "url": URL, "enabled": True, "timeout": 1234000}
    uninstall("kilo", env, tmp_path)
    assert "ssebench" not in run(["kilo", "mcp", "list"], kilo_env, tmp_path).stdout


def test_cline_finds_the_entry_and_keeps_its_timeout(env: dict[str, str], tmp_path: Path) -> None:
    """Cline CLI has no list or get command (``cline config`` needs a terminal): its own
    ``mcp add`` rewrites the file around the entry, and ``mcp remove`` finds it by name."""
    cline_env = {**env, "CLINE_NO_AUTO_UPDATE": "1"}
    config = Path(env["HOME"]) / ".cline" / "data" / "settings" / "cline_mcp_settings.json"
    install("cline", env, tmp_path)
    added = run(
        ["cline", "mcp", "add", "other", "http://127.0.0.1:8/mcp", "--transport", "streamableHttp", "--yes", "--json"],
        cline_env,
        tmp_path,
    )
    assert json.loads(added.stdout)["status"] == "installed", added.stderr
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["ssebench"] == {"transport": {"type": "streamableHttp", "url": URL}, "timeout": 1234}
    removed = run(["cline", "mcp", "remove", "ssebench", "--json"], cline_env, tmp_path)
    assert json.loads(removed.stdout) == {"name": "ssebench", "status": "uninstalled"}, removed.stderr
    assert list(json.loads(config.read_text())["mcpServers"]) == ["other"]
