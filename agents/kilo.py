"""Kilo Code CLI: ``kilo run --format json --auto``, the model API from the environment.

**Config.** ``kilo.jsonc`` or ``kilo.json`` in ``$XDG_CONFIG_HOME/kilo`` (user) or the current
folder (project). Kilo creates ``kilo.jsonc`` on its first run and ``kilo mcp add`` writes
there, so a new file is ``.jsonc``; a ``kilo.json`` alone is edited in place.

**Launch.** Measured with Kilo 7.7.7 (an opencode fork, launched by opencode's rules:
agents/shared/opencode.py): the model API is the ``anthropic`` provider with
``options.baseURL``, given as ``KILO_CONFIG_CONTENT`` (merged over the user's config, so the
MCP entry stays where ``agents install`` put it). Offline it needs what Kilo's own test
harness sets: no models fetch, no auto-update, no background daemon, no share, session
ingest, presence or LSP downloads, telemetry off (``KILO_TELEMETRY_LEVEL`` other than
``all``), and an empty ``PWD`` (below). ``--auto`` approves the tool without a prompt. Its
60 s default per-call limit is reset by progress (``resetTimeoutOnProgress``), and the
entry's ``timeout`` raises it.

**Stream.** opencode's events (``step_start``, ``text``, ``tool_use`` once a call ended,
``step_finish`` with tokens and cost, ``error``), read under Kilo's name.
"""

from __future__ import annotations

from ssebench.agents.agent import Agent
from ssebench.agents.base import Unit
from ssebench.agents.shared.opencode import OpencodeEvents, OpencodeFamilyClient, OpencodeLaunch

BINARY = "kilo"
#: what keeps Kilo from reaching its vendor's services in a headless run
OFFLINE_ENV = {
    "KILO_DISABLE_MODELS_FETCH": "1",
    "KILO_DISABLE_AUTOUPDATE": "1",
    "KILO_NO_DAEMON": "1",
    "KILO_DISABLE_SHARE": "1",
    "KILO_DISABLE_SESSION_INGEST": "1",
    "KILO_DISABLE_PRESENCE": "1",
    "KILO_DISABLE_LSP_DOWNLOAD": "1",
    "KILO_TELEMETRY_LEVEL": "off",
    # Kilo's run starts its server in $PWD, not in its working folder: an inherited PWD (the
    # shell that started ssebench) made it work on that folder's git repository instead of
    # the task's tree; empty, it falls back to the working folder
    "PWD": "",
}
LAUNCH = OpencodeLaunch(
    binary=BINARY, offline_env=tuple(OFFLINE_ENV.items()), config_var="KILO_CONFIG_CONTENT", run_flags=("--auto",)
)

CLIENT = OpencodeFamilyClient(
    name="kilo",
    title="Kilo Code CLI",
    format="json",
    container=("mcp",),
    user_path="{xdg}/kilo/kilo.jsonc",
    project_path="kilo.jsonc",
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour="Kilo Code CLI's default is 60 s; the server's progress notifications reset it.",
    binaries=(BINARY, "kilocode"),
    other_suffix=".json",
)

AGENT = Agent(
    package="@kilocode/cli",
    binary=BINARY,
    client=CLIENT,
    launch=LAUNCH.launch,
    config_vars=("KILO_CONFIG", "KILO_CONFIG_DIR", "KILO_CONFIG_CONTENT"),
    model_api=LAUNCH.model_api,
    model_vars="the key of the model's provider (`SSE_AGENT_MODEL=provider/model`, default `anthropic`: "
    "`ANTHROPIC_API_KEY`; `ANTHROPIC_BASE_URL`)",
    stream_format="kilo-json",  # kilo run --format json (opencode's event shape)
    reader=OpencodeEvents,
)
