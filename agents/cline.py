"""Cline CLI: ``cline --json PROMPT`` (act mode, tools auto-approved), an OpenAI-compatible
model from the environment.

**Config.** ``~/.cline/data/settings/cline_mcp_settings.json`` (no project file). The entry is
the shape ``cline mcp add NAME URL --transport streamableHttp`` writes, a ``transport`` object,
plus ``timeout`` in seconds, which Cline clamps to 1..3600 (default 60) and applies to every
request of the server; progress does not extend it (Cline sends no progress token).

**Launch.** Measured with Cline CLI 3.0.65: only its ``openai``/``openai-compatible`` providers
take a base URL, and only from ``~/.cline/data/settings/providers.json`` (what ``cline auth -p
openai -k KEY -b URL -m MODEL`` writes); ``-P``/``-k``/``-m`` pick a provider, key and model for
one run but no URL. So :func:`prepare` writes that provider entry, key included (the run's HOME
is private), and the launch names the provider and model. In a container the entrypoint does
that again just before Cline starts (``SSE_AGENT``), from the variables the launch passes on:
the layer's build had no URL or key. ``CLINE_NO_AUTO_UPDATE=1`` stops its update check,
``CLINE_SESSION_BACKEND_MODE=local`` its background hub daemon.

**Stream.** One JSON object per line: ``hook_event`` lines (``agent_start`` carries the
``taskId``), ``agent_event`` lines whose ``event`` is ``content_start``/``content_end`` of a
``text``, ``reasoning`` or ``tool`` block (a tool's ``toolCallId``, ``toolName``, ``input``, then
its ``output``: the MCP result, ``content`` and ``isError``), ``usage`` per model call (with the
session's running ``totalCost``), ``error`` and ``done``, and a closing ``run_result``
(``finishReason``, ``durationMs``).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.agent import MODEL_VAR, Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.base import Client, Env, Scope, ServerSettings, Unit
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "cline"
#: the longest per-request limit Cline honours (seconds); a larger value is clamped to it
CLINE_MAX_TIMEOUT = 3600
SETTINGS_FILE = "cline_mcp_settings.json"
PROVIDER = "openai-compatible"
DEFAULT_MODEL = "gpt-4.1"  # Cline needs a model name; SSE_AGENT_MODEL overrides it
PROVIDERS_FILE = (".cline", "data", "settings", "providers.json")
#: what :func:`prepare` reads, passed on so that a container's entrypoint, which runs it again
#: just before the agent (an image's layer has no key or URL), has them too
PROVIDER_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", MODEL_VAR)
#: no update check; the session in this process: by default Cline starts a detached "hub"
#: daemon that outlives the run (found left behind by a test) and later runs reuse it
LOCAL_ENV = {"CLINE_NO_AUTO_UPDATE": "1", "CLINE_SESSION_BACKEND_MODE": "local"}


@dataclass(frozen=True)
class ClineCli(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        """Cline's own rule: $CLINE_MCP_SETTINGS_PATH, else $CLINE_DATA_DIR/settings/, else
        $CLINE_DIR/data/settings/, else ~/.cline/data/settings/ (absolute values only)."""
        if scope is Scope.PROJECT:
            return None
        for var, rest in (
            ("CLINE_MCP_SETTINGS_PATH", ()),
            ("CLINE_DATA_DIR", ("settings", SETTINGS_FILE)),
            ("CLINE_DIR", ("data", "settings", SETTINGS_FILE)),
        ):
            value = (env.vars.get(var) or "").strip()
            if value and os.path.isabs(value):
                return Path(value, *rest)
        return super().config_path(scope, env)

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        entry: dict[str, Any] = {"transport": {"type": "streamableHttp", "url": settings.url}}
        return self.with_timeout(entry, settings)

    def timeout_value(self, seconds: int) -> int:
        return min(seconds, CLINE_MAX_TIMEOUT)

    def url_of(self, entry: Mapping[str, Any]) -> str | None:
        transport = entry.get("transport")
        if isinstance(transport, Mapping) and isinstance(transport.get("url"), str):
            return str(transport["url"])
        return super().url_of(entry)


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    argv = (BINARY, "--json", "-P", PROVIDER, "-m", model_from(env) or DEFAULT_MODEL, prompt)
    return AgentCommand(
        argv=argv,
        env={**LOCAL_ENV, **pick(env, *PROVIDER_VARS)},
        timeouts={"timeout": "from agents install (default 3600 s, Cline's maximum), not reset by progress"},
    )


def prepare(*, home: Path, env: Mapping[str, str]) -> None:
    """The OpenAI-compatible provider in Cline's providers.json (its only place for a URL)."""
    from ssebench.agents import files
    from ssebench.agents.formats import EDITORS

    settings = {"provider": PROVIDER, "model": model_from(env) or DEFAULT_MODEL}
    if (env.get("OPENAI_API_KEY") or "").strip():
        settings["apiKey"] = env["OPENAI_API_KEY"].strip()
    base_url = (env.get("OPENAI_BASE_URL") or "").strip()
    if base_url:
        settings["baseUrl"] = base_url
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
    editor = EDITORS["json"]

    def write(text: str | None) -> str | None:
        text = editor.set(text, ("version",), 1) if text is None else text
        text = editor.set(text, ("lastUsedProvider",), PROVIDER)
        entry = {"settings": settings, "updatedAt": stamp.replace("+00:00", "Z"), "tokenSource": "manual"}
        return editor.set(text, ("providers", PROVIDER), entry)

    files.edit(home.joinpath(*PROVIDERS_FILE), write, cache=files.cache_folder(env, home))


class ClineEvents(StreamConverter):
    """``cline --json`` → dialog events."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._started = False

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        if not self._started:
            self._started = True
            yield ev.init(self.agent, session=event.get("taskId"))
        if kind == "agent_event" and isinstance(event.get("event"), dict):
            yield from self._agent_event(event["event"])
        elif kind == "run_result":
            self._result(event)

    def _agent_event(self, event: dict[str, Any]) -> Iterator[Event]:
        kind = event.get("type")
        content = event.get("contentType")
        if kind == "content_start" and content == "tool":
            yield ev.tool_running(str(event.get("toolCallId")), str(event.get("toolName")), event.get("input"))
        elif kind == "content_end" and content == "tool":
            yield self._tool_end(event)
        elif kind == "content_end" and content == "text" and event.get("text"):
            yield ev.message(str(event["text"]))
        elif kind == "content_end" and content in ("reasoning", "thinking") and event.get("text"):
            yield ev.thinking(str(event["text"]))
        elif kind == "usage":
            self._usage(event)
        elif kind == "error":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            self.failed = str(message or event.get("message") or "error")

    def _usage(self, event: dict[str, Any]) -> None:
        """One model call's tokens; ``totalCost`` is the session's so far, as ``totalInputTokens`` is
        (read in the pinned CLI: ``cost`` is the call's share, left out when 0)."""
        self.add_tokens(
            input=event.get("inputTokens") or 0,
            output=event.get("outputTokens") or 0,
            cached=event.get("cacheReadTokens") or 0,
        )
        total = event.get("totalCost")
        if isinstance(total, (int, float)) and not isinstance(total, bool):
            self.cost_usd = float(total)

    def _tool_end(self, event: dict[str, Any]) -> Event:
        output = event.get("output")
        error = event.get("error")
        ok = error is None and not (isinstance(output, dict) and output.get("isError"))
        if isinstance(output, dict) and "content" in output:
            text = ev.text_of(output["content"])
        else:
            text = ev.text_of(output if output is not None else error)
        return ev.tool_finished(str(event.get("toolCallId")), str(event.get("toolName")), ok=ok, output=text)

    def _result(self, event: dict[str, Any]) -> None:
        self.finished = True
        if isinstance(event.get("durationMs"), (int, float)):
            self.duration = event["durationMs"] / 1000
        reason = event.get("finishReason")
        if reason not in (None, "completed"):
            error = event.get("error")
            self.failed = str((error.get("message") if isinstance(error, dict) else error) or reason)


CLIENT = ClineCli(
    name="cline",
    title="Cline CLI",
    format="json",
    container=("mcpServers",),
    user_path=".cline/data/settings/cline_mcp_settings.json",
    path_note="(or $CLINE_MCP_SETTINGS_PATH, under $CLINE_DATA_DIR/settings or $CLINE_DIR/data/settings)",
    timeout_key="timeout",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Cline CLI's default is 60 s, at most 3600 s; progress does not extend it.",
    binaries=(BINARY,),
    extra_notes=("Cline CLI clamps a longer timeout to 3600 s, so a test_patch call over an hour fails.",),
)

AGENT = Agent(
    package="cline",
    binary=BINARY,
    client=CLIENT,
    launch=launch,
    prepare=prepare,
    config_vars=(
        "CLINE_DIR",
        "CLINE_DATA_DIR",
        "CLINE_MCP_SETTINGS_PATH",
        "CLINE_PROVIDER_SETTINGS_PATH",
        "CLINE_GLOBAL_SETTINGS_PATH",
    ),
    model_api=openai_api,
    model_vars="`OPENAI_API_KEY` and `OPENAI_BASE_URL` (an OpenAI-compatible endpoint; "
    "`SSE_AGENT_MODEL` names the model)",
    stream_format="cline-json",  # cline --json PROMPT
    reader=ClineEvents,
)
