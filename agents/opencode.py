"""opencode: ``opencode run --format json``, the model API from the environment.

**Config.** ``opencode.json`` or ``opencode.jsonc`` (whichever exists; a new file is ``.json``)
in ``$XDG_CONFIG_HOME/opencode`` (user) or the current folder (project).

**Launch.** Measured with opencode 1.18: the model API is the ``anthropic`` provider with
``options.baseURL``, given as ``OPENCODE_CONFIG_CONTENT`` (merged over the user's config, so
the MCP entry stays where ``agents install`` put it); ``OPENCODE_DISABLE_MODELS_FETCH=1``
keeps it from fetching the model list; ``opencode run`` waits for stdin unless it is empty.
Its 60 s default per-call limit is reset by progress, and the entry's ``timeout`` raises it.

**Stream.** opencode's JSON events, with tokens and cost per step (agents/shared/opencode.py).
"""

from __future__ import annotations

from ssebench.agents.agent import Agent
from ssebench.agents.base import Unit
from ssebench.agents.shared.opencode import OpencodeEvents, OpencodeFamilyClient, OpencodeLaunch

BINARY = "opencode"
#: what keeps opencode from reaching its vendor's services in a headless run
OFFLINE_ENV = (("OPENCODE_DISABLE_MODELS_FETCH", "1"), ("OPENCODE_DISABLE_AUTOUPDATE", "1"))
LAUNCH = OpencodeLaunch(binary=BINARY, offline_env=OFFLINE_ENV, config_var="OPENCODE_CONFIG_CONTENT")

CLIENT = OpencodeFamilyClient(
    name="opencode",
    title="opencode",
    format="json",
    container=("mcp",),
    user_path="{xdg}/opencode/opencode.json",
    project_path="opencode.json",
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour="opencode's default is 60 s; the server's progress notifications reset it.",
    binaries=(BINARY,),
    other_suffix=".jsonc",
)

AGENT = Agent(
    package="opencode-ai",
    binary=BINARY,
    client=CLIENT,
    launch=LAUNCH.launch,
    config_vars=("OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR"),
    model_api=LAUNCH.model_api,
    model_vars="the key of the model's provider (`SSE_AGENT_MODEL=provider/model`, default `anthropic`: "
    "`ANTHROPIC_API_KEY`; `ANTHROPIC_BASE_URL`)",
    stream_format="opencode-json",  # opencode run --format json
    reader=OpencodeEvents,
)
