"""Factory Droid: ``droid exec -o stream-json PROMPT`` with a BYOK model, no Factory login.

**Install.** ``droid`` from npm; its binary comes in the platform package
``@factory/cli-linux-x64`` (an optional dependency on the registry, nothing downloaded).

**Config.** ``~/.factory/mcp.json``, ``mcpServers.NAME`` with ``type: "http"`` and ``url``
(Streamable HTTP; ``droid mcp list`` shows it). No timeout key of Droid's own was found in
0.215.0 (its bundled binary names none for MCP servers); how long it waits for a call was not
measured. Droid defers every MCP tool behind its ``ToolSearch`` tool: the model sees
``ToolSearch`` and must load ``ssebench___test_patch`` with ``select:ssebench___test_patch``
before it can call it (no setting turns that off in 0.215.0).

**Launch.** Measured with Droid 0.215.0: ``exec`` runs one prompt headless, ``-o stream-json``
prints its events, ``--auto high`` lets it edit files and run commands (``exec`` is read-only
by default). The model is a BYOK custom model, which needs no Factory account: ``prepare``
writes ``customModels`` into ``~/.factory/settings.json`` (the run's ``OPENAI_BASE_URL`` and
model, ``provider: "generic-chat-completion-api"``: chat completions) and ``-m
custom:MODEL`` picks it. Droid reads the key only from that entry, so the key is written
there, in the run's private HOME (as for Cline).

**Stream.** ``system``/``init`` (the session id), ``message`` (user and assistant text),
``tool_call`` and ``tool_result`` (``value`` or ``error.message``), ``error``, and one
``completion`` at the end with the run's token counts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ssebench.agents.agent import MODEL_VAR, Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.generic.table import URL, TableClient
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "droid"
DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: what ``prepare`` reads: passed on, so that a container's entrypoint prepares with the run's values
PREPARE_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", MODEL_VAR)


def custom_model(env: Mapping[str, str]) -> dict[str, Any]:
    """The BYOK entry: the run's endpoint, model and key (Droid takes the key from here only)."""
    return {
        "model": model_from(env) or DEFAULT_MODEL,
        "displayName": "ssebench",
        "baseUrl": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
        "apiKey": (env.get("OPENAI_API_KEY") or "").strip(),
        "provider": "generic-chat-completion-api",
        "maxOutputTokens": 16384,
    }


def prepare(*, home: Path, env: Mapping[str, str]) -> None:
    """The run's model as Droid's one custom model, in the run's own HOME."""
    from ssebench.agents import files
    from ssebench.agents.formats import EDITORS

    files.edit(
        home / ".factory" / "settings.json",
        lambda text: EDITORS["json"].set(text, ("customModels",), [custom_model(env)]),
        cache=files.cache_folder(env, home),
    )


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    model = f"custom:{model_from(env) or DEFAULT_MODEL}"
    return AgentCommand(
        argv=(BINARY, "exec", "-o", "stream-json", "--auto", "high", "-m", model, prompt),
        env=pick(env, *PREPARE_VARS),
        timeouts={"MCP call": "no timeout key known for Droid 0.215.0 (not measured)"},
    )


class DroidEvents(StreamConverter):
    """``droid exec -o stream-json`` → dialog events."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._names: dict[str, str] = {}

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            yield ev.init(self.agent, session=event.get("session_id"), model=event.get("model"))
        elif kind == "message" and event.get("role") == "assistant" and event.get("text"):
            yield ev.message(str(event["text"]))
        elif kind == "tool_call":
            tool_id, name = str(event.get("id")), str(event.get("toolName") or event.get("toolId") or "tool")
            self._names[tool_id] = name
            yield ev.tool_running(tool_id, name, event.get("parameters") or {})
        elif kind == "tool_result":
            yield self._result(event)
        elif kind == "error" and event.get("message"):
            self.failed = str(event["message"])
        elif kind == "completion":
            raw = event.get("usage")
            usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
            tokens = {"input": usage.get("input_tokens", 0), "output": usage.get("output_tokens", 0)}
            self.add_tokens(**tokens, cached=usage.get("cache_read_input_tokens", 0))
            self.finished = True

    def _result(self, event: dict[str, Any]) -> Event:
        tool_id = str(event.get("id"))
        name = self._names.get(tool_id, str(event.get("toolId") or "tool"))
        if event.get("isError"):
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            return ev.tool_finished(tool_id, name, ok=False, output=str(message))
        return ev.tool_finished(tool_id, name, ok=True, output=ev.text_of(event.get("value")))


CLIENT = TableClient(
    name="droid",
    title="Factory Droid",
    format="json",
    container=("mcpServers",),
    user_path=".factory/mcp.json",
    shape=(("type", "http"), ("url", URL)),
    timeout_behaviour=(
        "Factory Droid has no timeout key for an MCP server that we know of (0.215.0); its limit on a call was "
        "not measured."
    ),
    binaries=(BINARY,),
    extra_notes=("Droid offers MCP tools to the model behind its ToolSearch tool (loaded with select:NAME).",),
)

AGENT = Agent(
    package="droid",
    binary=BINARY,
    client=CLIENT,
    launch=launch,
    prepare=prepare,
    model_api=openai_api,
    model_vars=(
        "`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API, as a BYOK custom "
        "model: no Factory login; default `https://api.openai.com/v1`, model `gpt-5`)"
    ),
    stream_format="droid-stream-json",  # droid exec -o stream-json
    reader=DroidEvents,
)
