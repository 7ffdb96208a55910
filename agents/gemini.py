"""Gemini CLI: ``gemini -p`` with stream-json output, API-key auth selected.

**Config.** ``~/.gemini/settings.json`` (project ``.gemini/settings.json``), may hold comments.
``trust: true`` is required: without it Gemini CLI never offers the tool in headless mode.

**Launch.** Measured with Gemini CLI 0.61: with ``GOOGLE_GEMINI_BASE_URL`` set it takes the
"gateway" auth type from the environment and refuses a headless run ("Invalid auth method
selected.") unless ``security.auth.selectedType = "gemini-api-key"`` is in its settings; a
system settings file (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``) is skipped when any parent folder
is world-writable (``/tmp``), so :func:`prepare` sets the key in the user's settings, where
``agents install`` put the server. A folder must be trusted (``GEMINI_CLI_TRUST_WORKSPACE=true``)
and the server entry ``trust: true`` for the tool to be offered. Its per-call limit is the
entry's ``timeout``; progress does not extend it.

**Stream.** ``init`` (session_id, model), ``message`` (role user/assistant, assistant text
arriving as ``delta`` chunks that are merged here into one message), ``tool_use`` /
``tool_result`` paired by ``tool_id``, ``error`` and a closing ``result`` with ``stats``
(tokens, duration; no cost).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.agent import Agent, AgentCommand, ModelApi, model_from, pick
from ssebench.agents.base import Client, ServerSettings, Unit
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "gemini"
GEMINI_AUTH_KEY = ("security", "auth", "selectedType")
GEMINI_AUTH_TYPE = "gemini-api-key"


@dataclass(frozen=True)
class GeminiCli(Client):
    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        entry: dict[str, Any] = {"url": settings.url, "type": "http"}
        self.with_timeout(entry, settings)
        entry["trust"] = True
        return entry


def model_api(env: Mapping[str, str]) -> ModelApi:
    # prepare() selects API-key auth: without GEMINI_API_KEY Gemini CLI exits 41
    return ModelApi(keys=("GEMINI_API_KEY",), base_url="GOOGLE_GEMINI_BASE_URL")


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    argv = [BINARY, "-p", prompt, "--output-format", "stream-json", "--approval-mode", "yolo"]
    model = model_from(env)
    if model:
        argv += ["--model", model]
    added = {**pick(env, "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"), "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    return AgentCommand(
        argv=tuple(argv),
        env=added,
        timeouts={"timeout": "from agents install (default 3600000 ms), not reset by progress"},
    )


def prepare(*, home: Path, env: Mapping[str, str]) -> None:
    """Select API-key auth in ``~/.gemini/settings.json`` unless the user chose one."""
    from ssebench.agents import files
    from ssebench.agents.formats import EDITORS

    editor = EDITORS["json"]
    path = home / ".gemini" / "settings.json"

    def select(text: str | None) -> str | None:
        if text is not None and editor.get(text, GEMINI_AUTH_KEY) is not None:
            return text
        return editor.set(text, GEMINI_AUTH_KEY, GEMINI_AUTH_TYPE)

    files.edit(path, select, cache=files.cache_folder(env, home))


class GeminiEvents(StreamConverter):
    """``gemini -p --output-format stream-json`` → dialog events."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._names: dict[str, str] = {}
        self._text: list[str] = []  # assistant deltas not yet written

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            self._text.append(str(event.get("content", "")))
            if not event.get("delta"):
                yield from self._flush()
            return
        yield from self._flush()
        if kind == "init":
            yield ev.init(self.agent, session=event.get("session_id"), model=event.get("model"))
        elif kind == "message" and event.get("role") == "user":
            yield ev.prompt(str(event.get("content", "")))
        elif kind == "tool_use":
            tool_id = str(event.get("tool_id"))
            self._names[tool_id] = str(event.get("tool_name"))
            yield ev.tool_running(tool_id, self._names[tool_id], event.get("parameters"))
        elif kind == "tool_result":
            tool_id = str(event.get("tool_id"))
            ok = event.get("status") == "success"
            error = event.get("error")
            output = event.get("output")
            if output is None and isinstance(error, dict):
                output = error.get("message")
            yield ev.tool_finished(tool_id, self._names.get(tool_id, "?"), ok=ok, output=ev.text_of(output))
        elif kind == "error" and event.get("severity") == "error":
            self.failed = str(event.get("message", "error"))
        elif kind == "result":
            self._result(event)

    def finish(self) -> Iterator[Event]:
        yield from self._flush()

    def _flush(self) -> Iterator[Event]:
        if self._text:
            text = "".join(self._text)
            self._text = []
            if text:
                yield ev.message(text)

    def _result(self, event: dict) -> None:
        self.finished = True
        if event.get("status") not in (None, "success"):
            error = event.get("error")
            self.failed = str(error.get("message") if isinstance(error, dict) else error or "error")
        stats = event.get("stats") or {}
        if isinstance(stats.get("duration_ms"), (int, float)):
            self.duration = stats["duration_ms"] / 1000
        cached = stats.get("cached") or 0
        inputs = stats.get("input_tokens") or 0
        self.add_tokens(input=max(inputs - cached, 0), output=stats.get("output_tokens") or 0, cached=cached)


CLIENT = GeminiCli(
    name="gemini",
    title="Gemini CLI",
    format="json",
    container=("mcpServers",),
    user_path=".gemini/settings.json",
    project_path=".gemini/settings.json",
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour="Gemini CLI's default is 10 minutes and progress does not extend it.",
    binaries=(BINARY,),
    extra_notes=("trust: true lets Gemini CLI call the tool without asking (needed headless).",),
)

AGENT = Agent(
    package="@google/gemini-cli",
    binary=BINARY,
    client=CLIENT,
    launch=launch,
    prepare=prepare,
    config_vars=("GEMINI_CLI_HOME",),
    model_api=model_api,
    model_vars="`GEMINI_API_KEY`; `GOOGLE_GEMINI_BASE_URL`",
    stream_format="gemini-stream-json",  # gemini -p --output-format stream-json
    reader=GeminiEvents,
)
