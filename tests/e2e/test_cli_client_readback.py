"""Register-only clients read back by their own CLI: what `ssebench agents install` writes is
what the client's own program sees, and uninstall gives back the bytes it found.

- GitHub Copilot CLI (`@github/copilot`): `copilot mcp get NAME` / `copilot mcp list --json`
  read ~/.copilot/mcp-config.json offline (no login needed for these commands);
- MCPorter (`mcporter`): `mcporter config get NAME --json` reads ~/.mcporter/mcporter.json and
  ./config/mcporter.json, and `mcporter call NAME.test_patch` calls the real server with it;
- the stdio bridge of the stdio-only clients (Witsy, Tome, Claude Desktop...): their entry,
  `npx -y mcp-remote URL`, written into MCPorter's file (a stdio entry of the same shape), is
  started by MCPorter and carries the call to the real server.

Both are pinned in configs/client-clis/ (not the agents' pin file: ssebench does not drive
them) and installed once per run into the shared cache (tests/e2e/conftest.py). Each test has
its own HOME; Copilot's unpacked program is shared through one XDG_CACHE_HOME.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ssebench.server.stack import running_stack
from tests.e2e.conftest import REPO, SSEBENCH, clean_env, copy_task, install_clis, run_group
from tests.e2e.expected import DEMO_FIX, DEMO_TASK, level0_all_passed, poc_count

pytestmark = pytest.mark.e2e

CLIENT_PINS = REPO / "configs" / "client-clis"
URL = "http://127.0.0.1:3999/mcp"
COMMENTED = (
    '{\n  // mine\n  "mcpServers": {\n    "other": {"type": "http", "url": "http://other/mcp"}, // keep\n  },\n}\n'
)


@pytest.fixture(scope="session")
def client_clis() -> tuple[Path, Path]:
    """(node_modules/.bin with copilot and mcporter, the XDG cache Copilot unpacks itself into)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm/node not found on PATH: the client CLIs cannot be installed")
    from filelock import FileLock

    bins = ("copilot", "mcporter", "mcp-remote")
    bin_dir = install_clis(lambda line: print(line, file=sys.stderr), pins=CLIENT_PINS, bins=bins)
    cache = bin_dir.parent.parent / "xdg-cache"
    with FileLock(str(cache) + ".lock"):  # the first run unpacks Copilot (~10 s); later ones reuse it
        home = Path(tempfile.mkdtemp(prefix="sse-copilot-"))
        try:
            subprocess.run([str(bin_dir / "copilot"), "--version"], env=_env(home, bin_dir, cache), check=True,
                           capture_output=True, timeout=300)  # fmt: skip
        finally:
            shutil.rmtree(home, ignore_errors=True)
    return bin_dir, cache


def _env(home: Path, bin_dir: Path, cache: Path) -> dict[str, str]:
    """clean_env without the variables that would point these two elsewhere (COPILOT_HOME...)."""
    env = {k: v for k, v in clean_env(home, bin_dir).items() if not k.startswith(("COPILOT_", "MCPORTER_"))}
    env.update(XDG_CACHE_HOME=str(cache), COPILOT_AUTO_UPDATE="false")
    return env


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"{argv}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _ssebench(env: dict[str, str], cwd: Path, *args: str) -> str:
    return _run([SSEBENCH, "agents", *args], env, cwd)


def test_copilot_reads_the_entry_and_its_timeout(client_clis: tuple[Path, Path], tmp_path: Path) -> None:
    bin_dir, cache = client_clis
    home = tmp_path / "home"
    config = home / ".copilot" / "mcp-config.json"
    config.parent.mkdir(parents=True)
    config.write_text(COMMENTED)
    env = _env(home, bin_dir, cache)
    copilot = str(bin_dir / "copilot")

    _ssebench(env, tmp_path, "install", "copilot", "--url", URL)
    assert _run([copilot, "mcp", "get", "ssebench"], env, tmp_path) == (
        "ssebench\n"
        "  Status: Enabled\n"
        "  Type: http\n"
        f"  URL: {URL}\n"
        "  Tools: * (all)\n"
        "  Timeout: 3600000ms\n"
        "  Source: User\n"
    )
    listed = json.loads(_run([copilot, "mcp", "list", "--json"], env, tmp_path))["mcpServers"]
    assert sorted(listed) == ["other", "ssebench"]  # the user's server and its comments survived the edit

    _ssebench(env, tmp_path, "uninstall", "copilot")
    assert config.read_text() == COMMENTED
    assert sorted(json.loads(_run([copilot, "mcp", "list", "--json"], env, tmp_path))["mcpServers"]) == ["other"]


def test_mcporter_reads_both_scopes(client_clis: tuple[Path, Path], tmp_path: Path) -> None:
    bin_dir, cache = client_clis
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = _env(home, bin_dir, cache)
    mcporter = str(bin_dir / "mcporter")

    _ssebench(env, project, "install", "mcporter", "--url", URL)
    _ssebench(env, project, "install", "mcporter", "--scope", "project", "--name", "sse-project", "--url", URL)
    for name, path in (
        ("ssebench", home / ".mcporter" / "mcporter.json"),
        ("sse-project", project / "config" / "mcporter.json"),
    ):
        got = json.loads(_run([mcporter, "config", "get", name, "--json"], env, project))
        assert (got["name"], got["transport"], got["baseUrl"], got["source"]["path"]) == (name, "http", URL, str(path))

    _ssebench(env, project, "uninstall", "mcporter", "--scope", "project", "--name", "sse-project")
    _ssebench(env, project, "uninstall", "mcporter")
    assert not (project / "config").exists() and not (home / ".mcporter").exists()  # all ssebench had created


def _mcporter_call(
    bin_dir: Path, cache: Path, workdir: Path, install: tuple[str, ...], config: tuple[str, ...] = ()
) -> dict:
    """``ssebench agents install *install --url URL`` into a fresh HOME, then ``mcporter
    [*config] call ssebench.test_patch`` on the real stack (the demo task, fixed, level 0)."""
    task = copy_task(DEMO_TASK, workdir / "task", fix=DEMO_FIX)
    home = workdir / "home"
    home.mkdir(mode=0o700)
    env = _env(home, bin_dir, cache)
    env["MCPORTER_CALL_TIMEOUT"] = "3600000"  # what `agents show mcporter` tells users to set
    env["npm_config_offline"] = "true"  # npx must find the pinned mcp-remote, not the registry
    stack_dir = Path(tempfile.mkdtemp(prefix="sse-e2e-", dir="/tmp"))
    try:
        with running_stack(task, stack_dir, tree=task.parent / "src", difficulty="0", env=env) as stack:
            _ssebench(env, home, "install", *install, "--url", stack.url)
            proc = run_group(
                [str(bin_dir / "mcporter"), *config, "call", "ssebench.test_patch", "--output", "json"],
                env=env,
                cwd=home,
                timeout=180,
            )
    finally:
        shutil.rmtree(stack_dir, ignore_errors=True)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout)


def test_mcporter_calls_test_patch_through_the_installed_entry(client_clis: tuple[Path, Path], tmp_path: Path) -> None:
    """The written entry reaches the real server: mcporter's call gets the spec's exact text."""
    result = _mcporter_call(*client_clis, tmp_path, ("mcporter",))
    assert result["content"] == [{"type": "text", "text": level0_all_passed(poc_count(DEMO_TASK))}]


def test_the_bridged_entry_carries_the_call(client_clis: tuple[Path, Path], tmp_path: Path) -> None:
    """A stdio-only client's entry (``npx -y mcp-remote URL``), started by a real stdio client,
    gets test_patch's exact text from the real server. Claude Desktop's: the bridged rows of
    agents/generic/bridged.py write the same entry (test_agents_registry checks that)."""
    bin_dir, cache = client_clis
    # MCPorter starts a stdio server in its config file's folder: one of ours below the pins'
    # folder, so that npx finds the pinned mcp-remote there (offline) instead of fetching it
    folder = Path(tempfile.mkdtemp(prefix="bridge-", dir=bin_dir.parent.parent))
    try:
        mcporter_file = folder / "mcporter.json"
        install = ("claude-desktop", "--file", str(mcporter_file))
        result = _mcporter_call(bin_dir, cache, tmp_path, install, ("--config", str(mcporter_file)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert result["content"] == [{"type": "text", "text": level0_all_passed(poc_count(DEMO_TASK))}]
