"""A bundled agent's command in a Kubernetes run: its run recipe, as ``ssebench run --docker``
makes it (ssebench/container/run.py ``_run_docker``): the prompt from the task, the MCP
server on the Pod's loopback, HOME /root (the agent layer's), no path of this machine."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ssebench.jobs.backend import JobRun

AGENT_HOME = Path("/root")


def agent_launch(run: JobRun, env: Mapping[str, str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """(what the entrypoint runs after ``--``, the variables the recipe adds) for RUN's bundled agent."""
    from ssebench.container.run import default_prompt, recipe_plan, without_user_config
    from ssebench.settings import DEFAULT_MCP_URL
    from ssebench.task import load_task

    prompt = default_prompt(load_task(run.task))
    extra = {"SSE_PROMPT": prompt}
    own = without_user_config(dict(env))
    agent = str(run.spec.agent)
    plan = recipe_plan(agent, prompt, url=DEFAULT_MCP_URL, home=AGENT_HOME, env={**own, **extra}, prepare=False)
    extra.update(plan.env)
    if plan.dialog:
        extra["SSE_DIALOG"] = plan.dialog
    return tuple(plan.command), extra
