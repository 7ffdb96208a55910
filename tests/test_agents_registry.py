"""The protocol's hooks: every bundled run recipe belongs to a registered client."""

from __future__ import annotations

from pathlib import Path

from ssebench.agents.base import Env, Scope
from ssebench.agents.registry import AGENTS as RECIPE_AGENTS
from ssebench.agents.registry import CLIENTS


def test_every_recipe_has_a_client_and_the_hook_finds_it() -> None:
    for name in RECIPE_AGENTS:
        recipe = CLIENTS[name].recipe()
        assert recipe is not None and recipe.agent == name
    assert [c.name for c in CLIENTS.values() if c.recipe() is None] == [
        "vscode",
        "cursor",
        "windsurf",
        "goose",
        "zed",
        "claude-desktop",
        "generic",
    ]


def test_timeouts_in_each_clients_unit() -> None:
    expected = {
        "claude": ("timeout", 3_600_000),
        "codex": ("tool_timeout_sec", 3600),
        "gemini": ("timeout", 3_600_000),
        "opencode": ("timeout", 3_600_000),
        "kilo": ("timeout", 3_600_000),
        "cline": ("timeout", 3600),
        "copilot": ("timeout", 3_600_000),
        "goose": ("timeout", 3600),
        "zed": ("timeout", 600),
    }
    from ssebench.agents.base import Settings

    for client in CLIENTS.values():
        entry = client.entry(Settings())
        if client.name in expected:
            key, value = expected[client.name]
            assert entry[key] == value
            assert client.timeout_of(entry) == (600 if client.name == "zed" else 3600)
        else:
            assert client.timeout_key is None and client.timeout_of(entry) is None


def test_paths_per_platform(tmp_path: Path) -> None:
    linux = Env(home=tmp_path, cwd=tmp_path / "w", vars={}, platform="linux")
    mac = Env(home=tmp_path, cwd=tmp_path / "w", vars={}, platform="darwin")
    assert (
        CLIENTS["claude-desktop"].config_path(Scope.USER, linux)
        == tmp_path / ".config" / "Claude" / "claude_desktop_config.json"
    )
    assert (
        CLIENTS["claude-desktop"].config_path(Scope.USER, mac)
        == tmp_path / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    )
    assert CLIENTS["vscode"].config_path(Scope.PROJECT, linux) == tmp_path / "w" / ".vscode" / "mcp.json"
    relative = Env(home=tmp_path, cwd=tmp_path, vars={"XDG_CONFIG_HOME": "relative/path"}, platform="linux")
    assert CLIENTS["goose"].config_path(Scope.USER, relative) == tmp_path / ".config" / "goose" / "config.yaml"


def test_the_records_name_their_heavy_parts_lazily() -> None:
    """Building every command's parser (argparse choices come from the records) imports no
    recipe, converter, format editor or FastMCP: they load when a run needs them."""
    import subprocess
    import sys

    code = "import sys; from ssebench.cli import build_parser; build_parser(); print('\\n'.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert "ssebench.agents.registry" in loaded
    heavy = [
        m
        for m in loaded
        if m.startswith(("fastmcp", "ssebench.dialog.convert", "ssebench.agents.formats"))
        or (m.endswith((".recipe", ".dialog")) and m != "ssebench.dialog")
    ]
    assert heavy == []
