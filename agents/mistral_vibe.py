"""Mistral Vibe: ``vibe -p PROMPT --output streaming --legacy-harness``, from PyPI on Python 3.12.

**Install.** ``mistral-vibe`` from PyPI, in a venv of its own from the hashed lock in
configs/agent-clis/pypi/mistral-vibe/ (agents/pypi.py). It requires Python 3.12 or newer
(``Requires-Python``), which ``python_min`` asks the installer to find (a ``python3.12`` on
PATH or one of pyenv's versions). Pinned at 2.26.1: 3.x runs only its Unified Harness, which
offers MCP tools to the model solely through ``search_tool_functions`` and ``run_typescript``
(the model would have to write TypeScript to call test_patch); 2.26.1 still has the
``--legacy-harness`` escape hatch, whose agent loop declares ``ssebench_test_patch`` directly.

**Config.** ``~/.vibe/config.toml`` (or ``$VIBE_HOME/config.toml``): MCP servers are an array of
named tables, ``[[mcp_servers]]`` with ``name``, ``transport = "streamable-http"`` and ``url``.
``tool_timeout_sec`` (default 60) bounds the whole call: ``call_tool_http`` passes it to the MCP
SDK's ``session.call_tool`` as ``read_timeout_seconds`` with no progress callback
(``vibe/core/tools/mcp/tools.py`` in 2.26.1), so progress does not extend it.

**Launch.** ``-p`` runs one prompt headless and exits; ``--auto-approve`` runs every tool without
asking; ``--trust`` trusts the task's tree for this run only. The model is the run's endpoint as a
provider ``ssebench`` (``api_base``, ``api_key_env_var = "OPENAI_API_KEY"``, ``api_style =
"openai"``) with a ``[[models]]`` item named after the model and ``active_model`` pointing at it,
which ``prepare`` writes into config.toml (the key stays in the environment); telemetry, update
checks and auto-update are switched off there.

**Stream.** ``--output streaming`` prints one JSON line per session entry as the run goes:
``type: "message"`` (``role``, ``content`` blocks) and ``type: "effect"`` for a tool call
(``detail.toolName`` and ``input``; ``state.status``, ``state.output.text``: the MCP result's text).
It carries no token counts. The model gets the MCP result as Vibe renders it: ``ok: True``, the
server's URL, the tool's name, ``text: TEXT`` and ``structured: None``, one per line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ssebench.agents import pypi
from ssebench.agents.agent import MODEL_VAR, OPENAI_CHAT_VARS, Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.base import Unit
from ssebench.agents.generic.table import URL, TableClient
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "vibe"
PROVIDER = "ssebench"
DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: what ``prepare`` reads: passed on, so that a container's entrypoint prepares with the run's values
PREPARE_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", MODEL_VAR)
#: config.toml's switches for an unattended run: no telemetry, no update check or auto-update
SWITCHES = {"enable_telemetry": False, "enable_update_checks": False, "enable_auto_update": False}


def _configured(text: str | None, env: Mapping[str, str]) -> str:
    """config.toml with the run's provider, model and switches (other tables stay)."""
    import tomlkit

    from ssebench.agents.formats.tomllist import NamedListTomlEditor

    model = model_from(env) or DEFAULT_MODEL
    provider = {
        "api_base": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
        "api_key_env_var": "OPENAI_API_KEY",
        "api_style": "openai",
    }
    editor = NamedListTomlEditor()
    out = editor.set(text, ("providers", PROVIDER), provider)
    out = editor.set(out, ("models", model), {"provider": PROVIDER, "alias": model})
    doc = tomlkit.parse(out)
    for key, value in {"active_model": model, **SWITCHES}.items():
        if doc.get(key) != value:
            doc[key] = value
    return tomlkit.dumps(doc)


def prepare(*, home: Path, env: Mapping[str, str]) -> None:
    """The run's endpoint and model in config.toml, by the key's variable name (no key on disk)."""
    from ssebench.agents import files

    files.edit(
        CLIENT.home_folder(home, env) / "config.toml",
        lambda text: _configured(text, env),
        cache=files.cache_folder(env, home),
    )


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    argv = (BINARY, "-p", prompt, "--output", "streaming", "--legacy-harness", "--auto-approve", "--trust")
    return AgentCommand(
        argv=argv,
        env=pick(env, *PREPARE_VARS),
        timeouts={"tool_timeout_sec": "from agents install (default 3600 s), the whole call, not reset by progress"},
    )


class VibeEvents(StreamConverter):
    """``vibe --output streaming`` → dialog events."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._started = False

    def feed(self, event: dict) -> Iterator[Event]:
        if not self._started:
            self._started = True
            yield ev.init(self.agent, session=event.get("sessionId"))
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            for block in event.get("content") or []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text"):
                    yield ev.message(str(block["text"]))
                elif block.get("type") in ("thinking", "reasoning") and (block.get("thinking") or block.get("text")):
                    yield ev.thinking(str(block.get("thinking") or block.get("text")))
        elif kind == "effect" and isinstance(event.get("detail"), dict) and event["detail"].get("kind") == "tool":
            yield from self._tool(str(event.get("id")), event["detail"], event.get("state"))

    @staticmethod
    def _tool(tool_id: str, detail: dict[str, Any], state: Any) -> Iterator[Event]:
        name = str(detail.get("toolName") or "tool")
        yield ev.tool_running(tool_id, name, detail.get("input") or {})
        state = state if isinstance(state, dict) else {}
        if state.get("status") not in ("completed", "failed", "error", "rejected"):
            return
        output = state.get("output")
        text = output.get("text") if isinstance(output, dict) and "text" in output else state.get("outputText")
        if not text and output is not None:
            text = output if isinstance(output, str) else json.dumps(output)
        display = state.get("display") if isinstance(state.get("display"), dict) else {}
        ok = state.get("status") == "completed" and display.get("success", True) is not False
        yield ev.tool_finished(tool_id, name, ok=ok, output=ev.text_of(text))


CLIENT = TableClient(
    name="mistral-vibe",
    title="Mistral Vibe",
    format="toml-array",
    container=("mcp_servers",),
    user_path=".vibe/config.toml",
    home_var=("VIBE_HOME", ".vibe"),
    shape=(("transport", "streamable-http"), ("url", URL)),
    timeout_key="tool_timeout_sec",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Mistral Vibe's default is 60 s for the whole call; progress does not extend it.",
    binaries=(BINARY,),
    extra_notes=("Mistral Vibe needs Python 3.12 or newer.",),
)

AGENT = Agent(
    package="mistral-vibe",
    binary=BINARY,
    **pypi.record_fields("mistral-vibe"),
    python_min=(3, 12),
    client=CLIENT,
    launch=launch,
    prepare=prepare,
    config_vars=("VIBE_HOME",),
    model_api=openai_api,
    model_vars=OPENAI_CHAT_VARS,
    stream_format="vibe-streaming",  # vibe -p --output streaming: one JSON line per message
    reader=VibeEvents,
)
