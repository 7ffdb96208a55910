"""Gemini CLI's run recipe: ``gemini -p`` with stream-json output, API-key auth selected.

Measured with Gemini CLI 0.61: with ``GOOGLE_GEMINI_BASE_URL`` set it takes the "gateway"
auth type from the environment and refuses a headless run ("Invalid auth method selected.")
unless ``security.auth.selectedType = "gemini-api-key"`` is in its settings; a system
settings file (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``) is skipped when any parent folder is
world-writable (``/tmp``), so :meth:`GeminiRecipe.prepare` sets the key in the user's
settings, where ``agents install`` put the server. A folder must be trusted
(``GEMINI_CLI_TRUST_WORKSPACE=true``) and the server entry ``trust: true`` for the tool to be
offered. Its per-call limit is the entry's ``timeout``; progress does not extend it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.agents import files
from ssebench.agents.formats import EDITORS
from ssebench.agents.gemini import AGENT
from ssebench.agents.recipe import AgentRecipe, Launch, ModelApi, model_from, pick

GEMINI_AUTH_KEY = ("security", "auth", "selectedType")
GEMINI_AUTH_TYPE = "gemini-api-key"


@dataclass(frozen=True)
class GeminiRecipe(AgentRecipe):
    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        # prepare() selects API-key auth: without GEMINI_API_KEY Gemini CLI exits 41
        return ModelApi(keys=("GEMINI_API_KEY",), base_url="GOOGLE_GEMINI_BASE_URL")

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = [self.binary, "-p", prompt, "--output-format", "stream-json", "--approval-mode", "yolo"]
        model = model_from(env)
        if model:
            argv += ["--model", model]
        added = {**pick(env, "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"), "GEMINI_CLI_TRUST_WORKSPACE": "true"}
        return Launch(
            argv=tuple(argv),
            env=added,
            stream_format=self.stream_format,
            timeouts={"timeout": "from agents install (default 3600000 ms), not reset by progress"},
        )

    def prepare(self, *, home: Path, env: Mapping[str, str]) -> None:
        """Select API-key auth in ``~/.gemini/settings.json`` unless the user chose one."""
        editor = EDITORS["json"]
        path = home / ".gemini" / "settings.json"

        def select(text: str | None) -> str | None:
            if text is not None and editor.get(text, GEMINI_AUTH_KEY) is not None:
                return text
            return editor.set(text, GEMINI_AUTH_KEY, GEMINI_AUTH_TYPE)

        files.edit(path, select)


RECIPE = GeminiRecipe(AGENT)
