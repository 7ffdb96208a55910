"""Codex CLI: the record ``ssebench run --agent codex`` is built from (agents/agent.py)."""

from ssebench.agents.agent import Agent
from ssebench.agents.codex.client import CLIENT

AGENT = Agent(
    client=CLIENT,
    recipe="ssebench.agents.codex.recipe:RECIPE",
    dialog="ssebench.agents.codex.dialog:CodexDialog",
    stream_format="codex-json",  # codex exec --json
    package="@openai/codex",
    binary="codex",
    model_vars="`OPENAI_API_KEY` or `CODEX_API_KEY` (`OPENAI_API_KEY` with `OPENAI_BASE_URL`)",
    config_vars=("CODEX_HOME",),
)
