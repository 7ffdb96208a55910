"""Continue CLI (``cn``): ``cn -p --format json --auto``, the model from ``config.yaml``.

The module is ``continue_cli``: ``continue`` is a Python keyword, so no module can have that name.

**Config.** ``~/.continue/config.yaml`` (or ``$CONTINUE_GLOBAL_DIR/config.yaml``). Its
``mcpServers`` is a list of named items, so the entry is the item whose ``name`` is the
server's (formats/yamllist.py); Streamable HTTP is ``type: streamable-http``. A new file starts
with the ``name``/``version``/``schema`` lines ``cn`` itself writes (``formats.CONTINUE_SKELETON``):
Continue refuses a config without them. ``cn`` 1.5 reads no project config, so there is no
project scope.

**Launch.** Measured with ``cn`` 1.5.47: with a ``~/.continue/config.yaml`` it needs no login
(without one it fetches a default config from the Continue hub). :func:`prepare` adds a model
named ``ssebench`` there whose fields are Continue's ``${{ secrets.NAME }}`` templates, which
``cn`` fills from the environment at start: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and
``CONTINUE_SSEBENCH_MODEL`` (set by :func:`launch` from ``SSE_AGENT_MODEL``), so the file holds
no key and the Docker layer can prepare it before the run's variables are known. ``--auto``
allows every tool (the agent edits the tree); ``--format json`` prints only the final answer,
as one JSON line. Telemetry goes nowhere without an OTLP endpoint and is switched off besides.
A tool call is limited to the MCP SDK's 60 s default, which neither a setting nor progress
changes.

**Stream.** No events while it works: one JSON line at the end, the final answer (as the model
gave it when that is JSON, else wrapped as ``{"response": ..., "status": "success"}``), or
``{"status": "error", "message": ...}``, and ``{"status": "info"|"warning", ...}`` lines around
an automatic compaction. The tool calls are not in this stream, so the dialog shows the answer
and the outcome only (the pipeline still writes the prompt and ``complete``), and no usage.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.agent import Agent, AgentCommand, ModelApi, model_from, pick
from ssebench.agents.base import Client, Env, Scope, ServerSettings
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "cn"
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
class ContinueCli(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and env.vars.get("CONTINUE_GLOBAL_DIR"):
            return Path(env.vars["CONTINUE_GLOBAL_DIR"]) / "config.yaml"
        return super().config_path(scope, env)

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        return {"type": "streamable-http", "url": settings.url}


def model_api(env: Mapping[str, str]) -> ModelApi:
    # without a key cn fails its first model request ("401"), after loading everything else
    return ModelApi(keys=("OPENAI_API_KEY",), base_url="OPENAI_BASE_URL")


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    argv = (BINARY, "-p", "--format", "json", "--auto", prompt)
    added = {
        **pick(env, "OPENAI_API_KEY"),
        "OPENAI_BASE_URL": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
        MODEL_VAR: model_from(env) or DEFAULT_MODEL,
        "CONTINUE_CLI_ENABLE_TELEMETRY": "0",
        "CONTINUE_METRICS_ENABLED": "0",
        "FORCE_NO_TTY": "1",
    }
    return AgentCommand(
        argv=argv,
        env=added,
        timeouts={"MCP request": "the MCP SDK's fixed 60 s; no setting, not reset by progress"},
    )


def prepare(*, home: Path, env: Mapping[str, str]) -> None:
    """Add the ``ssebench`` model to Continue's config, beside the MCP entry."""
    from ssebench.agents import files
    from ssebench.agents.formats import EDITORS

    editor = EDITORS["yaml-list"]
    folder = env.get("CONTINUE_GLOBAL_DIR")
    path = Path(folder) / "config.yaml" if folder else home / ".continue" / "config.yaml"
    files.edit(
        path, lambda text: editor.set(text, ("models", "ssebench"), MODEL_ENTRY), cache=files.cache_folder(env, home)
    )


class ContinueAnswer(StreamConverter):
    """``cn -p --format json`` → dialog events: the answer and the outcome."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._started = False

    def feed(self, event: dict) -> Iterator[Event]:
        if not self._started:
            self._started = True
            yield ev.init(self.agent)
        status = event.get("status")
        if status == "error":
            self.failed = str(event.get("message") or "error")
            self.finished = True
        elif status in ("info", "warning"):
            return
        elif status == "success" and isinstance(event.get("response"), str):
            yield ev.message(event["response"])
            self.finished = True
        else:  # the model's own JSON answer, printed as it came
            yield ev.message(json.dumps(event, ensure_ascii=False))
            self.finished = True


CLIENT = ContinueCli(
    name="continue",
    title="Continue CLI",
    format="yaml-list",
    container=("mcpServers",),
    user_path=".continue/config.yaml",
    timeout_behaviour=(
        "Continue CLI calls a tool with the MCP SDK's fixed 60 s request limit: no setting raises it and "
        "progress does not reset it, so a test_patch call longer than 60 s comes back as an error."
    ),
    binaries=(BINARY,),
    path_note="(or $CONTINUE_GLOBAL_DIR/config.yaml)",
    extra_notes=(
        "Calls that outlast 60 s cannot reach Continue CLI: use it where a test_patch call finishes within "
        "a minute (a quick build, or a level with fewer checks), or run another agent.",
    ),
)

AGENT = Agent(
    package="@continuedev/cli",
    binary=BINARY,
    client=CLIENT,
    launch=launch,
    prepare=prepare,
    config_vars=("CONTINUE_GLOBAL_DIR",),
    model_api=model_api,
    model_vars=(
        "`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API). Unset, the model is "
        "`gpt-5` at `https://api.openai.com/v1`, which Continue CLI asks through `/v1/responses` (it does so for "
        "`gpt-5*` and `o[0-9]*` models on api.openai.com only; any other base URL gets chat completions)"
    ),
    stream_format="continue-json",  # cn -p --format json
    reader=ContinueAnswer,
)
