"""GitHub Copilot CLI: the record ``ssebench run --agent copilot`` is built from (agents/agent.py)."""

from ssebench.agents.agent import Agent
from ssebench.agents.copilot.client import CLIENT

AGENT = Agent(
    client=CLIENT,
    recipe="ssebench.agents.copilot.recipe:RECIPE",
    dialog="ssebench.agents.copilot.dialog:CopilotDialog",
    stream_format="copilot-json",  # copilot -p PROMPT --output-format json
    package="@github/copilot",
    binary="copilot",
    model_vars="your own provider (`COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_API_KEY`, "
    "`COPILOT_PROVIDER_TYPE`, `SSE_AGENT_MODEL` or `COPILOT_MODEL`), or GitHub's models "
    "(`COPILOT_GITHUB_TOKEN`, `GH_TOKEN` or `GITHUB_TOKEN`)",
    config_vars=("COPILOT_HOME",),
)
