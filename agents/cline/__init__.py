"""Cline CLI: the record ``ssebench run --agent cline`` is built from (agents/agent.py)."""

from ssebench.agents.agent import Agent
from ssebench.agents.cline.client import CLIENT

AGENT = Agent(
    client=CLIENT,
    recipe="ssebench.agents.cline.recipe:RECIPE",
    dialog="ssebench.agents.cline.dialog:ClineDialog",
    stream_format="cline-json",  # cline --json PROMPT
    package="cline",
    binary="cline",
    model_vars="`OPENAI_API_KEY` and `OPENAI_BASE_URL` (an OpenAI-compatible endpoint; "
    "`SSE_AGENT_MODEL` names the model)",
    config_vars=(
        "CLINE_DIR",
        "CLINE_DATA_DIR",
        "CLINE_MCP_SETTINGS_PATH",
        "CLINE_PROVIDER_SETTINGS_PATH",
        "CLINE_GLOBAL_SETTINGS_PATH",
    ),
)
