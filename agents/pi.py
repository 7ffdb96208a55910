"""Pi: ``pi --mode json -p PROMPT``, on its own Node, with Pi's built-in MCP client.

**Install.** ``@earendil-works/pi-coding-agent`` (Pi's package since 0.74; the older
``@mariozechner/pi-coding-agent`` had no MCP of its own and needed the pi-mcp-adapter
extension). It needs Node 22.19 or newer, so it is pinned with Nanocoder and Kimi Code in
configs/agent-clis/node22/ beside the Node they run on (agents/runtime.py).

**Config.** ``~/.pi/agent/mcp.json`` (or ``$PI_CODING_AGENT_DIR/mcp.json``; project
``.pi/mcp.json``, read only in a trusted project). A ``url`` entry is Streamable HTTP.
``timeout`` is per request in seconds (default 60), and progress notifications re-arm it
(read in ``@earendil-works/pi-mcp`` 1.6.0, dist/client.js: ``handleProgress`` calls
``armTimeout`` again; docs/mcp.md says the same), so the server's heartbeats carry a long
call and the written timeout is the ceiling of a silence. ``exposure: "direct"`` declares
the tool to the model as ``mcp__ssebench__test_patch``: Pi's default, ``codemode``, reaches
MCP tools only from scripts the model writes.

**Launch.** Measured with Pi 1.6.0 on Node 22.23.5: ``-p`` (print mode) with ``--mode json``
runs one prompt headless and prints every session event as a JSON line; tools run without
asking. ``PI_OFFLINE=1`` stops the version check, telemetry and model catalogue refreshes.
Pi takes a base URL only from ``models.json``, so ``prepare`` writes a provider named
``ssebench`` there (OpenAI chat completions at ``OPENAI_BASE_URL``, the model of the run);
its ``apiKey`` is ``$OPENAI_API_KEY``, which Pi reads from the environment when it sends a
request, so no key is written to disk.

**Stream.** ``session`` (its id), ``message_end`` per message (an assistant message's
``text``, ``thinking`` and ``toolCall`` blocks, and its ``usage``: tokens and ``cost.total``),
``tool_execution_end`` per tool result, ``agent_end`` at the end.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ssebench.agents.agent import MODEL_VAR, Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.base import Unit
from ssebench.agents.generic.table import URL, TableClient
from ssebench.agents.runtime import NODE22_FIELDS
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "pi"
PROVIDER = "ssebench"
DEFAULT_MODEL = "gpt-5"
#: what ``prepare`` reads: passed on, so that a container's entrypoint prepares with the run's values
PREPARE_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", MODEL_VAR)
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def provider(env: Mapping[str, str]) -> dict[str, Any]:
    """The ``models.json`` provider: the run's endpoint and model, the key by reference."""
    return {
        "baseUrl": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
        "api": "openai-completions",
        "apiKey": "$OPENAI_API_KEY",
        "models": [{"id": model_from(env) or DEFAULT_MODEL}],
    }


def prepare(*, home: Path, env: Mapping[str, str]) -> None:
    """Pi's one place for a base URL: a provider in models.json (other providers stay)."""
    from ssebench.agents import files
    from ssebench.agents.formats import EDITORS

    editor = EDITORS["json"]
    files.edit(
        CLIENT.home_folder(home, env) / "models.json",
        lambda text: editor.set(text, ("providers", PROVIDER), provider(env)),
        cache=files.cache_folder(env, home),
    )


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    model = model_from(env) or DEFAULT_MODEL
    argv = (BINARY, "--mode", "json", "-p", "--provider", PROVIDER, "--model", model, prompt)
    return AgentCommand(
        argv=argv,
        env={**pick(env, *PREPARE_VARS), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"},
        timeouts={"timeout": "from agents install (default 3600 s), re-armed by each progress notification"},
    )


class PiEvents(StreamConverter):
    """``pi --mode json`` → dialog events."""

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        if kind == "session":
            yield ev.init(self.agent, session=event.get("id"))
        elif kind == "message_end" and isinstance(event.get("message"), dict):
            yield from self._message(event["message"])
        elif kind == "tool_execution_end":
            result = event.get("result")
            ok = not event.get("isError")
            output = ev.text_of(result.get("content") if isinstance(result, dict) else result)
            yield ev.tool_finished(str(event.get("toolCallId")), str(event.get("toolName")), ok=ok, output=output)
        elif kind == "agent_end":
            self.finished = True

    def _message(self, message: dict[str, Any]) -> Iterator[Event]:
        if message.get("role") != "assistant":
            return
        for block in message.get("content") or []:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and block.get("text"):
                yield ev.message(block["text"])
            elif kind == "thinking" and block.get("thinking"):
                yield ev.thinking(block["thinking"])
            elif kind == "toolCall":
                yield ev.tool_running(str(block.get("id")), str(block.get("name")), block.get("arguments") or {})
        usage = message.get("usage")
        if isinstance(usage, dict):
            tokens = {"input": usage.get("input", 0), "output": usage.get("output", 0)}
            self.add_tokens(**tokens, cached=usage.get("cacheRead", 0))
            cost = usage.get("cost")
            if isinstance(cost, dict) and (cost.get("total") or cost.get("totalFromProvider")):
                self.add_cost(cost.get("total"))  # a model Pi has no price for reports 0: no cost, not 0
        if message.get("stopReason") in ("error", "aborted"):
            self.failed = str(message.get("errorMessage") or message["stopReason"])


CLIENT = TableClient(
    name="pi",
    title="Pi",
    format="json",
    container=("mcpServers",),
    user_path=".pi/agent/mcp.json",
    project_path=".pi/mcp.json",
    home_var=("PI_CODING_AGENT_DIR", ".pi/agent"),
    shape=(("url", URL), ("exposure", "direct")),
    timeout_key="timeout",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Pi's default is 60 s per request; each progress notification starts it again.",
    binaries=(BINARY,),
    extra_notes=(
        'exposure: "direct" offers test_patch to the model as a tool (Pi\'s default, codemode, '
        "reaches MCP tools only from scripts).",
        "Pi 1.6 (@earendil-works/pi-coding-agent) has MCP built in; it needs Node 22.19 or newer.",
    ),
)

AGENT = Agent(
    package="@earendil-works/pi-coding-agent",
    binary=BINARY,
    **NODE22_FIELDS,
    client=CLIENT,
    launch=launch,
    prepare=prepare,
    config_vars=("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "PI_PACKAGE_DIR"),
    model_api=openai_api,
    model_vars=(
        "`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API; default model `gpt-5`)"
    ),
    stream_format="pi-json",  # pi --mode json -p: every session event as a JSON line
    reader=PiEvents,
)
