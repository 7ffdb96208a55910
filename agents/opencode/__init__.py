"""opencode: the record ``ssebench run --agent opencode`` is built from (agents/agent.py)."""

from ssebench.agents.agent import Agent
from ssebench.agents.opencode.client import CLIENT

AGENT = Agent(
    client=CLIENT,
    recipe="ssebench.agents.opencode.recipe:RECIPE",
    dialog="ssebench.agents.opencode.dialog:OpencodeDialog",
    stream_format="opencode-json",  # opencode run --format json
    package="opencode-ai",
    binary="opencode",
    model_vars="the key of the model's provider (`SSE_AGENT_MODEL=provider/model`, default `anthropic`: "
    "`ANTHROPIC_API_KEY`; `ANTHROPIC_BASE_URL`)",
    config_vars=("OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR"),
)
