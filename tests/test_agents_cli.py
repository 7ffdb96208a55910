"""`ssebench agents ...` through the real command, with HOME and friends pointed at tmp."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomlkit

REPO = Path(__file__).resolve().parent.parent
SSEBENCH = Path(sys.executable).with_name("ssebench")

CODEX_CONFIG = """\
# Codex configuration — managed by hand, please keep the comments.
model = "o4-mini"            # the default model
approval_policy = "never"

# Profiles ---------------------------------------------------------------
[profiles.fast]
model = "gpt-5-mini"
  # an indented comment inside the table

[mcp_servers.docs]   # another server, written by the user
command = "npx"
args = [ "-y", "docs-mcp" ]   # odd spacing kept
env = { TOKEN = "ünïcødé ✓" }

# trailing comment at the end of the file
"""

JSONC_SETTINGS = """\
// Gemini settings: comments are allowed here
{
    "theme": "GitHub", // inline comment
    /* block
       comment */
    "mcpServers": {
        "other": {"httpUrl": "http://example.test/mcp"},
    },
    "ui": {"hideBanner": true,},
}
"""


class Home:
    """A temporary user: HOME, XDG_CONFIG_HOME and a working folder of its own."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.cwd = root / "work"
        self.home.mkdir()
        self.cwd.mkdir()
        self.env = {
            "HOME": str(self.home),
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
        }

    def run(self, *args: str, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SSEBENCH), "agents", *args],
            cwd=cwd or self.cwd,
            env={**self.env, **extra},
            capture_output=True,
            text=True,
            timeout=60,
        )


@pytest.fixture
def user(tmp_path: Path) -> Home:
    return Home(tmp_path)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- the Done-when case


def test_codex_install_changes_only_its_table_and_uninstall_restores_bytes(user: Home) -> None:
    config = user.home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG, encoding="utf-8")

    done = user.run("install", "codex")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        f"Registered ssebench at http://localhost:3000/mcp in {config} (Codex CLI, user scope)."
    )
    text = config.read_text(encoding="utf-8")
    assert text == CODEX_CONFIG + (
        "\n"
        "[mcp_servers.ssebench]\n"
        'url = "http://localhost:3000/mcp"\n'
        "startup_timeout_sec = 300\n"
        "tool_timeout_sec = 3600\n"
        'default_tools_approval_mode = "approve"\n'
    )
    parsed = tomlkit.parse(text).unwrap()
    assert parsed["mcp_servers"]["docs"]["env"] == {"TOKEN": "ünïcødé ✓"}
    assert (config.parent / "config.toml.bak").read_text(encoding="utf-8") == CODEX_CONFIG

    done = user.run("uninstall", "codex")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"Removed ssebench from {config} (Codex CLI, user scope)."
    assert config.read_bytes() == CODEX_CONFIG.encode()


def test_codex_install_says_it_sets_the_approval_mode(user: Home) -> None:
    """Issue 31: the entry's default_tools_approval_mode = "approve" is said, not silent."""
    done = user.run("install", "codex")
    assert done.returncode == 0, done.stderr
    config = user.home / ".codex" / "config.toml"
    assert done.stdout == (
        f"Registered ssebench at http://localhost:3000/mcp in {config} (Codex CLI, user scope).\n"
        "Note: Tool timeout: tool_timeout_sec = 3600 (seconds). Codex does not extend it on progress, "
        "so it must cover the whole call.\n"
        'Note: The entry also sets default_tools_approval_mode = "approve": Codex runs this server\'s tools '
        "(test_patch) without asking; without it codex exec refuses the call.\n"
    )
    assert 'default_tools_approval_mode = "approve"\n' in config.read_text()
    notes = json.loads(user.run("show", "codex", "--json").stdout)["notes"]
    assert any("default_tools_approval_mode" in note for note in notes)


def test_codex_home_is_honoured(user: Home, tmp_path: Path) -> None:
    codex_home = tmp_path / "codex-home"
    done = user.run("install", "codex", "--timeout", "120", CODEX_HOME=str(codex_home))
    assert done.returncode == 0, done.stderr
    assert tomlkit.parse((codex_home / "config.toml").read_text())["mcp_servers"]["ssebench"]["tool_timeout_sec"] == 120
    assert not (user.home / ".codex").exists()


# --------------------------------------------------------------------------- dry run, idempotence, undo


def test_dry_run_prints_the_diff_and_writes_nothing(user: Home) -> None:
    before = snapshot(user.home)
    done = user.run("install", "claude", "--dry-run")
    assert done.returncode == 0, done.stderr
    path = user.home / ".claude.json"
    assert done.stdout.startswith(f'--- /dev/null\n+++ {path}\n@@ -0,0 +1,9 @@\n+{{\n+  "mcpServers": {{\n')
    assert f"Dry run: {path} (Claude Code, user scope) would change as shown; nothing was written." in done.stdout
    assert snapshot(user.home) == before
    assert list(user.home.iterdir()) == []  # not even a lock folder


def test_dry_run_on_existing_file_shows_only_the_entry(user: Home) -> None:
    settings = user.home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(JSONC_SETTINGS)
    done = user.run("install", "gemini", "--dry-run", "--url", "http://127.0.0.1:3999/mcp")
    assert done.returncode == 0, done.stderr
    added = [line for line in done.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == [
        '+        "ssebench": {',
        '+            "url": "http://127.0.0.1:3999/mcp",',
        '+            "type": "http",',
        '+            "timeout": 3600000,',
        '+            "trust": true',
        "+        },",
    ]
    assert not [line for line in done.stdout.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert settings.read_text() == JSONC_SETTINGS


def test_install_twice_gives_the_same_bytes_and_writes_once(user: Home) -> None:
    settings = user.home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(JSONC_SETTINGS)
    assert user.run("install", "gemini").returncode == 0
    first = settings.read_bytes()
    stat = settings.stat()
    again = user.run("install", "gemini")
    assert again.returncode == 0
    assert again.stdout.splitlines()[0] == (
        f"ssebench is already registered in {settings} (Gemini CLI, user scope) with these settings; nothing changed."
    )
    assert settings.read_bytes() == first
    assert settings.stat().st_mtime_ns == stat.st_mtime_ns
    assert (settings.parent / "settings.json.bak").read_text() == JSONC_SETTINGS


@pytest.mark.parametrize(
    "agent", ["claude", "codex", "gemini", "opencode", "vscode", "cursor", "windsurf", "goose", "zed", "claude-desktop"]
)
def test_uninstall_after_install_leaves_no_file_where_there_was_none(user: Home, agent: str) -> None:
    done = user.run("install", agent, "--json")
    assert done.returncode == 0, done.stderr
    path = Path(json.loads(done.stdout)["path"])
    assert path.is_file()
    assert user.run("uninstall", agent).returncode == 0
    assert not path.exists()
    assert user.run("uninstall", agent).stdout.startswith(f"ssebench is not registered in {path}")


def test_update_replaces_the_entry_in_place(user: Home) -> None:
    settings = user.home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(JSONC_SETTINGS)
    assert user.run("install", "gemini").returncode == 0
    done = user.run("install", "gemini", "--url", "http://127.0.0.1:4000/mcp", "--timeout", "60")
    assert done.returncode == 0, done.stderr
    row = next(r for r in json.loads(user.run("list", "--json").stdout) if r["agent"] == "gemini")
    assert (row["url"], row["timeout_seconds"]) == ("http://127.0.0.1:4000/mcp", 60)
    assert user.run("uninstall", "gemini").returncode == 0
    assert settings.read_text() == JSONC_SETTINGS


# --------------------------------------------------------------------------- malformed files


MALFORMED = [
    (
        "claude",
        ".claude.json",
        '{\n  "numStartups": 3,\n  "mcpServers": {\n    "x": 1\n  \n',
        6,
        "unexpected end of file",
    ),
    ("gemini", ".gemini/settings.json", '// c\n{\n  "a": 1\n  "b": 2\n}\n', 4, "expected ',' or '}'"),
    ("codex", ".codex/config.toml", 'model = "o3"\n[mcp_servers.x\nurl = "u"\n', 2, "Unexpected character"),
    ("goose", ".config/goose/config.yaml", "extensions:\n  developer:\n    enabled: true\n   bad: [\n", 4, ""),
    ("claude", ".claude.json", '{\n  "mcpServers": [\n    1\n  ]\n}\n', 2, '"mcpServers" is not an object'),
    ("codex", ".codex/config.toml", "mcp_servers = 5\n", 1, '"mcp_servers" is not a table'),
    ("goose", ".config/goose/config.yaml", "a: 1\nextensions: [1, 2]\n", 2, '"extensions" is not a mapping'),
]


@pytest.mark.parametrize(("agent", "relpath", "content", "line", "reason"), MALFORMED)
def test_malformed_config_is_reported_and_untouched(
    user: Home, agent: str, relpath: str, content: str, line: int, reason: str
) -> None:
    path = user.home / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    for action in ("install", "uninstall"):
        done = user.run(action, agent)
        assert done.returncode == 1
        assert done.stdout == ""
        lines = done.stderr.splitlines()
        assert len(lines) == 1
        assert lines[0].startswith(f"ssebench agents: {path}, line {line}: {reason}")
        assert lines[0].endswith(". The file was not changed.")
        assert path.read_text() == content
        assert not path.with_name(path.name + ".bak").exists()


def test_list_reports_an_unreadable_config(user: Home) -> None:
    (user.home / ".claude.json").write_text("{ nope")
    done = user.run("list")
    assert done.returncode == 0
    row = next(line for line in done.stdout.splitlines() if line.startswith("claude "))
    assert "unreadable" in row
    assert f"ssebench agents: {user.home / '.claude.json'}, line 1:" in done.stderr


# --------------------------------------------------------------------------- where files go


def test_user_scope_never_writes_into_the_working_tree(user: Home) -> None:
    tree = user.cwd
    (tree / "src").mkdir()
    (tree / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    (tree / ".mcp.json").write_text('{"mcpServers": {}}\n')
    before = snapshot(tree)
    for agent in (
        "claude",
        "codex",
        "gemini",
        "opencode",
        "vscode",
        "cursor",
        "windsurf",
        "goose",
        "zed",
        "claude-desktop",
    ):
        assert user.run("install", agent).returncode == 0
        assert user.run("uninstall", agent).returncode == 0
    assert snapshot(tree) == before


def test_project_scope_writes_the_project_file(user: Home) -> None:
    done = user.run("install", "claude", "--scope", "project")
    assert done.returncode == 0, done.stderr
    assert json.loads((user.cwd / ".mcp.json").read_text()) == {
        "mcpServers": {"ssebench": {"type": "http", "url": "http://localhost:3000/mcp", "timeout": 3600000}}
    }
    assert not (user.home / ".claude.json").exists()
    assert user.run("install", "vscode", "--scope", "project").returncode == 0
    assert json.loads((user.cwd / ".vscode" / "mcp.json").read_text()) == {
        "servers": {"ssebench": {"type": "http", "url": "http://localhost:3000/mcp"}}
    }


def test_a_scope_the_client_lacks_is_a_usage_error(user: Home) -> None:
    done = user.run("install", "windsurf", "--scope", "project")
    assert done.returncode == 2
    assert done.stderr == "ssebench agents: Windsurf has no project-scope config; use --scope user\n"
    assert list(user.cwd.iterdir()) == []


def test_claude_config_dir_and_xdg_are_honoured(user: Home, tmp_path: Path) -> None:
    claude_dir = tmp_path / "claude-dir"
    xdg = tmp_path / "xdg"
    assert user.run("install", "claude", CLAUDE_CONFIG_DIR=str(claude_dir)).returncode == 0
    assert (claude_dir / ".claude.json").is_file()
    assert user.run("install", "opencode", XDG_CONFIG_HOME=str(xdg)).returncode == 0
    assert json.loads((xdg / "opencode" / "opencode.json").read_text())["mcp"]["ssebench"] == {
        "type": "remote",
        "url": "http://localhost:3000/mcp",
        "enabled": True,
        "timeout": 3600000,
    }
    assert not (user.home / ".claude.json").exists()
    assert not (user.home / ".config").exists()


def test_opencode_uses_an_existing_jsonc_file(user: Home) -> None:
    jsonc = user.home / ".config" / "opencode" / "opencode.jsonc"
    jsonc.parent.mkdir(parents=True)
    original = '{\n  // my provider\n  "model": "anthropic/claude-x",\n}\n'
    jsonc.write_text(original)
    assert user.run("install", "opencode").returncode == 0
    assert not jsonc.with_suffix(".json").exists()
    assert jsonc.read_text().startswith('{\n  // my provider\n  "model": "anthropic/claude-x",\n  "mcp": {\n')
    assert user.run("uninstall", "opencode").returncode == 0
    assert jsonc.read_text() == original


def test_mode_is_kept_and_symlinks_are_written_through(user: Home, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text('{"numStartups": 1}\n')
    real.chmod(0o600)
    link = user.home / ".claude.json"
    link.symlink_to(real)
    assert user.run("install", "claude").returncode == 0
    assert link.is_symlink()
    assert json.loads(real.read_text())["mcpServers"]["ssebench"]["url"] == "http://localhost:3000/mcp"
    assert real.stat().st_mode & 0o777 == 0o600
    assert (real.parent / "claude.json.bak").stat().st_mode & 0o777 == 0o600


# --------------------------------------------------------------------------- list, show, generic, json


def test_list_shows_detection_registration_url_and_timeout(user: Home) -> None:
    assert user.run("install", "claude", "--url", "http://127.0.0.1:3001/mcp").returncode == 0
    assert user.run("install", "cursor").returncode == 0
    (user.home / ".config" / "goose").mkdir(parents=True)  # goose installed, nothing registered
    done = user.run("list")
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:]}
    # claude and cursor: no program on PATH, and their config files exist only because
    # ssebench wrote them, so they are not counted as present
    assert lines["claude"][:7] == ["claude", "no", "ssebench", "user", "yes", "http://127.0.0.1:3001/mcp", "3600"]
    assert lines["cursor"][:9] == [
        "cursor",
        "no",
        "ssebench",
        "user",
        "yes",
        "http://localhost:3000/mcp",
        "no",
        "timeout",
        "key",
    ]
    assert lines["goose"][:5] == ["goose", "no", "yes", "user", "no"]
    assert lines["codex"][:5] == ["codex", "no", "no", "user", "no"]
    assert lines["claude-desktop"][:3] == ["claude-desktop", "-", "no"]  # no program to look for
    rows = json.loads(user.run("list", "--json").stdout)
    claude = next(r for r in rows if r["agent"] == "claude")
    assert claude == {
        "agent": "claude",
        "title": "Claude Code",
        "scope": "user",
        "path": str(user.home / ".claude.json"),
        "detected": False,
        "config_exists": True,
        "registered": True,
        "url": "http://127.0.0.1:3001/mcp",
        "timeout_seconds": 3600.0,
        "has_timeout_key": True,
        "error": None,
        "installed": False,
        "config_present": False,
        "created_by_ssebench": True,
    }


def _fake_program(user: Home, name: str) -> None:
    bin_dir = user.home.parent / "bin"
    bin_dir.mkdir(exist_ok=True)
    program = bin_dir / name
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    user.env["PATH"] = f"{bin_dir}:{user.env['PATH']}"


def test_list_says_installed_when_the_program_is_on_path(user: Home) -> None:
    _fake_program(user, "codex")
    lines = {line.split()[0]: line.split() for line in user.run("list").stdout.splitlines()[1:]}
    assert lines["codex"][:5] == ["codex", "yes", "no", "user", "no"]


def test_install_several_agents_at_once(user: Home) -> None:
    done = user.run("install", "claude", "gemini", "claude")  # a repeat counts once
    assert done.returncode == 0, done.stderr
    registered = [line for line in done.stdout.splitlines() if line.startswith("Registered")]
    assert registered == [
        f"Registered ssebench at http://localhost:3000/mcp in {user.home / '.claude.json'} (Claude Code, user scope).",
        f"Registered ssebench at http://localhost:3000/mcp in {user.home / '.gemini' / 'settings.json'} "
        "(Gemini CLI, user scope).",
    ]
    listed = json.loads(user.run("install", "claude", "gemini", "--json").stdout)
    assert [(r["agent"], r["changed"]) for r in listed] == [("claude", False), ("gemini", False)]


def test_install_all_takes_the_detected_agents_only(user: Home) -> None:
    assert user.run("install", "--all").stdout == "No agent detected here; nothing to do.\n"
    assert list(user.home.iterdir()) == []
    _fake_program(user, "codex")
    (user.home / ".config" / "goose").mkdir(parents=True)
    assert user.run("install", "gemini").returncode == 0  # its folder is ssebench's: not detected
    done = user.run("install", "--all", "--json")
    assert done.returncode == 0, done.stderr
    assert [r["agent"] for r in json.loads(done.stdout)] == ["codex", "goose"]
    done = user.run("uninstall", "--all")
    assert done.returncode == 0, done.stderr
    assert [
        line.split(" from ")[1].split(" (")[0] for line in done.stdout.splitlines() if line.startswith("Removed")
    ] == [
        str(user.home / ".codex" / "config.toml"),
        str(user.home / ".gemini" / "settings.json"),
        str(user.home / ".config" / "goose" / "config.yaml"),
    ]


def test_uninstall_removes_the_folders_ssebench_created_and_keeps_the_users(user: Home) -> None:
    assert user.run("install", "gemini", "windsurf").returncode == 0
    (user.home / ".codeium" / "other.txt").write_text("the user's\n")  # the user uses this folder now
    done = user.run("uninstall", "gemini")
    assert done.stdout.splitlines()[1] == (
        f"Also removed what ssebench had created: {user.home / '.gemini' / 'settings.json.bak'}, "
        f"{user.home / '.gemini'}."
    )
    assert not (user.home / ".gemini").exists()
    done = user.run("uninstall", "windsurf")
    assert done.returncode == 0, done.stderr
    assert not (user.home / ".codeium" / "windsurf").exists()  # empty, ours: removed
    assert (user.home / ".codeium" / "other.txt").is_file()  # not empty: kept
    # Nothing of ssebench's is left but its lock folder (cache) and the user's file.
    left = sorted(str(p.relative_to(user.home)) for p in user.home.rglob("*") if ".cache" not in p.parts)
    assert left == [".codeium", ".codeium/other.txt"]


def test_a_folder_that_was_there_before_is_never_removed(user: Home) -> None:
    (user.home / ".gemini").mkdir()
    assert user.run("install", "gemini").returncode == 0
    assert user.run("uninstall", "gemini").returncode == 0
    assert (user.home / ".gemini").is_dir()
    lines = {line.split()[0]: line.split() for line in user.run("list").stdout.splitlines()[1:]}
    assert lines["gemini"][:3] == ["gemini", "no", "yes"]


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://localhost:3000/mcp", "must start with http:// or https:// (the Streamable HTTP transport)"),
        ("localhost:3000/mcp", "must start with http:// or https:// (the Streamable HTTP transport)"),
        ("http:///mcp", "has no host (e.g. http://localhost:3000/mcp)"),
        ("http://localhost:99999/mcp", "is not a valid URL (Port out of range 0-65535)"),
        ("http://localhost:x/mcp", "is not a valid URL (Port could not be cast to integer value as 'x')"),
        (
            "http://localhost:3000",
            "has no path: the server's endpoint is its --path, /mcp by default (e.g. http://localhost:3000/mcp)",
        ),
        ("http://localhost:3000/mcp#x", "must not have a #fragment"),
        ("http://local host/mcp", "must not contain spaces"),
    ],
)
@pytest.mark.parametrize("action", ["install", "show"])
def test_a_bad_url_is_one_line_and_exit_2(user: Home, url: str, problem: str, action: str) -> None:
    done = user.run(action, "claude", "--url", url)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"ssebench agents: --url {url!r} {problem}\n"
    assert list(user.home.iterdir()) == []


@pytest.mark.parametrize("name", ["bad name", "a.b", "", "ü", "x" * 48, "srv/1"])
@pytest.mark.parametrize("action", ["install", "show"])
def test_a_bad_server_name_is_one_line_and_nothing_is_written(user: Home, name: str, action: str) -> None:
    """Issue 31: the name is a config key and the tool's prefix (mcp__NAME__test_patch): Claude Code's
    characters, 47 at most (model APIs take 64 for a tool name)."""
    done = (
        user.run(action, "claude", "codex", "--name", name)
        if action == "install"
        else user.run(action, "codex", "--name", name)
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench agents: --name {name!r} must be 1 to 47 letters, digits, '-' or '_' "
        "(it becomes a config key and the tool's name, mcp__NAME__test_patch)\n"
    )
    assert list(user.home.iterdir()) == []


@pytest.mark.parametrize("name", ["my-server_2", "X" * 47])
def test_a_good_server_name_is_the_entrys_key(user: Home, name: str) -> None:
    done = user.run("install", "codex", "--name", name)
    assert done.returncode == 0, done.stderr
    assert name in tomlkit.parse((user.home / ".codex" / "config.toml").read_text()).unwrap()["mcp_servers"]


def test_install_needs_an_agent_or_all(user: Home) -> None:
    done = user.run("install")
    assert (done.returncode, done.stderr) == (2, "ssebench agents: name at least one AGENT to install, or give --all\n")
    done = user.run("install", "claude", "--all")
    assert (done.returncode, done.stderr) == (2, "ssebench agents: give AGENT names or --all, not both\n")
    done = user.run("install", "claude", "codex", "--file", "x.json")
    assert (done.returncode, done.stderr) == (2, "ssebench agents: --file names one file: give one AGENT with it\n")
    assert list(user.home.iterdir()) == []


def test_list_shows_project_scope_when_the_project_has_a_file(user: Home) -> None:
    assert user.run("install", "claude", "--scope", "project", "--name", "other").returncode == 0
    rows = json.loads(user.run("list", "--json", "--name", "other").stdout)
    project = [r for r in rows if r["scope"] == "project"]
    assert [(r["agent"], r["registered"]) for r in project] == [("claude", True)]


@pytest.mark.parametrize(
    "agent", ["claude", "codex", "goose", "zed", "claude-desktop", "copilot", "roo-code", "amazonq", "warp", "generic"]
)
def test_show_prints_the_checked_in_example(user: Home, agent: str) -> None:
    done = user.run("show", agent)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (REPO / "configs" / "examples" / f"{agent}.show.txt").read_text()


def test_show_and_install_say_when_a_client_has_no_timeout_key(user: Home) -> None:
    shown = user.run("show", "vscode").stdout
    note = (
        "Note: VS Code has no timeout key for MCP servers: nothing sets the limit for a test_patch call, "
        "which can take up to 3600 s."
    )
    assert note in shown
    assert note in user.run("install", "vscode").stdout


def test_generic_prints_standard_json_or_writes_a_file(user: Home) -> None:
    done = user.run("install", "generic", "--url", "http://127.0.0.1:3002/mcp")
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"mcpServers": {"ssebench": {"type": "http", "url": "http://127.0.0.1:3002/mcp"}}}
    assert "set your client's tool-call timeout to at least 3600 s" in done.stderr
    target = user.cwd / "client.json"
    target.write_text('{\n  "mcpServers": {\n    "a": {"url": "x"}\n  }\n}\n')
    assert user.run("install", "generic", "--file", "client.json").returncode == 0
    assert json.loads(target.read_text())["mcpServers"]["ssebench"]["type"] == "http"
    assert user.run("uninstall", "generic", "--file", "client.json").returncode == 0
    assert target.read_text() == '{\n  "mcpServers": {\n    "a": {"url": "x"}\n  }\n}\n'
    refused = user.run("uninstall", "generic")
    assert (refused.returncode, refused.stderr) == (
        2,
        "ssebench agents: generic has no config file of its own: give --file PATH\n",
    )


def test_warp_has_no_file_so_install_prints_the_entry_to_paste(user: Home) -> None:
    done = user.run("install", "warp")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"mcpServers": {"ssebench": {"url": "http://localhost:3000/mcp"}}}
    assert done.stderr.splitlines()[-1] == (
        "Note: Warp keeps MCP servers in its cloud-synced settings: paste this in Settings > AI > MCP servers."
    )
    assert not any(user.home.rglob("*.json"))
    refused = user.run("uninstall", "warp")
    assert (refused.returncode, refused.stderr) == (
        2,
        "ssebench agents: warp has no config file of its own: give --file PATH\n",
    )


def test_a_longer_timeout_than_the_client_allows_is_cut_and_said(user: Home) -> None:
    done = user.run("install", "roo-code", "--timeout", "7200")
    assert done.returncode == 0, done.stderr
    path = user.home / ".config" / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline" / "settings"
    assert json.loads((path / "mcp_settings.json").read_text())["mcpServers"]["ssebench"]["timeout"] == 3600
    assert (
        "Note: Roo Code allows at most 3600 s per call, so 7200 s is written as 3600 s: "
        "a test_patch call that takes longer fails in Roo Code."
    ) in done.stdout


def test_install_json_output(user: Home) -> None:
    done = user.run("install", "zed", "--json", "--timeout", "7200")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    path = user.home / ".config" / "zed" / "settings.json"
    assert result["path"] == str(path)
    assert result["entry"] == {"url": "http://localhost:3000/mcp", "timeout": 600}
    assert (result["changed"], result["written"], result["dry_run"]) == (True, True, False)
    assert result["diff"].startswith(f"--- /dev/null\n+++ {path}\n")
    assert result["notes"][-1] == (
        "Zed allows at most 600 s per server, so 7200 s is written as 600: "
        "a test_patch call that takes longer fails in Zed."
    )


def test_bad_timeout_is_rejected_by_the_parser(user: Home) -> None:
    done = user.run("install", "codex", "--timeout", "1h")
    assert done.returncode == 2
    assert "not a whole number of seconds: '1h'" in done.stderr
    assert list(user.home.iterdir()) == []


# --------------------------------------------------------------------------- concurrency


@pytest.mark.parametrize("agent", ["claude", "codex", "goose"])
def test_concurrent_installs_keep_every_entry(user: Home, agent: str) -> None:
    n = 8
    procs = [
        subprocess.Popen(
            [str(SSEBENCH), "agents", "install", agent, "--name", f"server{i}"],
            cwd=user.cwd,
            env=user.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    rows = []
    for i in range(n):
        listed = json.loads(user.run("list", "--json", "--name", f"server{i}").stdout)
        rows.append(next(r for r in listed if r["agent"] == agent))
    assert all(r["registered"] and r["error"] is None for r in rows)


# --------------------------------------------------------------------------- dockerfile


def test_dockerfile_prints_the_agent_layer(user: Home) -> None:
    from ssebench.container.dockerfile import render_agent_dockerfile

    done = user.run("dockerfile", "codex")
    assert done.returncode == 0, done.stderr
    expected = render_agent_dockerfile("codex")
    assert done.stdout == expected if expected.endswith("\n") else expected + "\n"


def test_help_lists_the_actions() -> None:
    done = subprocess.run(
        [str(SSEBENCH), "agents", "--help"], capture_output=True, text=True, timeout=60, env={**os.environ}
    )
    assert done.returncode == 0
    for action in ("install", "uninstall", "show", "list", "dockerfile"):
        assert action in done.stdout


def test_dockerfile_for_an_agent_without_a_layer(user: Home) -> None:
    done = user.run("dockerfile", "vscode")
    assert done.returncode == 2
    assert done.stdout == ""
    from ssebench.agents.registry import names

    assert done.stderr == f"ssebench agents: no agent layer for 'vscode': the bundled agents are {', '.join(names())}\n"
