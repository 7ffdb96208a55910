"""Run recipes for Gemini CLI and opencode (``gemini -p``, ``opencode run``).

Gemini CLI (measured, 0.61): with ``GOOGLE_GEMINI_BASE_URL`` set it takes the "gateway"
auth type from the environment and refuses a headless run ("Invalid auth method selected.")
unless ``security.auth.selectedType = "gemini-api-key"`` is in its settings; a system
settings file (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``) is skipped when any parent folder is
world-writable (``/tmp``), so :meth:`GeminiRecipe.prepare` sets the key in the user's
settings, where ``agents install`` put the server. A folder must be trusted
(``GEMINI_CLI_TRUST_WORKSPACE=true``) and the server entry ``trust: true`` for the tool to be
offered. Its per-call limit is the entry's ``timeout``; progress does not extend it.

opencode (measured, 1.18): the model API is the ``anthropic`` provider with
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

from ssebench.agents import files
from ssebench.agents.recipe import (GEMINI_STREAM_JSON, OPENCODE_JSON, Launch, ModelApi, NoPrepare, Recipe,
                                    model_from, pick)

GEMINI_AUTH_KEY = ("security", "auth", "selectedType")
GEMINI_AUTH_TYPE = "gemini-api-key"
# opencode provider -> the variables holding its key (opencode's own provider list);
# a provider not listed here is not checked by the preflight
OPENCODE_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "google": ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY"),
}


@dataclass(frozen=True)
class GeminiRecipe:
    agent: str = "gemini"
    dialog: str = "gemini"
    stream_format: str = GEMINI_STREAM_JSON
    binary: str = "gemini"
    package: str = "@google/gemini-cli"

    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        # prepare() selects API-key auth: without GEMINI_API_KEY Gemini CLI exits 41
        return ModelApi(keys=("GEMINI_API_KEY",), base_url="GOOGLE_GEMINI_BASE_URL")

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = [self.binary, "-p", prompt, "--output-format", "stream-json", "--approval-mode", "yolo"]
        model = model_from(env)
        if model:
            argv += ["--model", model]
        added = {**pick(env, "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"),
                 "GEMINI_CLI_TRUST_WORKSPACE": "true"}
        return Launch(argv=tuple(argv), env=added, stream_format=self.stream_format,
                      timeouts={"timeout": "from agents install (default 3600000 ms), not reset by progress"})

    def prepare(self, *, home: Path, env: Mapping[str, str]) -> None:
        """Select API-key auth in ``~/.gemini/settings.json`` unless the user chose one."""
        editor = files.EDITORS["json"]
        path = home / ".gemini" / "settings.json"

        def select(text: str | None) -> str | None:
            if text is not None and editor.get(text, GEMINI_AUTH_KEY) is not None:
                return text
            return editor.set(text, GEMINI_AUTH_KEY, GEMINI_AUTH_TYPE)

        files.edit(path, select)


@dataclass(frozen=True)
class OpencodeRecipe(NoPrepare):
    agent: str = "opencode"
    dialog: str = "opencode"
    stream_format: str = OPENCODE_JSON
    binary: str = "opencode"
    package: str = "opencode-ai"
    default_provider: str = "anthropic"

    def provider(self, env: Mapping[str, str]) -> str:
        model = model_from(env)
        return model.split("/", 1)[0] if model and "/" in model else self.default_provider

    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        # without a key opencode waits silently until the agent timeout
        provider = self.provider(env)
        base_url = "ANTHROPIC_BASE_URL" if provider == "anthropic" else None
        return ModelApi(keys=OPENCODE_KEYS.get(provider, ()), base_url=base_url)

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = [self.binary, "run", "--format", "json"]
        model = model_from(env)
        if model:
            argv += ["--model", model if "/" in model else f"{self.default_provider}/{model}"]
        argv.append(prompt)
        added = {**pick(env, *OPENCODE_KEYS.get(self.provider(env), ())), "OPENCODE_DISABLE_MODELS_FETCH": "1",
                 "OPENCODE_DISABLE_AUTOUPDATE": "1"}
        base_url = (env.get("ANTHROPIC_BASE_URL") or "").strip().rstrip("/")
        if base_url:
            # opencode's anthropic provider wants the versioned root; ANTHROPIC_BASE_URL has none
            options = {"baseURL": base_url if base_url.endswith("/v1") else base_url + "/v1"}
            added["OPENCODE_CONFIG_CONTENT"] = json.dumps({"provider": {"anthropic": {"options": options}}})
        return Launch(argv=tuple(argv), env=added, stream_format=self.stream_format,
                      timeouts={"timeout": "from agents install (default 3600000 ms), reset by progress"})


RECIPES: dict[str, Recipe] = {"gemini": GeminiRecipe(), "opencode": OpencodeRecipe()}
