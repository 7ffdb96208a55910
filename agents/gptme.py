"""gptme: ``gptme -n --output-format json PROMPT``, from PyPI.

**Install.** ``gptme`` from PyPI in a venv of its own from the hashed lock in
configs/agent-clis/pypi/gptme/ (agents/pypi.py); Python 3.10 or newer.

**Config.** ``$XDG_CONFIG_HOME/gptme/config.toml`` (``~/.config/gptme/config.toml``): MCP
servers are an array of named tables, ``[[mcp.servers]]`` with ``name`` and ``url`` (an
``http(s)`` URL is Streamable HTTP), read only with ``[mcp] enabled = true`` and connected
at start with ``auto_start = true``: the ``toml-list`` editor (agents/formats/tomllist.py)
adds both. No timeout key: ``MCPClient.call_tool`` calls the SDK's ``session.call_tool``
with no read timeout (gptme 0.35.1, gptme/mcp/client.py), so no limit of gptme's own ends
the call; but its ``streamablehttp_client`` keeps the SDK's ``sse_read_timeout`` of 300 s
between two events of a response stream, and gptme sends no progress token, so the
server's heartbeats never come: a call silent for 5 minutes fails (read in the source, not
measured).

**Launch.** Measured with gptme 0.35.1: ``-n`` (non-interactive, no confirmations) with
``--output-format json`` prints each message as a JSON line; ``--tool-format tool`` makes
it use the API's native tool calls (MCP tools are offered as ``ssebench.test_patch``, sent
as ``ssebench_test_patch_2605c8948036``: gptme's provider-safe alias). The model is a
provider ``ssebench`` in ``[[providers]]`` that ``prepare`` writes (``base_url`` the run's
``OPENAI_BASE_URL``, the key read from ``OPENAI_API_KEY``: ``api_key_env``, so none on disk),
picked as ``-m ssebench/MODEL``. After the answer gptme asks the model twice more whether
it is done (a user message "No tool call detected ..."), then exits 0.

**Stream.** ``{"type": "message", "role", "content", "metadata"}`` per message: an assistant
message's tool calls are lines ``@TOOL(CALL_ID): ARGS`` in its text, a tool result is a
``system`` message with ``call_id`` and ``metadata.tool``; ``metadata.usage`` and
``metadata.cost`` carry each request's tokens and cost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents import pypi
from ssebench.agents.agent import MODEL_VAR, OPENAI_CHAT_VARS, Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.base import Client, ServerSettings
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "gptme"
PROVIDER = "ssebench"
DEFAULT_MODEL = "gpt-5"
#: what ``prepare`` reads: passed on, so that a container's entrypoint prepares with the run's values
PREPARE_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", MODEL_VAR)
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_CALL = re.compile(r"^@(?P<tool>[\w.\-]+)\((?P<id>[^)]*)\): ?(?P<args>.*)$")


@dataclass(frozen=True)
class GptmeClient(Client):
    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        return {"url": settings.url}


def prepare(*, home: Path, env: Mapping[str, str]) -> None:
    """The run's endpoint as gptme's provider ``ssebench`` (other providers stay)."""
    from ssebench.agents import files
    from ssebench.agents.formats.tomllist import NamedListTomlEditor

    provider = {
        "base_url": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
        "api_key_env": "OPENAI_API_KEY",
        "default_model": model_from(env) or DEFAULT_MODEL,
    }
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "gptme" / "config.toml"
    editor = NamedListTomlEditor()
    files.edit(
        config, lambda text: editor.set(text, ("providers", PROVIDER), provider), cache=files.cache_folder(env, home)
    )


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    model = f"{PROVIDER}/{model_from(env) or DEFAULT_MODEL}"
    argv = (BINARY, "-n", "--output-format", "json", "--tool-format", "tool", "-m", model, prompt)
    return AgentCommand(
        argv=argv,
        env=pick(env, *PREPARE_VARS),
        timeouts={"MCP call": "no limit of gptme's; a response stream silent for 300 s ends it (no progress token)"},
    )


class GptmeEvents(StreamConverter):
    """``gptme -n --output-format json`` → dialog events."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._started = False

    def feed(self, event: dict) -> Iterator[Event]:
        if event.get("type") != "message":
            return
        if not self._started:
            self._started = True
            yield ev.init(self.agent)
        role, content = event.get("role"), ev.text_of(event.get("content"))
        raw = event.get("metadata")
        metadata: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if role == "assistant":
            yield from self._assistant(content)
            self._usage(metadata)
        elif role == "system" and event.get("call_id"):
            name = str(metadata.get("tool") or "tool")
            yield ev.tool_finished(str(event["call_id"]), name, ok=True, output=content)
        # user messages: the prompt (the pipeline writes its own line) and gptme's own nudges
        # after an answer ("No tool call detected ..."), which are not the agent's

    def _assistant(self, content: str) -> Iterator[Event]:
        text: list[str] = []
        for line in content.splitlines():
            call = _CALL.match(line)
            if call is None:
                text.append(line)
                continue
            yield ev.tool_running(call["id"], call["tool"], ev.arguments_of(call["args"]))
        if "\n".join(text).strip():
            yield ev.message("\n".join(text).strip())

    def _usage(self, metadata: dict[str, Any]) -> None:
        usage = metadata.get("usage")
        if isinstance(usage, dict):
            cached = usage.get("cache_read_tokens", 0)
            self.add_tokens(input=usage.get("input_tokens", 0), output=usage.get("output_tokens", 0), cached=cached)
        self.add_cost(metadata.get("cost"))


CLIENT = GptmeClient(
    name="gptme",
    title="gptme",
    format="toml-list",
    container=("mcp", "servers"),
    user_path="{xdg}/gptme/config.toml",
    timeout_behaviour=(
        "gptme sets no limit on a call, but a response stream silent for 300 s ends it (the MCP SDK's "
        "sse_read_timeout) and gptme asks for no progress, so a test_patch call over 5 minutes fails."
    ),
    binaries=(BINARY,),
    extra_notes=(
        "[[mcp.servers]] is read only with [mcp] enabled = true and connected at start with auto_start = true; "
        "install sets both.",
    ),
)

AGENT = Agent(
    package="gptme",
    binary=BINARY,
    **pypi.record_fields("gptme"),
    client=CLIENT,
    launch=launch,
    prepare=prepare,
    model_api=openai_api,
    model_vars=OPENAI_CHAT_VARS,
    stream_format="gptme-json",  # gptme -n --output-format json: one JSON line per message
    reader=GptmeEvents,
)
