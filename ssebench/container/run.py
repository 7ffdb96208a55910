"""``ssebench run``: one whole run of one agent on one task, here or in a container.

Process mode does what a task container does, on this machine: a private copy of the
task's tree, a private HOME where ``ssebench agents install`` registers the server
for the agent, the agent's run recipe (agents/*/recipe.py) as the command, and the
entrypoint's stages (:class:`ssebench.container.entrypoint.Entrypoint`) shown live.
``--docker`` hands the same recipe to ssebench/container/docker.py instead.

Before anything starts, a bundled agent's preflight (agents/recipe.py) checks the model
API variables and, in process mode, the CLI and its pinned version: a missing key is one
message and exit 2 at once, not a run that waits out the agent timeout. The summary shows
the agent's last error line (results.json ``error``), read by ssebench/container/agentlog.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssebench.container.display import Display
from ssebench.settings import DEFAULT_MCP_HOST, DEFAULT_MCP_PATH, DEFAULT_MCP_URL

STAGES = ("setup", "daemon", "server", "agent", "grading")
DEFAULT_RUNS_DIR = "ssebench-runs"


def register(sub: argparse._SubParsersAction) -> None:
    from ssebench.agents.registry import names

    agents = names()  # the registered agents (agents/registry.py), at the time the parser is made
    p = sub.add_parser(
        "run",
        help="one whole run: daemon, server, agent, grading (here, or in Docker with --docker)",
        description="Run one agent on one task end to end and report the result as a table and as JSON. "
        "The agent is a bundled one (--agent) or any command after '--'.",
    )
    p.add_argument("--task", required=True, metavar="FILE", help="the task.toml")
    p.add_argument("--agent", choices=agents, help="a bundled agent, run with its recipe")
    p.add_argument(
        "--difficulty",
        default=None,
        metavar="N",
        help="SSE_DIFFICULTY for the run, 0-4 (default: $SSE_DIFFICULTY, else 2)",
    )
    p.add_argument("--docker", action="store_true", help="run in a task container (needs a Docker engine)")
    p.add_argument(
        "--results",
        metavar="DIR",
        help=f"an empty or new folder for this run's files (default: ./{DEFAULT_RUNS_DIR}/<task>-<agent>-<time>)",
    )
    p.add_argument(
        "--tree",
        metavar="DIR",
        help="let the agent work in DIR itself (default: a copy of the task's source in the results folder)",
    )
    p.add_argument("--prompt", help="the agent's prompt (default: built from the task's description)")
    p.add_argument(
        "--agent-timeout", metavar="S", help="seconds the agent may run (default: SSE_AGENT_TIMEOUT, else 3600)"
    )
    p.add_argument("--mcp-timeout", metavar="S", help="seconds to wait for the MCP server (default: 300)")
    p.add_argument("--port", type=int, help="MCP server port (default: a free port)")
    p.add_argument(
        "--dialog",
        metavar="AGENT",
        choices=agents,
        help="with '-- CMD': CMD prints this CLI's JSON stream; turn it into dialog.jsonl",
    )
    p.add_argument("--json", action="store_true", help="print results.json to stdout (the display goes to stderr)")
    p.add_argument(
        "--skip-preflight",
        action="store_true",
        help="start a bundled agent even when its API key variables or its CLI version look wrong",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ...")
    p.set_defaults(func=_run)


@dataclass
class Plan:
    """What to launch: the agent's command and environment, and its dialog format."""

    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    dialog: str | None = None


def default_prompt(task: Any) -> str:
    description = (task.description or "").strip() or f"the vulnerability of task {task.id}"
    return (
        f"Fix this vulnerability in the source tree in the current directory: {description}\n"
        "Use the test_patch tool to check your patch; it builds the tree as it is and runs the "
        "task's checks."
    )


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
    """``ssebench agents install AGENT --url URL`` into the private HOME in *env*."""
    from ssebench.supervise import ssebench_argv

    with log.open("wb") as out:
        code = subprocess.run(
            ssebench_argv("agents", "install", agent, "--url", url),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=120,
        ).returncode
    if code != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-10:]
        raise RuntimeError(f"ssebench agents install {agent} failed (exit {code}):\n" + "\n".join(tail))


def recipe_plan(agent: str, prompt: str, *, url: str, home: Path, env: dict[str, str], prepare: bool = True) -> Plan:
    """The registered agent's run recipe (agents/recipe.py) as a Plan.

    *prepare*: also run the recipe's one-time setup in *home* (process mode only: in a
    container the setup runs inside, where the agent's HOME is).
    """
    from ssebench.agents import registry, runtime
    from ssebench.agents.recipe import get_recipe

    recipe = get_recipe(agent)
    if prepare:
        recipe.prepare(home=home, env=env)
    launch = recipe.launch(prompt=prompt, mcp_url=url, home=home, env=env)
    # its own Node first on PATH (process mode: a container's layer has the one node it needs)
    path = runtime.launch_path(registry.agent(agent), env) if prepare else {}
    return Plan(command=list(launch.argv), env={**path, **launch.env}, dialog=recipe.dialog)


class _Refused(Exception):
    """A run that cannot start; the message is its one line after ``ssebench run:`` (exit 2)."""


def _start(args: argparse.Namespace, command: list[str]) -> tuple[Any, dict[str, str], int, Path]:
    """Everything checked before a run starts: the task, the level, the agent's preflight and
    the results folder (made). _Refused says what is wrong."""
    from ssebench.difficulty import DifficultyError, level_from_env
    from ssebench.task import TaskError, load_task

    if bool(args.agent) == bool(command):
        raise _Refused("give either --agent NAME or a command after '--', not both or neither")
    try:
        task = load_task(args.task)
    except TaskError as exc:
        raise _Refused(str(exc)) from None
    env = dict(os.environ)
    if args.difficulty is not None:
        env["SSE_DIFFICULTY"] = str(args.difficulty)
    try:
        level = level_from_env(env)
    except DifficultyError as exc:
        raise _Refused(str(exc)) from None
    if args.agent and not args.skip_preflight:
        from ssebench.agents.recipe import PreflightError, preflight

        try:
            preflight(args.agent, env, cli=not args.docker)
        except PreflightError as exc:
            raise _Refused(f"{exc}\n(--skip-preflight starts it anyway)") from None
    name = args.agent or "command"
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results = Path(args.results or Path(DEFAULT_RUNS_DIR) / f"{task.id}-{name}-{stamp}").absolute()
    if results.exists() and (not results.is_dir() or any(results.iterdir())):
        raise _Refused(f"--results {results}: exists and is not an empty folder")
    results.mkdir(parents=True, exist_ok=True)
    return task, env, level.number, results


def _run(args: argparse.Namespace) -> int:
    from ssebench.container.settings import SettingsError

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    err = sys.stderr
    try:
        task, env, level, results = _start(args, command)
    except _Refused as exc:
        print(f"ssebench run: {exc}", file=err)
        return 2
    prompt = args.prompt or default_prompt(task)
    display = Display(console_file=err if args.json else sys.stdout)
    try:
        if args.docker:
            code, data = _run_docker(args, task, level, results, command, prompt, env, display)
        else:
            code, data = _run_process(args, task, results, command, prompt, env, display)
    except SettingsError as exc:
        display.stop()
        print(f"ssebench run: {exc}", file=err)
        return 2
    except RuntimeError as exc:
        display.fail("setup", str(exc))
        display.stop()
        print(f"ssebench run: {exc}", file=err)
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C before the agent ran: everything is stopped
        display.stop()
        print("ssebench run: interrupted", file=err)
        return 130
    display.stop()
    if data is not None:
        display.summary(data, results)
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False) if data is not None else "null")
    return code


def _run_process(
    args: argparse.Namespace,
    task: Any,
    results: Path,
    command: list[str],
    prompt: str,
    env: dict[str, str],
    display: Display,
) -> tuple[int, dict | None]:
    from ssebench.container.entrypoint import Entrypoint
    from ssebench.container.settings import from_environment
    from ssebench.supervise import free_port

    display.start("setup", "private tree and HOME")
    if args.tree:
        tree = Path(args.tree).absolute()
    else:
        tree = results / "tree"
        shutil.copytree(task.source, tree, symlinks=True)
    port = args.port or free_port()
    url = f"http://{DEFAULT_MCP_HOST}:{port}{DEFAULT_MCP_PATH}"
    agent_env: dict[str, str] = {}
    dialog = args.dialog
    if args.agent:
        home = private_home(results)
        env = without_user_config(env)  # the run's HOME, not the user's
        agent_env.update(home_env(home))
        install_agent(args.agent, url, {**env, **agent_env}, results / "install.log")
        plan = recipe_plan(args.agent, prompt, url=url, home=home, env={**env, **agent_env})
        command, dialog = plan.command, plan.dialog
        agent_env.update(plan.env)
    display.done("setup", f"tree {tree}")
    # a run of its own: never the socket of a daemon the user has running (ssebench up)
    env = {k: v for k, v in env.items() if k != "SSE_DAEMON_SOCKET"}
    settings = from_environment(
        env,
        task=str(task.file),
        tree=str(tree),
        results_dir=str(results),
        mcp_port=str(port),
        agent_timeout=args.agent_timeout,
        mcp_timeout=args.mcp_timeout,
        dialog=dialog,
        prompt=prompt,
    )
    outcome = Entrypoint(settings, command, on_stage=display.on_stage, agent_env=agent_env).run()
    return outcome.exit_code, outcome.results


def _run_docker(
    args: argparse.Namespace,
    task: Any,
    level: int,
    results: Path,
    command: list[str],
    prompt: str,
    env: dict[str, str],
    display: Display,
) -> tuple[int, dict | None]:
    from ssebench.container import docker

    extra: dict[str, str] = {"SSE_PROMPT": prompt}
    if args.dialog:
        extra["SSE_DIALOG"] = args.dialog
    if args.agent_timeout:
        extra["SSE_AGENT_TIMEOUT"] = str(args.agent_timeout)
    if args.mcp_timeout:
        extra["SSE_MCP_TIMEOUT"] = str(args.mcp_timeout)
    if args.agent:
        home = Path("/root")
        own = without_user_config(env)  # paths of this machine
        plan = recipe_plan(args.agent, prompt, url=DEFAULT_MCP_URL, home=home, env={**own, **extra}, prepare=False)
        command = plan.command
        extra.update(plan.env)
        extra["SSE_AGENT"] = args.agent  # its recipe's setup runs in the container, with these variables
        if plan.dialog:
            extra["SSE_DIALOG"] = plan.dialog
    current: list[str] = []

    def progress(stage: str) -> None:
        if current:
            display.done(current[-1], "")
        current.append(stage)
        display.start(stage, "")

    try:
        result = docker.run_in_docker(
            task_dir=task.file.parent,
            agent=args.agent,
            agent_command=command,
            results_dir=results,
            difficulty=level,
            env=extra,
            progress=progress,
        )
    except docker.DockerRunError as exc:
        if current:
            display.fail(current[-1], str(exc))
        raise RuntimeError(str(exc)) from None
    if current:
        display.done(current[-1], "")
    return result.exit_code, result.results
