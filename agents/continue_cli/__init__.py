"""Continue CLI (``cn``): the record ``ssebench run --agent continue`` is built from (agents/agent.py).

The folder is ``continue_cli``: ``continue`` is a Python keyword, so no module can have that name.
"""

from ssebench.agents.agent import Agent
from ssebench.agents.continue_cli.client import CLIENT

AGENT = Agent(
    client=CLIENT,
    recipe="ssebench.agents.continue_cli.recipe:RECIPE",
    dialog="ssebench.agents.continue_cli.dialog:ContinueDialog",
    stream_format="continue-json",  # cn -p --format json
    package="@continuedev/cli",
    binary="cn",
    model_vars="`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API)",
    config_vars=("CONTINUE_GLOBAL_DIR",),
)
