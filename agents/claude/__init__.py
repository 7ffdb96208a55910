"""Claude Code: the record ``ssebench run --agent claude`` is built from (agents/agent.py)."""

from ssebench.agents.agent import Agent
from ssebench.agents.claude.client import CLIENT

AGENT = Agent(
    client=CLIENT,
    recipe="ssebench.agents.claude.recipe:RECIPE",
    dialog="ssebench.agents.claude.dialog:ClaudeDialog",
    stream_format="claude-stream-json",  # claude -p --output-format stream-json --verbose
    package="@anthropic-ai/claude-code",
    binary="claude",
    model_vars="`ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN` or `CLAUDE_CODE_OAUTH_TOKEN`; `ANTHROPIC_BASE_URL`",
    config_vars=("CLAUDE_CONFIG_DIR",),
)
