"""``actions.install_entry``: ``ssebench agents install AGENT --url URL`` in-process, for a given
environment. The same files, the same record for ``uninstall``, the same lines and errors as the
real command (run beside it in a HOME of its own)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.agents.actions import EntryError, install_entry
from ssebench.agents.registry import names

SSEBENCH = Path(sys.executable).with_name("ssebench")
URL = "http://127.0.0.1:3999/mcp"


def fresh_env(root: Path) -> dict[str, str]:
    home = root / "home"
    home.mkdir(parents=True)
    return {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SSEBENCH), "agents", *args], env=env, cwd=env["HOME"], capture_output=True, text=True, timeout=60
    )


def tree(env: dict[str, str]) -> dict[str, str]:
    """Every file under HOME (the install record too), its HOME written as ~; not the locks
    (named by a digest of the config's path)."""
    home = Path(env["HOME"])
    return {
        str(p.relative_to(home)): p.read_text(encoding="utf-8").replace(str(home), "~")
        for p in sorted(home.rglob("*"))
        if p.is_file() and "locks" not in p.parts
    }


def locks(env: dict[str, str]) -> int:
    return len(list(Path(env["HOME"], ".cache", "ssebench", "locks").glob("*.lock")))


@pytest.mark.parametrize("agent", [*names(), "goose", "claude-desktop", "cursor"])
def test_the_same_files_and_lines_as_the_command(agent: str, tmp_path: Path) -> None:
    ours, theirs = fresh_env(tmp_path / "api"), fresh_env(tmp_path / "cli")
    edit = install_entry(agent, URL, ours)
    done = command(theirs, "install", agent, "--url", URL)
    assert done.returncode == 0, done.stderr
    assert tree(ours) == tree(theirs) and tree(ours)
    assert locks(ours) == locks(theirs) == 2  # the config's and the record's, under that HOME
    printed = done.stdout.replace(theirs["HOME"], ours["HOME"]).splitlines()
    assert edit.lines() == printed
    assert edit.path is not None and edit.path.is_relative_to(ours["HOME"])
    again = command(ours, "uninstall", agent)  # recorded as the command records it: all goes
    assert again.returncode == 0, again.stderr
    assert tree(ours) == {}


def test_a_bad_url_and_an_unknown_agent_fail_as_the_command_does(tmp_path: Path) -> None:
    env = fresh_env(tmp_path)
    with pytest.raises(EntryError) as bad:
        install_entry("claude", "ftp://x/mcp", env)
    done = command(env, "install", "claude", "--url", "ftp://x/mcp")
    assert (
        (bad.value.status, f"ssebench agents: {bad.value}\n")
        == (done.returncode, done.stderr)
        == (
            2,
            "ssebench agents: --url 'ftp://x/mcp' must start with http:// or https:// (the Streamable HTTP transport)\n",
        )
    )
    with pytest.raises(EntryError) as unknown:
        install_entry("nope", URL, env)
    done = command(env, "install", "nope", "--url", URL)
    assert unknown.value.status == done.returncode == 2
    assert done.stderr.endswith(f"error: {unknown.value}\n") and "invalid choice: 'nope'" in str(unknown.value)
    assert tree(env) == {}


def test_a_malformed_config_is_named_and_left_alone(tmp_path: Path) -> None:
    env = fresh_env(tmp_path)
    config = Path(env["HOME"]) / ".claude.json"
    config.write_text('{"mcpServers": {,}}\n')
    with pytest.raises(EntryError) as broken:
        install_entry("claude", URL, env)
    done = command(env, "install", "claude", "--url", URL)
    assert (broken.value.status, f"ssebench agents: {broken.value}\n") == (done.returncode, done.stderr)
    assert broken.value.status == 1 and str(broken.value).startswith(f"{config}, line 1: ")
    assert str(broken.value).endswith("The file was not changed.")
    assert config.read_text() == '{"mcpServers": {,}}\n'


def test_a_bad_server_name_is_refused_in_process_too(tmp_path: Path) -> None:
    with pytest.raises(EntryError) as caught:
        install_entry("claude", "http://127.0.0.1:3000/mcp", {"HOME": str(tmp_path)}, name="my server")
    assert (str(caught.value), caught.value.status) == (
        "--name 'my server' must be 1 to 47 letters, digits, '-' or '_' "
        "(it becomes a config key and the tool's name, mcp__NAME__test_patch)",
        2,
    )
    assert list(tmp_path.iterdir()) == []
