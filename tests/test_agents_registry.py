"""The protocols: every bundled agent is one module whose record holds its registered client;
clients are rows of data or short modules, each class at most one project class deep."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssebench.agents.base import Env, Scope
from ssebench.agents.generic import bridged, rows
from ssebench.agents.registry import AGENTS as RECIPE_AGENTS
from ssebench.agents.registry import CLIENTS


def test_every_agent_holds_its_registered_client() -> None:
    for name, record in RECIPE_AGENTS.items():
        assert record.client is CLIENTS[name] and record.name == name
    assert [c.name for c in CLIENTS.values() if c.name not in RECIPE_AGENTS] == [
        "vscode",
        "cursor",
        "windsurf",
        "goose",
        "zed",
        "claude-desktop",
        *(c.name for c in rows.CLIENTS),
        *(c.name for c in bridged.CLIENTS),
        "generic",
    ]


def test_timeouts_in_each_clients_unit() -> None:
    expected = {
        "claude": ("timeout", 3_600_000),
        "codex": ("tool_timeout_sec", 3600),
        "gemini": ("timeout", 3_600_000),
        "opencode": ("timeout", 3_600_000),
        "qwen": ("timeout", 3_600_000),
        "kilo": ("timeout", 3_600_000),
        "cline": ("timeout", 3600),
        "copilot": ("timeout", 3_600_000),
        "goose": ("timeout", 3600),
        "zed": ("timeout", 600),
        "cline-vscode": ("timeout", 3600),
        "roo-code": ("timeout", 3600),
        "kiro": ("timeout", 3_600_000),
        "kimi-code": ("toolTimeoutMs", 3_600_000),
        "pi": ("timeout", 3600),
        "hermes": ("timeout", 3600),
        "mistral-vibe": ("tool_timeout_sec", 3600),
        "fast-agent": ("read_timeout_seconds", 3600),
        "code-puppy": ("read_timeout", 3600),
        "grok-build": ("tool_timeout_sec", 3600),
        "librechat": ("timeout", 3_600_000),
        "amazonq": ("timeout", 3_600_000),
        "fx": ("operation_timeout_ms", 3_600_000),
    }
    from ssebench.agents.base import ServerSettings

    for client in CLIENTS.values():
        entry = client.entry(ServerSettings())
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


def test_building_the_parsers_imports_nothing_heavy() -> None:
    """Building every command's parser (argparse choices come from the records, so every agent
    module is imported) imports no format editor, file layer, preflight, dialog pipeline or
    FastMCP: an agent's ``prepare`` imports the file layer when it runs."""
    import subprocess
    import sys

    code = "import sys; from ssebench.cli import build_parser; build_parser(); print('\\n'.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert "ssebench.agents.registry" in loaded and "ssebench.agents.nanocoder" in loaded
    heavy = [
        m
        for m in loaded
        if m.startswith(("fastmcp", "ssebench.dialog.convert", "ssebench.agents.formats", "ssebench.agents.files"))
        or m in ("ssebench.agents.recipe", "ssebench.agents.actions", "ssebench.agents.installs")
    ]
    assert heavy == []


def test_home_variables_move_the_user_config(tmp_path: Path) -> None:
    """COPILOT_HOME, KIMI_CODE_HOME, PI_CODING_AGENT_DIR, GROK_HOME and LIBRECHAT_CONFIG_DIR
    replace their folder; a relative value is ignored, as the clients ignore it."""
    moved = Env(
        home=tmp_path,
        cwd=tmp_path,
        vars={
            "COPILOT_HOME": str(tmp_path / "cp"),
            "KIMI_CODE_HOME": str(tmp_path / "km"),
            "PI_CODING_AGENT_DIR": str(tmp_path / "pi"),
            "GROK_HOME": "relative",
            "LIBRECHAT_CONFIG_DIR": str(tmp_path / "lc"),
        },
        platform="linux",
    )
    assert CLIENTS["copilot"].config_path(Scope.USER, moved) == tmp_path / "cp" / "mcp-config.json"
    assert CLIENTS["kimi-code"].config_path(Scope.USER, moved) == tmp_path / "km" / "mcp.json"
    assert CLIENTS["pi"].config_path(Scope.USER, moved) == tmp_path / "pi" / "mcp.json"
    assert CLIENTS["grok-build"].config_path(Scope.USER, moved) == tmp_path / ".grok" / "config.toml"
    assert CLIENTS["librechat"].config_path(Scope.USER, moved) == tmp_path / "lc" / "LibreChat" / "librechat.yaml"
    plain = Env(home=tmp_path, cwd=tmp_path / "w", vars={}, platform="linux")
    assert CLIENTS["copilot"].config_path(Scope.USER, plain) == tmp_path / ".copilot" / "mcp-config.json"
    assert CLIENTS["copilot"].config_path(Scope.PROJECT, plain) is None
    assert CLIENTS["roo-code"].config_path(Scope.PROJECT, plain) == tmp_path / "w" / ".roo" / "mcp.json"
    assert (
        CLIENTS["copilot"].describe_path(Scope.USER) == "~/.copilot/mcp-config.json (or $COPILOT_HOME/mcp-config.json)"
    )
    assert (
        CLIENTS["librechat"].describe_path(Scope.USER)
        == "~/LibreChat/librechat.yaml (or $LIBRECHAT_CONFIG_DIR/LibreChat/librechat.yaml)"
    )


def test_a_capped_timeout_is_cut_and_said() -> None:
    from ssebench.agents.base import ServerSettings

    roo = CLIENTS["roo-code"]
    assert roo.entry(ServerSettings(timeout=7200))["timeout"] == 3600
    assert roo.entry(ServerSettings(timeout=120))["timeout"] == 120
    assert roo.notes(ServerSettings(timeout=7200))[-1] == (
        "Roo Code allows at most 3600 s per call, so 7200 s is written as 3600 s: "
        "a test_patch call that takes longer fails in Roo Code."
    )
    assert len(roo.notes(ServerSettings())) == 1
    fx = CLIENTS["fx"]  # fx reads operation_timeout_ms as a u32 (ms) and refuses the file above it
    assert fx.entry(ServerSettings(timeout=10**7))["operation_timeout_ms"] == 4_294_967_000 <= 2**32 - 1
    assert fx.entry(ServerSettings(timeout=4_294_967))["operation_timeout_ms"] == 4_294_967_000
    kimi = CLIENTS["kimi-code"]  # Kimi Code's schema: toolTimeoutMs from 1 to 2147483647
    assert kimi.entry(ServerSettings(timeout=10**7))["toolTimeoutMs"] == 2_147_483_000 <= 2**31 - 1
    assert kimi.entry(ServerSettings())["toolTimeoutMs"] == 3_600_000


def test_bridged_clients_run_mcp_remote_with_their_timeout() -> None:
    from ssebench.agents.base import ServerSettings

    desktop = CLIENTS["claude-desktop"].entry(ServerSettings())
    for client in bridged.CLIENTS:  # the entry the e2e proves with a real call, plus a timeout key
        assert {k: v for k, v in client.entry(ServerSettings()).items() if k != client.timeout_key} == desktop
        assert client.bridged
    assert CLIENTS["amazonq"].entry(ServerSettings()) == {
        "command": "npx",
        "args": ["-y", "mcp-remote", "http://localhost:3000/mcp"],
        "timeout": 3_600_000,
    }
    remote = ServerSettings(url="http://10.0.0.2:3000/mcp")
    assert CLIENTS["witsy"].entry(remote) == {
        "command": "npx",
        "args": ["-y", "mcp-remote", "http://10.0.0.2:3000/mcp", "--allow-http"],
    }
    assert CLIENTS["witsy"].url_of(CLIENTS["witsy"].entry(remote)) == "http://10.0.0.2:3000/mcp"
    assert (
        CLIENTS["tome"]
        .notes(ServerSettings())[-1]
        .startswith(
            "Why a bridge: Tome starts only local (stdio) servers from its config, so the entry runs "
            "`npx -y mcp-remote URL`"
        )
    )


def _classes_here() -> list[type]:
    """Every class defined in a module of ssebench.agents or ssebench.dialog (all imported)."""
    import importlib
    import inspect
    import pkgutil

    import ssebench.agents
    import ssebench.dialog

    found = []
    for package in (ssebench.agents, ssebench.dialog):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            found += [c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == module.__name__]
    return found


def test_no_class_is_more_than_one_project_class_deep() -> None:
    """Agents share by composition (agents/shared/), never by subclassing another agent's class."""
    deep = {
        f"{c.__module__}.{c.__qualname__}": [
            b.__qualname__ for b in c.__mro__[1:] if b.__module__.startswith("ssebench")
        ]
        for c in _classes_here()
    }
    assert {name: bases for name, bases in deep.items() if len(bases) > 1} == {}
    assert deep["ssebench.agents.shared.claude_stream.ClaudeStreamJson"] == ["StreamConverter"]
    assert RECIPE_AGENTS["qwen"].reader is RECIPE_AGENTS["claude"].reader  # one parser, two names
    assert RECIPE_AGENTS["kilo"].reader is RECIPE_AGENTS["opencode"].reader
    assert RECIPE_AGENTS["kimi-cli"].reader is RECIPE_AGENTS["kimi-code"].reader  # one stream-json shape


def test_class_names_here_are_used_nowhere_else() -> None:
    """A class of agents/ or ssebench/dialog/ names one thing in ssebench/, server/ and agents/."""
    import ast

    root = Path(__file__).resolve().parent.parent
    defined: dict[str, list[str]] = {}
    for folder in ("ssebench", "server", "agents"):
        for path in (root / folder).rglob("*.py"):
            if any((root / p).is_symlink() for p in path.relative_to(root).parents):
                continue  # ssebench/agents, ssebench/server: the same files as agents/, server/
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    defined.setdefault(node.name, []).append(path.relative_to(root).as_posix())
    ours = {c.__name__ for c in _classes_here()}
    assert {name: where for name, where in defined.items() if name in ours and len(where) > 1} == {}


@pytest.mark.parametrize("name", ["hermes", "kimi-code", "mistral-vibe", "pi"])
def test_prepare_writes_where_the_home_variable_points(name: str, tmp_path: Path) -> None:
    """The agent's own folder is its client's home_var: $VARIABLE when it is an absolute path
    (blank is unset; a relative one would move with the working directory), else the prefix
    folder in HOME, the same folder its MCP entry goes to; prepare writes its files there and
    nowhere else."""
    record = RECIPE_AGENTS[name]
    assert record.client.home_var is not None
    var, prefix = record.client.home_var
    api = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    for n, (value, folder) in enumerate(
        ((None, "home/" + prefix), (" ", "home/" + prefix), ("rel/moved", "home/" + prefix), ("{root}/moved", "moved"))
    ):
        root = tmp_path / str(n)
        (root / "home").mkdir(parents=True)
        env = api if value is None else {**api, var: value.format(root=root)}
        record.prepare(home=root / "home", env=env)
        written = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".cache" not in p.parts)
        assert written and all(path.startswith(folder + "/") for path in written), (value, written)


def test_fast_agent_runs_with_its_home_where_the_variable_points(tmp_path: Path) -> None:
    launch = RECIPE_AGENTS["fast-agent"].launch
    plain = launch(prompt="P", mcp_url="http://127.0.0.1:9/mcp", home=tmp_path, env={})
    assert plain.env["FAST_AGENT_HOME"] == str(tmp_path / ".fast-agent")
    moved = launch(prompt="P", mcp_url="http://127.0.0.1:9/mcp", home=tmp_path, env={"FAST_AGENT_HOME": "/srv/fa"})
    assert moved.env["FAST_AGENT_HOME"] == "/srv/fa"
    assert moved.argv[-1] == "/srv/fa/ssebench-history.json"
