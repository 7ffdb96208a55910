"""Kilo Code CLI's run recipe: ``kilo run --format json --auto``, the model API from the environment.

Measured with Kilo 7.7.7 (an opencode fork): the model API is the ``anthropic`` provider
with ``options.baseURL``, given as ``KILO_CONFIG_CONTENT`` (merged over the user's config, so
the MCP entry stays where ``agents install`` put it). Offline it needs what Kilo's own test
harness sets: no models fetch, no auto-update, no background daemon, no share, session
ingest, presence or LSP downloads, telemetry off (``KILO_TELEMETRY_LEVEL`` other than
``all``), and an empty ``PWD`` (below). ``--auto`` approves the tool without a prompt. Its
60 s default per-call limit is reset by progress (``resetTimeoutOnProgress``), and the
entry's ``timeout`` raises it.
"""

from __future__ import annotations

from ssebench.agents.kilo import AGENT
from ssebench.agents.opencode.recipe import OpencodeRecipe

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


RECIPE = OpencodeRecipe(
    AGENT, run_flags=("--auto",), offline_env=tuple(OFFLINE_ENV.items()), config_var="KILO_CONFIG_CONTENT"
)
