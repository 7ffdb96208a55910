"""GitHub Copilot CLI: ``copilot -p PROMPT --output-format json --allow-all-tools``.

**Config.** ``~/.copilot/mcp-config.json`` (``$COPILOT_HOME/mcp-config.json``). The entry is
``{"type": "http", "url": ..., "tools": ["*"], "timeout": ms}``; ``timeout`` is the per-call
limit in milliseconds. A fixed shape, so a table row (agents/generic/table.py).

**Launch.** Measured with Copilot CLI 1.0.102: with ``COPILOT_PROVIDER_BASE_URL`` (and its type
and key) it talks to that provider instead of GitHub's models, needs no GitHub login, and
``COPILOT_OFFLINE=true`` keeps it from contacting GitHub at all (telemetry off too); the launch
sets offline mode only when a provider URL is given. ``SSE_AGENT_MODEL`` becomes ``--model``.
Built-in MCP servers (GitHub's own) are left out of a headless run.

**Stream.** One ``{"type", "data", "id", "timestamp"}`` object per line (``ephemeral`` ones are
progress): ``assistant.message`` (the whole text, with ``toolRequests``),
``assistant.reasoning``, ``tool.execution_start`` / ``tool.execution_complete`` paired by
``toolCallId`` (``success``, ``result.content`` or ``error.message``), ``session.error``, and a
closing ``result`` (``sessionId``, ``exitCode``, ``usage.sessionDurationMs``). Measured with
1.0.102 against a BYOK provider, the stream carries no token counts, so the dialog's stay 0
and it reports no usage.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ssebench.agents.agent import Agent, AgentCommand, ModelApi, model_from, pick
from ssebench.agents.base import Unit
from ssebench.agents.generic.table import URL, TableClient
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "copilot"
PROVIDER_VARS = ("COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_TYPE", "COPILOT_PROVIDER_API_KEY", "COPILOT_MODEL")
GITHUB_KEYS = ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")


def model_api(env: Mapping[str, str]) -> ModelApi:
    return ModelApi(keys=("COPILOT_PROVIDER_API_KEY", *GITHUB_KEYS), base_url="COPILOT_PROVIDER_BASE_URL")


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    argv = [BINARY, "-p", prompt, "--output-format", "json", "--allow-all-tools", "--disable-builtin-mcps"]
    model = model_from(env)
    if model:
        argv += ["--model", model]
    added = pick(env, *PROVIDER_VARS, *GITHUB_KEYS)
    if added.get("COPILOT_PROVIDER_BASE_URL"):
        added["COPILOT_OFFLINE"] = "true"
    return AgentCommand(argv=tuple(argv), env=added, timeouts={"timeout": "from agents install (default 3600000 ms)"})


class CopilotEvents(StreamConverter):
    """``copilot -p --output-format json`` → dialog events."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._started = False
        self._names: dict[str, str] = {}

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        raw = event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if not self._started:
            self._started = True
            yield ev.init(self.agent, session=event.get("sessionId"))
        if kind == "assistant.message" and data.get("content"):
            yield ev.message(str(data["content"]))
        elif kind == "assistant.reasoning" and data.get("content"):
            yield ev.thinking(str(data["content"]))
        elif kind == "tool.execution_start":
            tool_id = str(data.get("toolCallId"))
            self._names[tool_id] = str(data.get("toolName"))
            yield ev.tool_running(tool_id, self._names[tool_id], data.get("arguments"))
        elif kind == "tool.execution_complete":
            yield self._tool_end(data)
        elif kind == "session.error":
            self.failed = str(data.get("message") or data.get("errorType") or "error")
        elif kind == "result":
            self._result(event)

    def _tool_end(self, data: dict[str, Any]) -> Event:
        ok = bool(data.get("success"))
        result = data.get("result") if ok else data.get("error")
        output = result.get("content", result.get("message")) if isinstance(result, dict) else result
        tool_id = str(data.get("toolCallId"))
        return ev.tool_finished(tool_id, self._names.get(tool_id, "?"), ok=ok, output=ev.text_of(output))

    def _result(self, event: dict[str, Any]) -> None:
        self.finished = True
        usage = event.get("usage") or {}
        if isinstance(usage.get("sessionDurationMs"), (int, float)):
            self.duration = usage["sessionDurationMs"] / 1000
        if event.get("exitCode") not in (None, 0):
            self.failed = self.failed or f"exit code {event.get('exitCode')}"


CLIENT = TableClient(
    name="copilot",
    title="GitHub Copilot CLI",
    format="json",
    container=("mcpServers",),
    user_path=".copilot/mcp-config.json",
    home_var=("COPILOT_HOME", ".copilot"),
    shape=(("type", "http"), ("url", URL), ("tools", ["*"])),
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour="Copilot CLI's own default outlasted a 90 s call without progress (measured with 1.0.102).",
    binaries=(BINARY,),
    extra_notes=(
        "`copilot mcp get NAME` shows the timeout Copilot CLI read.",
        "Project scope: Copilot CLI also reads ./.mcp.json, the file `ssebench agents install claude "
        "--scope project` writes (one entry serves both), so ssebench writes no second one there.",
    ),
)

AGENT = Agent(
    package="@github/copilot",
    binary=BINARY,
    client=CLIENT,
    launch=launch,
    config_vars=("COPILOT_HOME",),
    model_api=model_api,
    model_vars="your own provider (`COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_API_KEY`, "
    "`COPILOT_PROVIDER_TYPE`, `SSE_AGENT_MODEL` or `COPILOT_MODEL`), or GitHub's models "
    "(`COPILOT_GITHUB_TOKEN`, `GH_TOKEN` or `GITHUB_TOKEN`)",
    stream_format="copilot-json",  # copilot -p PROMPT --output-format json
    reader=CopilotEvents,
)
