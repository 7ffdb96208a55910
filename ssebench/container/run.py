"""``ssebench run``: one whole run of one agent on one task, here or in a container.

What to run is a :class:`~ssebench.runrecord.RunSpec`: read from ``--spec FILE`` (as
``ssebench jobs`` passes it) or built from the flags; the record carries it. The task is
loaded once, here, and handed on. Process mode does what a task container does, on this
machine: a private copy of the task's tree, a private HOME where the server is registered
for the agent (agents/actions.py, in-process), the agent's run recipe (agents/*/recipe.py)
as the command, and the entrypoint's stages (:class:`~ssebench.container.entrypoint.Entrypoint`)
shown live. ``--docker`` hands the same recipe to ssebench/container/docker.py instead.

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
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssebench.container.agenthome import home_env, install_agent, private_home, without_user_config
from ssebench.container.display import Display
from ssebench.runrecord import Backend, RunResult, RunSpec
from ssebench.settings import DEFAULT_MCP_HOST, DEFAULT_MCP_PATH, DEFAULT_MCP_URL

DEFAULT_RUNS_DIR = "ssebench-runs"
__all__ = ["default_prompt", "recipe_plan", "register", "without_user_config"]  # kube_agent.py uses them


def register(sub: argparse._SubParsersAction) -> None:
    from ssebench.agents.registry import names

    agents = names()  # the registered agents (agents/registry.py), at the time the parser is made
    p = sub.add_parser(
        "run",
        help="one whole run: daemon, server, agent, grading (here, or in Docker with --docker)",
        description="Run one agent on one task end to end and report the result as a table and as JSON. "
        "The agent is a bundled one (--agent) or any command after '--'.",
    )
    p.add_argument("--task", metavar="FILE", help="the task file (task.toml)")
    p.add_argument(
        "--spec",
        metavar="FILE",
        help="what to run as a run spec (JSON, docs/run-record.schema.json's spec) instead of "
        "--task, --agent, --difficulty, --agent-timeout, --mcp-timeout and '-- CMD'",
    )
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
class AgentPlan:
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


def recipe_plan(
    agent: str, prompt: str, *, url: str, home: Path, env: dict[str, str], prepare: bool = True
) -> AgentPlan:
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
    return AgentPlan(command=list(launch.argv), env={**path, **launch.env}, dialog=recipe.dialog)


class _Refused(Exception):
    """A run that cannot start; the message is its one line after ``ssebench run:`` (exit 2)."""


@dataclass(frozen=True)
class _Start:
    """A run checked and ready: its spec (backend resolved), task, environment, folder."""

    spec: RunSpec
    task: Any  # ssebench.task.Task, loaded once here
    command: list[str]  # '-- CMD' (empty for a bundled agent)
    env: dict[str, str]
    results: Path


def _what(args: argparse.Namespace, command: list[str]) -> tuple[RunSpec | None, str, str | None, list[str]]:
    """The spec given (--spec) or None; the task file, the agent and the command."""
    from ssebench.container.spec import clashes, read_spec
    from ssebench.settings import SettingsError

    if args.spec is None:
        if args.task is None:
            raise _Refused("give --task FILE or --spec FILE")
        return None, args.task, args.agent, command
    given = clashes(vars(args), command)
    if given:
        raise _Refused(f"--spec says what to run: drop {', '.join(given)} (or drop --spec)")
    try:
        spec = read_spec(args.spec)
    except SettingsError as exc:
        raise _Refused(str(exc)) from None
    return spec, spec.task_file, spec.agent, list(spec.command or ())


def _start(args: argparse.Namespace, command: list[str]) -> _Start:
    """Everything checked before a run starts: the spec, the task, the level, the agent's
    preflight and the results folder (made). _Refused says what is wrong."""
    from ssebench.container import spec as specs
    from ssebench.difficulty import DifficultyError, level_from_env
    from ssebench.settings import SettingsError
    from ssebench.task import TaskError, load_task

    given, task_file, agent, command = _what(args, command)
    if bool(agent) == bool(command):
        raise _Refused("give either --agent NAME or a command after '--', not both or neither")
    try:
        task = load_task(task_file)
    except TaskError as exc:
        raise _Refused(str(exc)) from None
    if given is not None and given.task_id != task.id:
        raise _Refused(f"--spec {args.spec}: task_id {given.task_id!r}, but {task.file} is task {task.id!r}")
    env = dict(os.environ)
    difficulty = str(given.level) if given is not None else args.difficulty
    if difficulty is not None:
        env["SSE_DIFFICULTY"] = str(difficulty)
    if given is not None and given.model:
        env["SSE_AGENT_MODEL"] = given.model
    try:
        level = level_from_env(env)
        backend: Backend = "docker" if args.docker else "process"
        spec = (
            given.model_copy(update={"backend": backend, "task_file": str(task.file)})
            if given is not None
            else specs.from_flags(
                task_file=str(task.file),
                task_id=task.id,
                agent=agent,
                command=command,
                level=level.number,
                backend=backend,
                env=env,
                agent_timeout=args.agent_timeout,
                mcp_timeout=args.mcp_timeout,
            )
        )
    except (DifficultyError, SettingsError) as exc:
        raise _Refused(str(exc)) from None
    problems = []
    if args.docker:  # the engine and the images too, before the results folder is made
        from ssebench.preflight import docker_problems

        problems += [p.line() for p in docker_problems([agent] if agent else [])]
    if agent and not args.skip_preflight:  # last: its hint is about these lines only
        from ssebench.agents.recipe import PreflightError, preflight

        try:
            preflight(agent, env, cli=not args.docker)
        except PreflightError as exc:
            problems.append(f"{exc}\n(--skip-preflight starts it anyway)")
    if problems:
        raise _Refused("\n".join(problems))
    return _Start(spec, task, command, env, _results_folder(args, task.id, agent))


def _results_folder(args: argparse.Namespace, task_id: str, agent: str | None) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results = Path(args.results or Path(DEFAULT_RUNS_DIR) / f"{task_id}-{agent or 'command'}-{stamp}").absolute()
    if results.exists() and (not results.is_dir() or any(results.iterdir())):
        raise _Refused(f"--results {results}: exists and is not an empty folder")
    results.mkdir(parents=True, exist_ok=True)
    return results


def _run(args: argparse.Namespace) -> int:
    from ssebench.container.settings import SettingsError

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    err = sys.stderr
    try:
        start = _start(args, command)
    except _Refused as exc:
        print(f"ssebench run: {exc}", file=err)
        return 2
    prompt = args.prompt or default_prompt(start.task)
    display = Display(console_file=err if args.json else sys.stdout)
    try:
        if args.docker:
            code, result = _run_docker(args, start, prompt, display)
        else:
            code, result = _run_process(args, start, prompt, display)
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
    if result is not None:
        display.summary(result, start.results)
    if args.json:
        data = result.model_dump(mode="json") if result is not None else None
        print(json.dumps(data, indent=2, ensure_ascii=False) if data is not None else "null")
    return code


def _run_process(args: argparse.Namespace, start: _Start, prompt: str, display: Display) -> tuple[int, RunResult]:
    from ssebench.container.entrypoint import Entrypoint
    from ssebench.container.settings import from_environment
    from ssebench.container.spec import whole
    from ssebench.supervise import free_port

    spec, results, env, command = start.spec, start.results, start.env, start.command
    display.start("setup", "private tree and HOME")
    if args.tree:
        tree = Path(args.tree).absolute()
    else:
        tree = results / "tree"
        shutil.copytree(start.task.source, tree, symlinks=True)
    port = args.port or free_port()
    url = f"http://{DEFAULT_MCP_HOST}:{port}{DEFAULT_MCP_PATH}"
    agent_env: dict[str, str] = {}
    dialog = args.dialog
    if spec.agent:
        home = private_home(results)
        env = without_user_config(env)  # the run's HOME, not the user's
        agent_env.update(home_env(home))
        install_agent(spec.agent, url, {**env, **agent_env}, results / "install.log")
        plan = recipe_plan(spec.agent, prompt, url=url, home=home, env={**env, **agent_env})
        command, dialog = plan.command, plan.dialog
        agent_env.update(plan.env)
    display.done("setup", f"tree {tree}")
    # a run of its own: never the socket of a daemon the user has running (ssebench up)
    env = {k: v for k, v in env.items() if k != "SSE_DAEMON_SOCKET"}
    settings = from_environment(
        env,
        task=str(start.task.file),
        tree=str(tree),
        results_dir=str(results),
        mcp_port=str(port),
        agent_timeout=whole(spec.agent_timeout),
        mcp_timeout=whole(spec.mcp_timeout),
        dialog=dialog,
        prompt=prompt,
    )
    entry = Entrypoint(settings, command, on_stage=display.on_stage, agent_env=agent_env, spec=spec, task=start.task)
    result = entry.run()
    assert result.exit_code is not None
    return result.exit_code, result


def _run_docker(args: argparse.Namespace, start: _Start, prompt: str, display: Display) -> tuple[int, RunResult | None]:
    from ssebench.container import docker, gatewayroute
    from ssebench.container.spec import whole

    spec, command = start.spec, start.command
    extra: dict[str, str] = {"SSE_PROMPT": prompt}
    if args.dialog:
        extra["SSE_DIALOG"] = args.dialog
    for var, value in (("SSE_AGENT_TIMEOUT", spec.agent_timeout), ("SSE_MCP_TIMEOUT", spec.mcp_timeout)):
        if value is not None:
            extra[var] = str(whole(value))
    if spec.model:
        extra["SSE_AGENT_MODEL"] = spec.model
    if spec.agent:
        # not this machine's paths: the container has no XDG_* folders (a recipe that reads them
        # would name a folder its CLI does not use there: Code Puppy's saved session)
        own = {k: v for k, v in without_user_config(start.env).items() if not k.startswith("XDG_")}
        plan = recipe_plan(
            spec.agent, prompt, url=DEFAULT_MCP_URL, home=Path("/root"), env={**own, **extra}, prepare=False
        )
        command = plan.command
        extra.update(plan.env)
        extra["SSE_AGENT"] = spec.agent  # its recipe's setup runs in the container, with these variables
        if plan.dialog:
            extra["SSE_DIALOG"] = plan.dialog
    routed, mounts = gatewayroute.for_containers(start.env, custom=spec.agent is None)
    extra.update(routed)
    current: list[str] = []

    def progress(stage: str) -> None:
        if current:
            display.done(current[-1], "")
        current.append(stage)
        display.start(stage, "")

    try:
        planned = docker.plan_run(
            start.task,
            agent=spec.agent,
            agent_command=command,
            results_dir=start.results,
            env=extra,
            spec=spec,
            mounts=mounts,
        )
        ran = docker.execute(planned, progress)
    except docker.DockerRunError as exc:
        if current:
            display.fail(current[-1], str(exc))
        raise RuntimeError(str(exc)) from None
    if current:
        display.done(current[-1], "")
    return ran.exit_code, ran.record
