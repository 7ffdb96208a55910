"""opencode and its fork Kilo Code: the config file, the headless launch and the JSON events.

**Config.** ``NAME.json`` or ``NAME.jsonc`` in ``$XDG_CONFIG_HOME/NAME`` (user) or the current
folder (project); the entry is ``mcp.NAME = {type: remote, url, enabled, timeout (ms)}``.
Each CLI has a name it creates (opencode ``.json``, Kilo ``.jsonc``), and a file with the other
suffix alone is edited in place.

**Launch.** ``BINARY run --format json``; the model API is the provider of ``SSE_AGENT_MODEL``
(``provider/model``, default ``anthropic``), and with ``ANTHROPIC_BASE_URL`` the
``anthropic`` provider's ``options.baseURL`` is given as a JSON config in the CLI's variable
(``OPENCODE_CONFIG_CONTENT``, ``KILO_CONFIG_CONTENT``), merged over the user's config, so the
MCP entry stays where ``agents install`` put it. ``run`` waits for stdin unless it is empty.

**Stream.** Parts as they complete: ``step_start``, ``text``, ``reasoning``, ``tool_use``
(only once the call has ended: ``part.state.status`` ``completed`` or ``error``, keyed by
``part.callID``), ``step_finish`` with the step's tokens and cost, and ``error``. No init or
final event: the session id comes from the first line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.agent import AgentCommand, ModelApi, model_from, pick
from ssebench.agents.base import Client, Env, Scope, ServerSettings
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

# opencode provider -> the variables holding its key (opencode's own provider list);
# a provider not listed here is not checked by the preflight
OPENCODE_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "google": ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY"),
}


@dataclass(frozen=True)
class OpencodeFamilyClient(Client):
    """``other_suffix``: the CLI also reads the file under that suffix, edited when it alone exists."""

    other_suffix: str = ".jsonc"

    def config_path(self, scope: Scope, env: Env) -> Path | None:
        path = super().config_path(scope, env)
        if path is None:
            return None
        other = path.with_suffix(self.other_suffix)
        return other if other.exists() and not path.exists() else path

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        entry = {"type": "remote", "url": settings.url, "enabled": True}
        return self.with_timeout(entry, settings)


@dataclass(frozen=True)
class OpencodeLaunch:
    """How one CLI of the family runs headless: its command, the flags after ``run --format
    json``, the variables that keep it from its vendor's services, and its config variable."""

    binary: str
    offline_env: tuple[tuple[str, str], ...]
    config_var: str  # a JSON config merged over the user's
    run_flags: tuple[str, ...] = ()
    default_provider: str = "anthropic"

    def provider(self, env: Mapping[str, str]) -> str:
        model = model_from(env)
        return model.split("/", 1)[0] if model and "/" in model else self.default_provider

    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        # without a key opencode waits silently until the agent timeout
        provider = self.provider(env)
        base_url = "ANTHROPIC_BASE_URL" if provider == "anthropic" else None
        return ModelApi(keys=OPENCODE_KEYS.get(provider, ()), base_url=base_url)

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
        argv = [self.binary, "run", "--format", "json", *self.run_flags]
        model = model_from(env)
        if model:
            argv += ["--model", model if "/" in model else f"{self.default_provider}/{model}"]
        argv.append(prompt)
        added = {**pick(env, *OPENCODE_KEYS.get(self.provider(env), ())), **dict(self.offline_env)}
        base_url = (env.get("ANTHROPIC_BASE_URL") or "").strip().rstrip("/")
        if base_url:
            # opencode's anthropic provider wants the versioned root; ANTHROPIC_BASE_URL has none
            options = {"baseURL": base_url if base_url.endswith("/v1") else base_url + "/v1"}
            added[self.config_var] = json.dumps({"provider": {"anthropic": {"options": options}}})
        return AgentCommand(
            argv=tuple(argv),
            env=added,
            timeouts={"timeout": "from agents install (default 3600000 ms), reset by progress"},
        )


class OpencodeEvents(StreamConverter):
    """``run --format json`` → dialog events."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self._started = False

    def feed(self, event: dict) -> Iterator[Event]:
        if not self._started:
            self._started = True
            yield ev.init(self.agent, session=event.get("sessionID"))
        kind = event.get("type")
        raw_part = event.get("part")
        part: dict[str, Any] = raw_part if isinstance(raw_part, dict) else {}
        if kind == "text" and part.get("text"):
            yield ev.message(str(part["text"]))
        elif kind == "reasoning" and part.get("text"):
            yield ev.thinking(str(part["text"]))
        elif kind == "tool_use":
            yield from self._tool(part)
        elif kind == "step_finish":
            self._step_finish(part)
        elif kind == "error":
            self.failed = _error_text(event.get("error") or {})

    def _tool(self, part: dict[str, Any]) -> Iterator[Event]:
        """A call: running, or (opencode reports it once it ended) running then finished."""
        state = part.get("state") or {}
        tool_id = str(part.get("callID") or part.get("id"))
        name = str(part.get("tool"))
        status = state.get("status")
        yield ev.tool_running(tool_id, name, state.get("input"))
        if status not in ("pending", "running"):
            ok = status == "completed"
            output = state.get("output") if ok else state.get("error")
            yield ev.tool_finished(tool_id, name, ok=ok, output=ev.text_of(output))

    def _step_finish(self, part: dict[str, Any]) -> None:
        """A step's tokens (cache writes count as input, reasoning as output) and cost; ``stop``: the end."""
        tokens = part.get("tokens") or {}
        cache = tokens.get("cache") or {}
        self.add_tokens(
            input=(tokens.get("input") or 0) + (cache.get("write") or 0),
            output=(tokens.get("output") or 0) + (tokens.get("reasoning") or 0),
            cached=cache.get("read") or 0,
        )
        self.add_cost(part.get("cost"))
        if part.get("reason") == "stop":
            self.finished = True


def _error_text(error: object) -> str:
    """The message of an ``error`` event: its data's message, else its name, else itself."""
    data = error.get("data") if isinstance(error, dict) else None
    return str((data or {}).get("message") or (error.get("name") if isinstance(error, dict) else error) or "error")
