"""GitHub Copilot CLI's run recipe: ``copilot -p PROMPT --output-format json --allow-all-tools``.

Measured with Copilot CLI 1.0.102: with ``COPILOT_PROVIDER_BASE_URL`` (and its type and key)
it talks to that provider instead of GitHub's models, needs no GitHub login, and
``COPILOT_OFFLINE=true`` keeps it from contacting GitHub at all (telemetry off too); the
recipe sets offline mode only when a provider URL is given. ``SSE_AGENT_MODEL`` becomes
``--model``. Built-in MCP servers (GitHub's own) are left out of a headless run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.agents.copilot import AGENT
from ssebench.agents.recipe import AgentRecipe, Launch, ModelApi, model_from, pick

PROVIDER_VARS = ("COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_TYPE", "COPILOT_PROVIDER_API_KEY", "COPILOT_MODEL")
GITHUB_KEYS = ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")


@dataclass(frozen=True)
class CopilotRecipe(AgentRecipe):
    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        return ModelApi(keys=("COPILOT_PROVIDER_API_KEY", *GITHUB_KEYS), base_url="COPILOT_PROVIDER_BASE_URL")

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = [self.binary, "-p", prompt, "--output-format", "json", "--allow-all-tools", "--disable-builtin-mcps"]
        model = model_from(env)
        if model:
            argv += ["--model", model]
        added = pick(env, *PROVIDER_VARS, *GITHUB_KEYS)
        if added.get("COPILOT_PROVIDER_BASE_URL"):
            added["COPILOT_OFFLINE"] = "true"
        return Launch(
            argv=tuple(argv),
            env=added,
            stream_format=self.stream_format,
            timeouts={"timeout": "from agents install (default 3600000 ms)"},
        )


RECIPE = CopilotRecipe(AGENT)
