"""fast-agent: ``fast-agent go --message PROMPT``, from PyPI on Python 3.12, its history as the dialog.

**Install.** ``fast-agent-mcp`` from PyPI, in a venv of its own from the hashed lock in
configs/agent-clis/pypi/fast-agent/ (agents/pypi.py). It requires Python 3.12 or newer
(``Requires-Python``), which ``python_min`` asks the installer to find.

**Config.** ``fast-agent.yaml`` in fast-agent's home: ``--home``, else ``$FAST_AGENT_HOME``, else
``./.fast-agent`` in the current folder (``fast_agent/home.py``). A run's current folder is the
task's tree, so the launch sets ``FAST_AGENT_HOME`` to ``~/.fast-agent``, where ``agents install``
writes. ``mcp.servers.NAME`` with ``transport: http`` and ``url`` is Streamable HTTP;
``read_timeout_seconds`` is the MCP SDK client's limit on each request (a tool call included),
not extended by progress (``fast_agent/mcp/client_connection.py`` in 0.10.48 hands it to the
SDK's ``Client``); unset, a call waits with no limit of its own.

**Launch.** ``go --message`` runs one message headless and exits; ``--servers ssebench`` connects
the entry; the model is ``generic.MODEL``, fast-agent's OpenAI-compatible provider, whose
endpoint and key are ``GENERIC_BASE_URL`` and ``GENERIC_API_KEY`` (from the run's
``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``: no file). Its console output is rendered text, so
the launch runs it with that on stderr and ``--results FILE``, then prints FILE: the history
(walked like Code Puppy's saved session, agents/shared/history.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ssebench.agents import pypi
from ssebench.agents.agent import Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.base import Unit
from ssebench.agents.generic.table import URL, TableClient
from ssebench.agents.shared import history
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "fast-agent"
DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: run fast-agent (its console to stderr), then print the history it saved
SCRIPT = (
    'rm -f "$4"; fast-agent go --servers "$2" --model "$3" --results "$4" --message "$1" </dev/null >&2; '
    'status=$?; [ ! -f "$4" ] || cat "$4"; exit $status'
)


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    model = f"generic.{model_from(env) or DEFAULT_MODEL}"
    fa_home = CLIENT.home_folder(home, env)
    added = {
        **pick(env, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
        "GENERIC_BASE_URL": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
        "GENERIC_API_KEY": env.get("OPENAI_API_KEY") or "",
        "FAST_AGENT_HOME": str(fa_home),
    }
    results = str(fa_home / "ssebench-history.json")
    return AgentCommand(
        argv=("sh", "-c", SCRIPT, "fast-agent", prompt, "ssebench", model, results),
        env=added,
        timeouts={
            "read_timeout_seconds": "from agents install (default 3600 s), the whole call, not reset by progress"
        },
    )


class FastAgentHistory(StreamConverter):
    """``fast-agent go --results``'s history (one pretty-printed JSON document) → dialog events."""

    documents = True

    def feed(self, event: dict) -> Iterator[Event]:
        return history.events(self, event, self._message)

    def _message(self, message: dict[str, Any], names: dict[str, str]) -> Iterator[Event]:
        if message.get("role") == "assistant":
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
                    yield ev.message(str(block["text"]))
            for tool_id, call in (message.get("tool_calls") or {}).items():
                params = call.get("params") if isinstance(call, dict) else None
                params = params if isinstance(params, dict) else {}
                names[tool_id] = str(params.get("name") or "tool")
                yield ev.tool_running(tool_id, names[tool_id], ev.arguments_of(params.get("arguments")))
            self._usage(message.get("channels"))
            if message.get("stop_reason") == "error":
                self.failed = "the model request failed"
        for tool_id, result in (message.get("tool_results") or {}).items():
            result = result if isinstance(result, dict) else {}
            ok = not result.get("isError")
            yield ev.tool_finished(tool_id, names.get(tool_id, "tool"), ok=ok, output=ev.text_of(result.get("content")))

    def _usage(self, channels: Any) -> None:
        """The token counts fast-agent keeps per request in the message's usage channel."""
        blocks = channels.get("fast-agent-usage") if isinstance(channels, dict) else None
        for block in blocks or []:
            try:
                usage = json.loads(block.get("text") or "{}") if isinstance(block, dict) else {}
            except ValueError:
                continue
            for attempt in usage.get("provider_attempts") or []:
                prompt, completion = attempt.get("prompt") or {}, attempt.get("completion") or {}
                self.add_tokens(
                    input=prompt.get("total") or 0,
                    output=completion.get("total") or 0,
                    cached=prompt.get("cache_read") or 0,
                )
                self.add_cost(attempt.get("cost_usd"))


CLIENT = TableClient(
    name="fast-agent",
    title="fast-agent",
    format="yaml",
    container=("mcp", "servers"),
    user_path=".fast-agent/fast-agent.yaml",
    home_var=("FAST_AGENT_HOME", ".fast-agent"),
    shape=(("transport", "http"), ("url", URL)),
    timeout_key="read_timeout_seconds",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour=(
        "fast-agent has no limit on a call unless read_timeout_seconds sets one; progress does not extend it."
    ),
    binaries=(BINARY,),
    extra_notes=(
        "fast-agent reads this file as its home's config when FAST_AGENT_HOME points at ~/.fast-agent "
        "(or with --home ~/.fast-agent); it needs Python 3.12 or newer.",
    ),
)

AGENT = Agent(
    package="fast-agent-mcp",
    binary=BINARY,
    **pypi.record_fields("fast-agent"),
    python_min=(3, 12),
    client=CLIENT,
    launch=launch,
    config_vars=("FAST_AGENT_HOME",),
    model_api=openai_api,
    model_vars=(
        "`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API, fast-agent's `generic` "
        "provider; default `https://api.openai.com/v1`, model `gpt-5`)"
    ),
    stream_format="fast-agent-history",  # fast-agent go --results FILE, printed after the run
    reader=FastAgentHistory,
)
