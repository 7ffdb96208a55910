"""opencode's run recipe: ``opencode run --format json``, the model API from the environment.

Measured with opencode 1.18: the model API is the ``anthropic`` provider with
``options.baseURL``, given as ``OPENCODE_CONFIG_CONTENT`` (merged over the user's config, so
the MCP entry stays where ``agents install`` put it); ``OPENCODE_DISABLE_MODELS_FETCH=1``
keeps it from fetching the model list; ``opencode run`` waits for stdin unless it is empty.
Its 60 s default per-call limit is reset by progress, and the entry's ``timeout`` raises it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.agents.opencode import AGENT
from ssebench.agents.recipe import AgentRecipe, Launch, ModelApi, model_from, pick

# opencode provider -> the variables holding its key (opencode's own provider list);
# a provider not listed here is not checked by the preflight
OPENCODE_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "google": ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY"),
}


#: what keeps opencode from reaching its vendor's services in a headless run
OFFLINE_ENV: tuple[tuple[str, str], ...] = (
    ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
    ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
)


@dataclass(frozen=True)
class OpencodeRecipe(AgentRecipe):
    """opencode's, and its forks' (Kilo Code: its own flags, variables and config variable)."""

    default_provider: str = "anthropic"
    run_flags: tuple[str, ...] = ()  # after ``run --format json``
    offline_env: tuple[tuple[str, str], ...] = OFFLINE_ENV
    config_var: str = "OPENCODE_CONFIG_CONTENT"  # a JSON config merged over the user's

    def provider(self, env: Mapping[str, str]) -> str:
        model = model_from(env)
        return model.split("/", 1)[0] if model and "/" in model else self.default_provider

    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        # without a key opencode waits silently until the agent timeout
        provider = self.provider(env)
        base_url = "ANTHROPIC_BASE_URL" if provider == "anthropic" else None
        return ModelApi(keys=OPENCODE_KEYS.get(provider, ()), base_url=base_url)

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = [self.binary, "run", "--format", "json", *self.run_flags]
        model = model_from(env)
        if model:
            argv += ["--model", model if "/" in model else f"{self.default_provider}/{model}"]
        argv.append(prompt)
        added = {**pick(env, *OPENCODE_KEYS.get(self.provider(env), ())), **dict(self.offline_env)}
        base_url = (env.get("ANTHROPIC_BASE_URL") or "").strip().rstrip("/")
        if base_url:
            # opencode's anthropic provider wants the versioned root; ANTHROPIC_BASE_URL has none
            options = {"baseURL": base_url if base_url.endswith("/v1") else base_url + "/v1"}
            added[self.config_var] = json.dumps({"provider": {"anthropic": {"options": options}}})
        return Launch(
            argv=tuple(argv),
            env=added,
            stream_format=self.stream_format,
            timeouts={"timeout": "from agents install (default 3600000 ms), reset by progress"},
        )


RECIPE = OpencodeRecipe(AGENT)
