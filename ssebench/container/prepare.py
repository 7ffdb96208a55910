"""What the entrypoint checks before it starts anything: one clear line, exit 2, no files.

The agent command, the difficulty level, the task (or sidecar mode's socket and tree)
and the results folder; :class:`~ssebench.container.settings.SettingsError` says what is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ssebench.container import results
from ssebench.container.settings import EntrypointSettings, SettingsError


def check_run(
    s: EntrypointSettings, agent_command: Sequence[str], loaded: Any = None
) -> tuple[list[str], Any, Any, Path]:
    """The agent command (a relative program made absolute), the level, the task (*loaded*
    when the caller loaded it already; None in sidecar mode without a task file) and the
    agent's tree."""
    from ssebench.difficulty import DifficultyError, level_from_env

    command = list(agent_command)
    if not command:
        raise SettingsError("no agent command: give it after '--', e.g. ssebench entrypoint -- claude -p ...")
    if "/" in command[0] and not os.path.isabs(command[0]):
        # the agent runs in the tree: a relative path means one from where we were started
        command[0] = os.path.abspath(command[0])
    try:
        level = level_from_env(s.env)
    except DifficultyError as exc:
        raise SettingsError(str(exc)) from None
    if s.sidecar and s.daemon_socket is None:
        raise SettingsError("--sidecar needs SSE_DAEMON_SOCKET: the socket the sidecar daemon serves")
    task = loaded if loaded is not None else _task(s)
    tree = s.tree or (task.source if task else None)
    if tree is None:
        raise SettingsError("SSE_TREE is not set: in sidecar mode without SSE_TASK, name the agent's tree")
    if not tree.is_dir():
        raise SettingsError(f"SSE_TREE: '{tree}' is not a folder")
    results.check_folder(s.results_dir)
    return command, level, task, tree


def _task(s: EntrypointSettings) -> Any:
    if s.task is None:
        if not s.sidecar:
            raise SettingsError("SSE_TASK is not set: the path of the task.toml to run (or --task)")
        return None
    from ssebench.task import TaskError, load_task

    try:
        return load_task(s.task)
    except TaskError as exc:
        raise SettingsError(str(exc)) from None


def setup_agent(agent: str | None, env: dict[str, str]) -> None:
    """The bundled agent's recipe setup (``Recipe.prepare``) in its HOME, just before it starts,
    with the run's variables: an agent layer ran it at build time without them (Cline's
    provider URL and key). OSError saying what failed when it cannot write there."""
    if agent is None:
        return
    from ssebench.agents.recipe import get_recipe

    home = Path(env.get("HOME") or Path.home())
    try:
        get_recipe(agent).prepare(home=home, env=env)
    except (OSError, ValueError) as exc:
        raise OSError(f"{agent}'s setup in {home} failed: {exc}") from None
