"""Continue CLI's run recipe: ``cn -p --format json --auto``, the model from ``config.yaml``.

Measured with ``cn`` 1.5.47: with a ``~/.continue/config.yaml`` it needs no login (without
one it fetches a default config from the Continue hub). :meth:`ContinueRecipe.prepare` adds
a model named ``ssebench`` there whose fields are Continue's ``${{ secrets.NAME }}``
templates, which ``cn`` fills from the environment at start: ``OPENAI_BASE_URL``,
``OPENAI_API_KEY`` and ``CONTINUE_SSEBENCH_MODEL`` (set by :meth:`launch` from
``SSE_AGENT_MODEL``), so the file holds no key and the Docker layer can prepare it before
the run's variables are known. ``--auto`` allows every tool (the agent edits the tree);
``--format json`` prints only the final answer, as one JSON line. Telemetry goes nowhere
without an OTLP endpoint and is switched off besides. A tool call is limited to the MCP
SDK's 60 s default, which neither a setting nor progress changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.agents import files
from ssebench.agents.continue_cli import AGENT
from ssebench.agents.formats import EDITORS
from ssebench.agents.recipe import AgentRecipe, Launch, ModelApi, model_from, pick

MODEL_VAR = "CONTINUE_SSEBENCH_MODEL"
DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: the model entry prepare() adds; ``cn`` resolves each ``${{ secrets.X }}`` from the environment
MODEL_ENTRY = {
    "provider": "openai",
    "model": "${{ secrets." + MODEL_VAR + " }}",
    "apiBase": "${{ secrets.OPENAI_BASE_URL }}",
    "apiKey": "${{ secrets.OPENAI_API_KEY }}",
    "roles": ["chat"],
    "capabilities": ["tool_use"],
}


@dataclass(frozen=True)
class ContinueRecipe(AgentRecipe):
    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        # without a key cn fails its first model request ("401"), after loading everything else
        return ModelApi(keys=("OPENAI_API_KEY",), base_url="OPENAI_BASE_URL")

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = (self.binary, "-p", "--format", "json", "--auto", prompt)
        added = {
            **pick(env, "OPENAI_API_KEY"),
            "OPENAI_BASE_URL": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
            MODEL_VAR: model_from(env) or DEFAULT_MODEL,
            "CONTINUE_CLI_ENABLE_TELEMETRY": "0",
            "CONTINUE_METRICS_ENABLED": "0",
            "FORCE_NO_TTY": "1",
        }
        return Launch(
            argv=argv,
            env=added,
            stream_format=self.stream_format,
            timeouts={"MCP request": "the MCP SDK's fixed 60 s; no setting, not reset by progress"},
        )

    def prepare(self, *, home: Path, env: Mapping[str, str]) -> None:
        """Add the ``ssebench`` model to Continue's config, beside the MCP entry."""
        editor = EDITORS["yaml-list"]
        folder = env.get("CONTINUE_GLOBAL_DIR")
        path = Path(folder) / "config.yaml" if folder else home / ".continue" / "config.yaml"
        files.edit(path, lambda text: editor.set(text, ("models", "ssebench"), MODEL_ENTRY))


RECIPE = ContinueRecipe(AGENT)
