"""Codex CLI: ``codex exec --json`` with the model provider given by ``-c``.

**Config.** ``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``). The
``[mcp_servers.NAME]`` table has no ``type`` key. ``default_tools_approval_mode = "approve"``
is needed: without it ``codex exec`` refuses the call ("requires approval, but approval policy
is never"). Codex's per-call limit is not extended by progress, so ``tool_timeout_sec`` must
cover the whole build and test cycle.

**Launch.** Measured with Codex 0.171: ``wire_api = "responses"`` is the only wire API ("chat"
is gone); a custom provider is ``model_providers.<id> = {base_url, wire_api, env_key}``, and
``-c`` overrides leave the user's config.toml (where ``agents install`` put the server)
untouched. Codex omits an MCP server still starting when the first turn begins ("omitting
pending optional MCP server"): under load the model was offered no test_patch at all. Marking
the server ``required`` makes ``codex exec`` wait for it (and fail loudly if it cannot start).
``--skip-git-repo-check``: a task tree need not be a git repository. The sandbox is off
(``danger-full-access``): the container is the sandbox and the agent must build and test.

**Stream.** Thread events: ``thread.started`` (the session), ``item.started`` /
``item.updated`` / ``item.completed`` carrying one item each (``agent_message``,
``reasoning``, ``mcp_tool_call``, ``command_execution``, ``file_change``, ``web_search``,
``todo_list``, ``error``), ``turn.completed`` with token usage (no cost), ``turn.failed`` and
``error``. It reports no duration: the pipeline measures it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.agents.agent import Agent, AgentCommand, ModelApi, model_from, pick
from ssebench.agents.base import Client, Env, Scope, ServerSettings, Unit
from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

BINARY = "codex"
STARTUP_TIMEOUT_SEC = 300
SERVER_NAME = "ssebench"  # the name agents install registers the server under
PROVIDER_ID = "ssebench"  # the provider ssebench defines when OPENAI_BASE_URL is set
KEY_VAR = "OPENAI_API_KEY"
EXEC_KEY_VAR = "CODEX_API_KEY"  # codex exec's own key variable (OpenAI's API)


@dataclass(frozen=True)
class CodexCli(Client):
    def config_path(self, scope: Scope, env: Env) -> Path | None:
        if scope is Scope.USER and env.vars.get("CODEX_HOME"):
            return Path(env.vars["CODEX_HOME"]) / "config.toml"
        return super().config_path(scope, env)

    def entry(self, settings: ServerSettings) -> dict[str, Any]:
        entry: dict[str, Any] = {"url": settings.url, "startup_timeout_sec": STARTUP_TIMEOUT_SEC}
        self.with_timeout(entry, settings)
        entry["default_tools_approval_mode"] = "approve"
        return entry


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


def model_api(env: Mapping[str, str]) -> ModelApi:
    # with OPENAI_BASE_URL the recipe's provider names OPENAI_API_KEY as its env_key;
    # without a key Codex retries its connection until the agent timeout
    if (env.get("OPENAI_BASE_URL") or "").strip():
        return ModelApi(keys=(KEY_VAR,), base_url="OPENAI_BASE_URL")
    return ModelApi(keys=(KEY_VAR, EXEC_KEY_VAR), base_url="OPENAI_BASE_URL")


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    argv = [BINARY, "exec", "--skip-git-repo-check", "--json", "--sandbox", "danger-full-access"]
    argv += ["-c", f"mcp_servers.{SERVER_NAME}.required=true"]
    base_url = (env.get("OPENAI_BASE_URL") or "").strip()
    if base_url:
        provider = (
            f"{{name = {_toml_string('ssebench model API')}, base_url = {_toml_string(base_url)}, "
            f'wire_api = "responses", env_key = {_toml_string(KEY_VAR)}}}'
        )
        argv += ["-c", f"model_providers.{PROVIDER_ID}={provider}", "-c", f"model_provider={_toml_string(PROVIDER_ID)}"]
    model = model_from(env)
    if model:
        argv += ["-c", f"model={_toml_string(model)}"]
    argv.append(prompt)
    return AgentCommand(
        argv=tuple(argv),
        env=pick(env, "OPENAI_BASE_URL", KEY_VAR, EXEC_KEY_VAR, "CODEX_HOME"),
        timeouts={"tool_timeout_sec": "from agents install (default 3600 s), not reset by progress"},
    )


class CodexEvents(StreamConverter):
    """``codex exec --json`` → dialog events."""

    def feed(self, event: dict) -> Iterator[Event]:
        kind = event.get("type")
        if kind == "thread.started":
            yield ev.init(self.agent, session=event.get("thread_id"))
        elif kind in ("item.started", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                yield from self._item(item, done=kind == "item.completed")
        elif kind == "turn.completed":
            usage = event.get("usage") or {}
            cached = usage.get("cached_input_tokens") or 0
            self.add_tokens(
                input=(usage.get("input_tokens") or 0) - cached, output=usage.get("output_tokens") or 0, cached=cached
            )
            self.finished = True
        elif kind == "turn.failed":
            self.failed = _message(event.get("error")) or "turn failed"
        elif kind == "error":
            self.failed = _message(event) or "error"

    def _item(self, item: dict, *, done: bool) -> Iterator[Event]:
        itype = item.get("type")
        item_id = str(item.get("id"))
        if itype == "agent_message" and done:
            yield ev.message(str(item.get("text", "")))
        elif itype == "reasoning" and done:
            yield ev.thinking(str(item.get("text", "")))
        elif itype == "mcp_tool_call":
            yield _mcp_call(item, item_id, done)
        elif itype == "command_execution":
            yield _command(item, item_id, done)
        elif itype == "file_change" and done:
            changes = item.get("changes") or []
            summary = "\n".join(f"{c.get('kind')} {c.get('path')}" for c in changes if isinstance(c, dict))
            yield ev.tool_finished(item_id, "file_change", ok=item.get("status") != "failed", output=summary)
        elif itype == "web_search" and done:
            yield ev.tool_finished(item_id, "web_search", ok=True, output=str(item.get("query", "")))
        elif itype == "error":
            pass  # Codex's non-fatal warnings: they stay in the raw stream only
        elif itype not in ("agent_message", "reasoning", "todo_list", "file_change", "web_search", "error") and done:
            yield ev.tool_finished(item_id, str(itype), ok=True, output=json.dumps(item, ensure_ascii=False))


def _mcp_call(item: dict, item_id: str, done: bool) -> Event:
    """An MCP tool call starting, or ended (its error's message, else its content)."""
    name = f"{item.get('server')}.{item.get('tool')}" if item.get("server") else str(item.get("tool"))
    if not done:
        return ev.tool_running(item_id, name, item.get("arguments"))
    ok = item.get("status") == "completed" and not item.get("error")
    content = ev.text_of((item.get("result") or {}).get("content"))
    output = content if ok else _message(item.get("error")) or content
    return ev.tool_finished(item_id, name, ok=ok, output=output)


def _command(item: dict, item_id: str, done: bool) -> Event:
    """A shell command starting, or ended (exit 0 or none: ok)."""
    if not done:
        return ev.tool_running(item_id, "shell", {"command": item.get("command")})
    ok = item.get("status") == "completed" and item.get("exit_code") in (0, None)
    return ev.tool_finished(item_id, "shell", ok=ok, output=str(item.get("aggregated_output") or ""))


def _message(error: object) -> str | None:
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return None


CLIENT = CodexCli(
    name="codex",
    title="Codex CLI",
    format="toml",
    container=("mcp_servers",),
    user_path=".codex/config.toml",
    timeout_key="tool_timeout_sec",
    timeout_unit=Unit.SECONDS,
    timeout_behaviour="Codex does not extend it on progress, so it must cover the whole call.",
    path_note="(or $CODEX_HOME/config.toml)",
    binaries=(BINARY,),
    extra_notes=(
        'The entry also sets default_tools_approval_mode = "approve": Codex runs this server\'s '
        "tools (test_patch) without asking; without it codex exec refuses the call.",
    ),
)

AGENT = Agent(
    package="@openai/codex",
    binary=BINARY,
    client=CLIENT,
    launch=launch,
    config_vars=("CODEX_HOME",),
    model_api=model_api,
    model_vars="`OPENAI_API_KEY` or `CODEX_API_KEY` (`OPENAI_API_KEY` with `OPENAI_BASE_URL`)",
    stream_format="codex-json",  # codex exec --json
    reader=CodexEvents,
)
