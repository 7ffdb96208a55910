"""Cline CLI's run recipe: ``cline --json PROMPT`` (act mode, tools auto-approved), an
OpenAI-compatible model from the environment.

Measured with Cline CLI 3.0.65: only its ``openai``/``openai-compatible`` providers take a base
URL, and only from ``~/.cline/data/settings/providers.json`` (what ``cline auth -p openai -k KEY
-b URL -m MODEL`` writes); ``-P``/``-k``/``-m`` pick a provider, key and model for one run but no
URL. So :meth:`ClineRecipe.prepare` writes that provider entry, key included (the run's HOME is
private), and the launch names the provider and model. ``CLINE_NO_AUTO_UPDATE=1`` stops its
update check, ``CLINE_SESSION_BACKEND_MODE=local`` its background hub daemon. Its per-request
MCP limit is the entry's ``timeout`` (seconds, at most 3600); progress does not extend it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.agents import files
from ssebench.agents.cline import AGENT
from ssebench.agents.formats import EDITORS
from ssebench.agents.recipe import AgentRecipe, Launch, ModelApi, model_from

PROVIDER = "openai-compatible"
DEFAULT_MODEL = "gpt-4.1"  # Cline needs a model name; SSE_AGENT_MODEL overrides it
PROVIDERS_FILE = (".cline", "data", "settings", "providers.json")
#: no update check; the session in this process: by default Cline starts a detached "hub"
#: daemon that outlives the run (found left behind by a test) and later runs reuse it
LOCAL_ENV = {"CLINE_NO_AUTO_UPDATE": "1", "CLINE_SESSION_BACKEND_MODE": "local"}


@dataclass(frozen=True)
class ClineRecipe(AgentRecipe):
    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        return ModelApi(keys=("OPENAI_API_KEY",), base_url="OPENAI_BASE_URL")

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = (self.binary, "--json", "-P", PROVIDER, "-m", model_from(env) or DEFAULT_MODEL, prompt)
        return Launch(
            argv=argv,
            env=LOCAL_ENV,
            stream_format=self.stream_format,
            timeouts={"timeout": "from agents install (default 3600 s, Cline's maximum), not reset by progress"},
        )

    def prepare(self, *, home: Path, env: Mapping[str, str]) -> None:
        """The OpenAI-compatible provider in Cline's providers.json (its only place for a URL)."""
        settings = {"provider": PROVIDER, "model": model_from(env) or DEFAULT_MODEL}
        if (env.get("OPENAI_API_KEY") or "").strip():
            settings["apiKey"] = env["OPENAI_API_KEY"].strip()
        base_url = (env.get("OPENAI_BASE_URL") or "").strip()
        if base_url:
            settings["baseUrl"] = base_url
        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
        editor = EDITORS["json"]

        def write(text: str | None) -> str | None:
            text = editor.set(text, ("version",), 1) if text is None else text
            text = editor.set(text, ("lastUsedProvider",), PROVIDER)
            entry = {"settings": settings, "updatedAt": stamp.replace("+00:00", "Z"), "tokenSource": "manual"}
            return editor.set(text, ("providers", PROVIDER), entry)

        files.edit(home.joinpath(*PROVIDERS_FILE), write)


RECIPE = ClineRecipe(AGENT)
