"""The file layer: lock, atomic replace, .bak, BOM, encoding errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ssebench.agents import files, formats


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


def test_bom_is_kept_and_bak_holds_previous_bytes(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    original = '\ufeff{\n  "a": 1\n}\n'.encode()
    path.write_bytes(original)
    change = files.edit(path, lambda text: formats.EDITORS["json"].set(text, ("mcpServers", "s"), {"url": "u"}))
    assert change.changed
    assert path.read_bytes().startswith('\ufeff{\n  "a": 1,\n'.encode())
    assert path.with_name("settings.json.bak").read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "settings.json", "settings.json.bak"]


def test_lock_folder_is_private(tmp_path: Path, cache_home: Path) -> None:
    files.edit(tmp_path / "x.json", lambda text: '{"a": 1}\n')
    locks = cache_home / "ssebench" / "locks"
    assert locks.stat().st_mode & 0o777 == 0o700


def test_failed_transform_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("a = 1\n")

    def boom(text: str | None) -> str:
        raise files.ConfigError(path, "no")

    with pytest.raises(files.ConfigError):
        files.edit(path, boom)
    assert sorted(os.listdir(tmp_path)) == ["c.toml", "cache"]  # no .bak, no temp file
    assert path.read_text() == "a = 1\n"


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b'{\n"a": "\xff"\n}\n')
    with pytest.raises(files.ConfigError) as err:
        files.read_text(path)
    assert str(err.value) == f"{path}, line 2: is not UTF-8 text"


def test_diff_names_files_and_marks_missing_newline(tmp_path: Path) -> None:
    change = files.Change(tmp_path / "f", "a", "a\nb\n")
    assert change.diff() == (
        f"--- {tmp_path / 'f'}\n+++ {tmp_path / 'f'}\n@@ -1 +1,2 @@\n-a\n\\ No newline at end of file\n+a\n+b\n"
    )
    assert files.Change(tmp_path / "f", "x", "x").diff() == ""


# -- every client, through the whole install/uninstall path ----------------------------------

_EXISTING = {
    "json": '{\n  // the user\'s\n  "theme": "dark", /* kept */\n}\n',
    "toml": '# the user\'s\nmodel = "x"  # kept\n',
    "yaml": "# the user's\ntheme: dark  # kept\n",
    "yaml-list": "# the user's\nname: mine  # kept\nversion: 1.0.0\nschema: v1\n",
    "toml-list": '# the user\'s\nmodel = "x"  # kept\n',
    "toml-array": '# the user\'s\nactive_model = "x"  # kept\n',
}


def _clients_with_a_file() -> list[str]:
    from ssebench.agents import actions

    return [c.name for c in actions.clients() if c.user_path is not None]


@pytest.mark.parametrize("name", _clients_with_a_file())
def test_every_client_round_trips_its_own_file(name: str, tmp_path: Path) -> None:
    """Install then uninstall leaves no file (and no folder) where there was none, and the
    user's bytes, comments included, where there was one."""
    from ssebench.agents import actions
    from ssebench.agents.base import Env, Scope, ServerSettings
    from ssebench.agents.registry import CLIENTS

    client, settings = CLIENTS[name], ServerSettings()
    home = tmp_path / "home"
    home.mkdir()
    state = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env = Env(home=home, cwd=tmp_path, vars=state, platform="linux")
    path = actions.install(client, settings, Scope.USER, env).path
    assert path is not None and path.read_text() == actions.snippet(client, settings)
    actions.uninstall(client, settings, Scope.USER, env)
    assert list(home.iterdir()) == []

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_EXISTING[client.format])
    actions.install(client, settings, Scope.USER, env)
    assert actions.editor(client).get(path.read_text(), client.entry_path(settings)) == client.entry(settings)
    assert "kept" in path.read_text()
    actions.uninstall(client, settings, Scope.USER, env)
    assert path.read_text() == _EXISTING[client.format]
