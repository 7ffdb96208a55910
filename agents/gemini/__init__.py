"""Gemini CLI: the record ``ssebench run --agent gemini`` is built from (agents/agent.py)."""

from ssebench.agents.agent import Agent
from ssebench.agents.gemini.client import CLIENT

AGENT = Agent(
    client=CLIENT,
    recipe="ssebench.agents.gemini.recipe:RECIPE",
    dialog="ssebench.agents.gemini.dialog:GeminiDialog",
    stream_format="gemini-stream-json",  # gemini -p --output-format stream-json
    package="@google/gemini-cli",
    binary="gemini",
    model_vars="`GEMINI_API_KEY`; `GOOGLE_GEMINI_BASE_URL`",
    config_vars=("GEMINI_CLI_HOME",),
)
