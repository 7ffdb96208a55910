"""Kilo Code CLI: the record ``ssebench run --agent kilo`` is built from (agents/agent.py)."""

from ssebench.agents.agent import Agent
from ssebench.agents.kilo.client import CLIENT

AGENT = Agent(
    client=CLIENT,
    recipe="ssebench.agents.kilo.recipe:RECIPE",
    dialog="ssebench.agents.kilo.dialog:KiloDialog",
    stream_format="kilo-json",  # kilo run --format json (opencode's event shape)
    package="@kilocode/cli",
    binary="kilo",
    model_vars="the key of the model's provider (`SSE_AGENT_MODEL=provider/model`, default `anthropic`: "
    "`ANTHROPIC_API_KEY`; `ANTHROPIC_BASE_URL`)",
    config_vars=("KILO_CONFIG", "KILO_CONFIG_DIR", "KILO_CONFIG_CONTENT"),
)
