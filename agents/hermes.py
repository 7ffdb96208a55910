"""Hermes Agent (Nous Research): ``hermes chat -Q -q PROMPT``, from PyPI, dialog from its session.

**Install.** ``hermes-agent[mcp]`` from PyPI (the ``mcp`` extra brings the MCP SDK; without
it Hermes skips ``mcp_servers`` silently), in a venv of its own from the hashed lock in
configs/agent-clis/pypi/hermes/ (agents/pypi.py). Python 3.11 is enough.

**Config.** ``~/.hermes/config.yaml`` (or ``$HERMES_HOME/config.yaml``), ``mcp_servers.NAME``
with ``url`` (Streamable HTTP). ``timeout`` is in seconds (default 300) and bounds the whole
call: the handler waits for it with that deadline (tools/mcp_tool.py in 0.19.0,
``_run_on_mcp_loop(_call, timeout=tool_timeout)``), progress does not extend it, so the
written 3600 s must cover the longest call.

**Launch.** Measured with Hermes 0.19.0: ``chat -q`` runs one query headless, ``-Q`` prints
only the final answer and the session id, ``--yolo`` approves its own tools without a prompt
(MCP tools are not gated). The model is a named provider ``ssebench`` that ``prepare`` writes
into config.yaml: ``base_url: ${OPENAI_BASE_URL}`` and ``key_env: OPENAI_API_KEY``, which
Hermes expands from the environment when it starts (so the file holds no key and does not
change between runs); ``--provider ssebench -m MODEL`` picks it.

**Stream.** ``-Q`` prints rendered text, not events; the whole session is in its SQLite store
(``state.db``). So the launch runs Hermes with its output on stderr, then
``hermes sessions export --format jsonl -``, which prints every session of the run's HOME (the
one this run made) as one JSON line: its messages (OpenAI-style ``tool_calls`` and ``role:
tool`` results), token counts and estimated cost. The dialog is read from that line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ssebench.agents import pypi
from ssebench.agents.agent import OPENAI_CHAT_VARS, Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.base import Unit
from ssebench.agents.generic.table import URL, TableClient
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "hermes"
PROVIDER = "ssebench"
DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: run Hermes (its rendered output to stderr), then print the run's session as one JSON line
SCRIPT = (
    'hermes chat -Q --yolo --provider "$2" -m "$3" -q "$1" </dev/null >&2; status=$?; '
    "hermes sessions export --format jsonl - </dev/null; exit $status"
)


def prepare(*, home: Path, env: Mapping[str, str]) -> None:
    """The ``ssebench`` provider in config.yaml, by reference to the run's variables."""
    from ssebench.agents import files
    from ssebench.agents.formats import EDITORS

    provider = {"base_url": "${OPENAI_BASE_URL}", "key_env": "OPENAI_API_KEY", "api_mode": "chat_completions"}
    files.edit(
        CLIENT.home_folder(home, env) / "config.yaml",
        lambda text: EDITORS["yaml"].set(text, ("providers", PROVIDER), provider),
        cache=files.cache_folder(env, home),
    )


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    model = model_from(env) or DEFAULT_MODEL
    added = {
        **pick(env, "OPENAI_API_KEY"),
        "OPENAI_BASE_URL": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
        "HERMES_ACCEPT_HOOKS": "0",
    }
    return AgentCommand(
        argv=("sh", "-c", SCRIPT, "hermes", prompt, PROVIDER, model),
        env=added,
        timeouts={"timeout": "from agents install (default 3600 s), the whole call, not reset by progress"},
    )


class HermesSession(StreamConverter):
    """``hermes sessions export --format jsonl``'s session line → dialog events."""

    def feed(self, event: dict) -> Iterator[Event]:
        if "messages" not in event:
            return
        yield ev.init(self.agent, session=event.get("id"), model=event.get("model"))
        names: dict[str, str] = {}
        for message in event.get("messages") or []:
            if isinstance(message, dict):
                yield from self._message(message, names)
        cached = event.get("cache_read_tokens") or 0
        self.add_tokens(input=event.get("input_tokens") or 0, output=event.get("output_tokens") or 0, cached=cached)
        if event.get("cost_status") != "unknown":  # a model Hermes has no price for: no cost, not 0
            actual = event.get("actual_cost_usd")
            self.add_cost(actual if actual is not None else event.get("estimated_cost_usd"))
        if event.get("end_reason") not in (None, "", "completed", "cli_close"):
            self.failed = str(event["end_reason"])
        self.finished = True

    def _message(self, message: dict[str, Any], names: dict[str, str]) -> Iterator[Event]:
        role = message.get("role")
        if role == "assistant":
            if message.get("reasoning"):
                yield ev.thinking(str(message["reasoning"]))
            if message.get("content"):
                yield ev.message(ev.text_of(message["content"]))
            for call in _calls(message.get("tool_calls")):
                function = call.get("function") or {}
                tool_id, name = str(call.get("id")), str(function.get("name") or "tool")
                names[tool_id] = name
                yield ev.tool_running(tool_id, name, ev.arguments_of(function.get("arguments")))
        elif role == "tool":
            tool_id = str(message.get("tool_call_id"))
            name = str(message.get("tool_name") or names.get(tool_id, "tool"))
            yield ev.tool_finished(tool_id, name, ok=True, output=ev.text_of(message.get("content")))


def _calls(raw: Any) -> list[dict[str, Any]]:
    """The assistant message's tool calls (the store keeps them as JSON text)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    return [call for call in raw or [] if isinstance(call, dict)]


CLIENT = TableClient(
    name="hermes",
    title="Hermes Agent",
    format="yaml",
    container=("mcp_servers",),
    user_path=".hermes/config.yaml",
    home_var=("HERMES_HOME", ".hermes"),
    shape=(("url", URL),),
    timeout_key="timeout",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Hermes Agent's default is 300 s for the whole call; progress does not extend it.",
    binaries=(BINARY,),
    extra_notes=("Hermes reads mcp_servers only with its mcp extra installed (pip install 'hermes-agent[mcp]').",),
)

AGENT = Agent(
    package="hermes-agent",
    binary=BINARY,
    **pypi.record_fields("hermes"),
    client=CLIENT,
    launch=launch,
    prepare=prepare,
    config_vars=("HERMES_HOME",),
    model_api=openai_api,
    model_vars=OPENAI_CHAT_VARS,
    stream_format="hermes-session-jsonl",  # hermes sessions export --format jsonl, after the run
    reader=HermesSession,
)
