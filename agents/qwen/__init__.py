"""Qwen Code: the record ``ssebench run --agent qwen`` is built from (agents/agent.py)."""

from ssebench.agents.agent import Agent
from ssebench.agents.qwen.client import CLIENT

AGENT = Agent(
    client=CLIENT,
    recipe="ssebench.agents.qwen.recipe:RECIPE",
    dialog="ssebench.agents.qwen.dialog:QwenDialog",
    stream_format="qwen-stream-json",  # qwen -p --output-format stream-json
    package="@qwen-code/qwen-code",
    binary="qwen",
    model_vars="`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API)",
    config_vars=("QWEN_HOME", "QWEN_CODE_SYSTEM_SETTINGS_PATH", "QWEN_CODE_SYSTEM_DEFAULTS_PATH"),
)
