"""Code Puppy: ``code-puppy -p PROMPT``, from PyPI, its saved session as the dialog.

**Install.** ``code-puppy`` from PyPI, in a venv of its own from the hashed lock in
configs/agent-clis/pypi/code-puppy/ (agents/pypi.py). Python 3.11 is enough.

**Config.** Code Puppy keeps everything in ``~/.code_puppy``, or, when the XDG variables are
set, its config files in ``$XDG_CONFIG_HOME/code_puppy``, its data (``extra_models.json``) in
``$XDG_DATA_HOME/code_puppy`` and its sessions in ``$XDG_CACHE_HOME/code_puppy``. MCP servers:
``mcp_servers.json``, ``mcp_servers.NAME`` with ``type: "http"`` and ``url`` (fastmcp's
``StreamableHttpTransport``). ``read_timeout`` (s) is pydantic-ai's ``MCPToolset`` read timeout
(default 300), the limit on each call's wait for the server's answer; progress does not extend
it (``code_puppy/mcp_/managed_server.py`` in 0.0.946).

**Launch.** ``-p`` runs one prompt headless; ``--yolo true`` runs tools without asking. Its first
run asks for ``puppy_name`` and ``owner_name`` on stdin unless ``puppy.cfg`` has them, so
``prepare`` writes them there, with ``model = ssebench``. MCP servers are offered to an agent
only when bound to it (``mcp_agent_bindings.json``, ``code_puppy/mcp_/agent_bindings.py``:
strict opt-in), so ``prepare`` binds ``ssebench`` to the default agent ``code-puppy`` with
``auto_start``. The model ``ssebench`` is a ``custom_openai`` model of
``extra_models.json`` whose ``custom_endpoint`` is the run's ``OPENAI_BASE_URL`` with ``api_key:
"$OPENAI_API_KEY"`` (read from the environment when a request is sent; no key on disk).

**Stream.** Its console output is rendered text, so the launch runs it with that on stderr and
then prints the session Code Puppy saved in ``autosaves/`` (a JSON envelope of pydantic-ai
messages), walked like fast-agent's history (agents/shared/history.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents import pypi
from ssebench.agents.agent import MODEL_VAR, OPENAI_CHAT_VARS, Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.base import DEFAULT_NAME, Client, Env, Scope, ServerSettings, Unit
from ssebench.agents.shared import history
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "code-puppy"
MODEL_KEY = "ssebench"
AGENT_NAME = "code-puppy"  # Code Puppy's default agent, the one ``-p`` runs
DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: what ``prepare`` reads: passed on, so that a container's entrypoint prepares with the run's values
PREPARE_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", MODEL_VAR)
#: run Code Puppy (its console to stderr), then print the session it saved
SCRIPT = (
    'code-puppy -p "$1" --yolo true </dev/null >&2; status=$?; '
    'for f in "$2"/autosaves/*.json; do case "$f" in *_meta.json) ;; '
    '*) [ ! -f "$f" ] || { cat "$f"; echo; };; esac; done; exit $status'
)


def puppy_dir(home: Path, env: Mapping[str, str], xdg: str) -> Path:
    """Code Puppy's folder for one kind of file: ``$XDG_..._HOME/code_puppy`` when that variable
    is set (config, data, cache: ``code_puppy/config.py``), else ``~/.code_puppy`` for all."""
    base = (env.get(xdg) or "").strip()
    return Path(base) / "code_puppy" if base else home / ".code_puppy"


def _settings(text: str | None, env: Mapping[str, str]) -> str:
    """puppy.cfg with the names its first run asks for and the run's model (other keys stay)."""
    import configparser
    import io

    config = configparser.ConfigParser()
    config.read_string(text or "")
    if not config.has_section("puppy"):
        config.add_section("puppy")
    for key, value in {"puppy_name": "ssebench", "owner_name": "ssebench", "model": MODEL_KEY}.items():
        config.set("puppy", key, value)
    out = io.StringIO()
    config.write(out)
    return out.getvalue()


def prepare(*, home: Path, env: Mapping[str, str]) -> None:
    from ssebench.agents import files
    from ssebench.agents.formats import EDITORS

    model = {
        "type": "custom_openai",
        "name": model_from(env) or DEFAULT_MODEL,
        "custom_endpoint": {
            "url": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
            "api_key": "$OPENAI_API_KEY",
        },
    }
    cache = files.cache_folder(env, home)
    config = puppy_dir(home, env, "XDG_CONFIG_HOME")
    files.edit(config / "puppy.cfg", lambda text: _settings(text, env), cache=cache)
    binding = ("bindings", AGENT_NAME, DEFAULT_NAME)  # strict opt-in: an unbound server is never offered
    files.edit(
        config / "mcp_agent_bindings.json",
        lambda text: EDITORS["json"].set(text, binding, {"auto_start": True}),
        cache=cache,
    )
    files.edit(
        puppy_dir(home, env, "XDG_DATA_HOME") / "extra_models.json",
        lambda text: EDITORS["json"].set(text, (MODEL_KEY,), model),
        cache=cache,
    )


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    return AgentCommand(
        argv=("sh", "-c", SCRIPT, "code-puppy", prompt, str(puppy_dir(home, env, "XDG_CACHE_HOME"))),
        env=pick(env, *PREPARE_VARS),
        timeouts={"read_timeout": "from agents install (default 3600 s), each call's wait, not reset by progress"},
    )


class PuppySession(StreamConverter):
    """Code Puppy's saved session (pydantic-ai messages, one pretty-printed document) → dialog events."""

    documents = True

    def feed(self, event: dict) -> Iterator[Event]:
        return history.events(self, event, self._message)

    def _message(self, message: dict[str, Any], names: dict[str, str]) -> Iterator[Event]:
        for part in message.get("parts") or []:
            if isinstance(part, dict):
                yield from self._part(part, names)
        usage = message.get("usage")
        if message.get("kind") == "response" and isinstance(usage, dict):
            tokens = {"input": usage.get("input_tokens") or 0, "output": usage.get("output_tokens") or 0}
            self.add_tokens(**tokens, cached=usage.get("cache_read_tokens") or 0)
            self.add_cost(usage.get("cost"))

    @staticmethod
    def _part(part: dict[str, Any], names: dict[str, str]) -> Iterator[Event]:
        kind = part.get("part_kind")
        if kind == "text" and part.get("content"):
            yield ev.message(str(part["content"]))
        elif kind == "thinking" and part.get("content"):
            yield ev.thinking(str(part["content"]))
        elif kind == "tool-call":
            tool_id, name = str(part.get("tool_call_id")), str(part.get("tool_name") or "tool")
            names[tool_id] = name
            yield ev.tool_running(tool_id, name, ev.arguments_of(part.get("args")))
        elif kind in ("tool-return", "retry-prompt") and part.get("tool_call_id"):
            tool_id = str(part["tool_call_id"])
            name = str(part.get("tool_name") or names.get(tool_id, "tool"))
            ok = kind == "tool-return" and part.get("outcome", "success") == "success"
            yield ev.tool_finished(tool_id, name, ok=ok, output=ev.text_of(part.get("content")))


@dataclass(frozen=True)
class PuppyClient(Client):
    """``mcp_servers.json`` is under ``$XDG_CONFIG_HOME/code_puppy`` when that is set, else in
    ``~/.code_puppy`` (not ``~/.config``)."""

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        return self.with_timeout({"type": "http", "url": settings.url}, settings)

    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER:
            return puppy_dir(env.home, env.vars, "XDG_CONFIG_HOME") / "mcp_servers.json"
        return super().config_path(scope, env)


CLIENT = PuppyClient(
    name="code-puppy",
    title="Code Puppy",
    format="json",
    container=("mcp_servers",),
    user_path=".code_puppy/mcp_servers.json",
    path_note="(or $XDG_CONFIG_HOME/code_puppy/mcp_servers.json)",
    timeout_key="read_timeout",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Code Puppy's default is 300 s for each call's answer; progress does not extend it.",
    binaries=(BINARY,),
)

AGENT = Agent(
    package="code-puppy",
    binary=BINARY,
    **pypi.record_fields("code-puppy"),
    client=CLIENT,
    launch=launch,
    prepare=prepare,
    model_api=openai_api,
    model_vars=OPENAI_CHAT_VARS,
    stream_format="code-puppy-session",  # its autosaved session, printed after the run
    reader=PuppySession,
)
