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

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.agents.kilo import AGENT
from ssebench.agents.opencode.recipe import OPENCODE_KEYS
from ssebench.agents.recipe import AgentRecipe, Launch, ModelApi, model_from, pick

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


@dataclass(frozen=True)
class KiloRecipe(AgentRecipe):
    default_provider: str = "anthropic"

    def provider(self, env: Mapping[str, str]) -> str:
        model = model_from(env)
        return model.split("/", 1)[0] if model and "/" in model else self.default_provider

    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        provider = self.provider(env)
        base_url = "ANTHROPIC_BASE_URL" if provider == "anthropic" else None
        return ModelApi(keys=OPENCODE_KEYS.get(provider, ()), base_url=base_url)

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = [self.binary, "run", "--format", "json", "--auto"]
        model = model_from(env)
        if model:
            argv += ["--model", model if "/" in model else f"{self.default_provider}/{model}"]
        argv.append(prompt)
        added = {**pick(env, *OPENCODE_KEYS.get(self.provider(env), ())), **OFFLINE_ENV}
        base_url = (env.get("ANTHROPIC_BASE_URL") or "").strip().rstrip("/")
        if base_url:
            # like opencode's, Kilo's anthropic provider wants the versioned root
            options = {"baseURL": base_url if base_url.endswith("/v1") else base_url + "/v1"}
            added["KILO_CONFIG_CONTENT"] = json.dumps({"provider": {"anthropic": {"options": options}}})
        return Launch(
            argv=tuple(argv),
            env=added,
            stream_format=self.stream_format,
            timeouts={"timeout": "from agents install (default 3600000 ms), reset by progress"},
        )


RECIPE = KiloRecipe(AGENT)
