"""Nanocoder's run recipe: ``nanocoder --plain --json --trust-directory run PROMPT``.

Measured with Nanocoder 1.30.0 on Node 22.23.5: ``run`` is headless, ``--plain`` skips the
Ink screen, ``--json`` prints one report at the end (agents/nanocoder/dialog.py), and
``--trust-directory`` skips the first-run trust prompt. The model is a provider named
``ssebench`` in ``NANOCODER_PROVIDERS`` (JSON, read instead of agents.config.json) whose URL
and key are ``${OPENAI_BASE_URL}`` / ``${OPENAI_API_KEY}`` references Nanocoder fills from the
environment, so no file holds the key and nothing is needed at build time. ``run``'s default
mode, ``auto-accept``, calls ``test_patch`` because the MCP entry allows it (client.py); its
own file tools stay allowed as in any run. A tool call is limited to the MCP SDK's 60 s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.agents.nanocoder import AGENT
from ssebench.agents.recipe import AgentRecipe, Launch, ModelApi, model_from, pick

PROVIDER = "ssebench"
DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def providers(model: str) -> str:
    """The ``NANOCODER_PROVIDERS`` value: one OpenAI-compatible provider, its secrets by reference."""
    entry = {"name": PROVIDER, "baseUrl": "${OPENAI_BASE_URL}", "apiKey": "${OPENAI_API_KEY}", "models": [model]}
    return json.dumps([entry])


@dataclass(frozen=True)
class NanocoderRecipe(AgentRecipe):
    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        return ModelApi(keys=("OPENAI_API_KEY",), base_url="OPENAI_BASE_URL")

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        model = model_from(env) or DEFAULT_MODEL
        argv = (self.binary, "--plain", "--json", "--trust-directory", "--provider", PROVIDER, "--model", model)
        added = {
            **pick(env, "OPENAI_API_KEY"),
            "OPENAI_BASE_URL": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
            "NANOCODER_PROVIDERS": providers(model),
            "NANOCODER_TRUST_DIRECTORY": "1",
        }
        return Launch(
            argv=(*argv, "run", prompt),
            env=added,
            stream_format=self.stream_format,
            timeouts={"MCP request": "the MCP SDK's fixed 60 s; no setting, not reset by progress"},
        )


RECIPE = NanocoderRecipe(AGENT)
