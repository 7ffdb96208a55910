"""The agent's private HOME in process mode: its config folders, and the server registered there.

A bundled agent run by ``ssebench run`` never sees the user's own configuration: its HOME
and XDG folders point into the results folder, and the server is registered there as
``ssebench agents install AGENT --url URL`` would (agents/actions.py, called in-process).
"""

from __future__ import annotations

from pathlib import Path


def private_home(results: Path) -> Path:
    home = results / "home"
    home.mkdir(mode=0o700)
    return home


def without_user_config(env: dict[str, str]) -> dict[str, str]:
    """*env* without the variables that would point a CLI at the user's own config instead
    of the run's HOME (each agent record's ``config_vars``)."""
    from ssebench.agents.registry import config_vars

    drop = set(config_vars())
    return {k: v for k, v in env.items() if k not in drop}


def home_env(home: Path) -> dict[str, str]:
    """Point every per-user config location of the agent CLIs at *home*."""
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local/state"),
    }


def install_agent(agent: str, url: str, env: dict[str, str], log: Path) -> None:
    """Register the server at *url* with AGENT in the private HOME of *env* (what
    ``ssebench agents install AGENT --url URL`` does, in-process); *log* says what was written."""
    from ssebench.agents import actions, files
    from ssebench.agents.base import Env, Scope, Settings
    from ssebench.agents.registry import get

    client = get(agent)
    home = Path(env["HOME"])
    try:
        outcome = actions.install(client, Settings(url=url), Scope.USER, Env(home, home, env))
    except (actions.UsageError, files.ConfigError, OSError) as exc:
        log.write_text(f"{exc}\n", encoding="utf-8")
        raise RuntimeError(f"ssebench agents install {agent} failed: {exc}") from None
    where = f"{outcome.path} ({client.title}, {outcome.scope.value} scope)"
    lines = [f"Registered {outcome.settings.name} at {url} in {where}."]
    lines += [f"Note: {note}" for note in outcome.notes]
    diff = outcome.change.diff() if outcome.change else ""
    log.write_text("\n".join(lines) + "\n" + diff, encoding="utf-8")
