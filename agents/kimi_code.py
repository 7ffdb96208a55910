"""Kimi Code: ``kimi -p PROMPT --output-format stream-json``, on its own Node.

**Install.** ``@moonshot-ai/kimi-code`` (Moonshot's TypeScript Kimi Code; the Python
``kimi-cli`` on PyPI needs Python 3.12). It needs Node 22.19 or newer, so it is pinned with
Nanocoder and Pi in configs/agent-clis/node22/ beside the Node they run on.

**Config.** ``~/.kimi-code/mcp.json`` (or ``$KIMI_CODE_HOME/mcp.json``; project
``.kimi-code/mcp.json``, loaded once the folder is trusted). A ``url`` entry with
``transport: "http"`` is Streamable HTTP. ``toolTimeoutMs`` (1 to 2147483647 ms) is the
whole call's limit: its HTTP client passes it to the MCP SDK's ``callTool`` as ``timeout``
with no ``resetTimeoutOnProgress`` and no progress callback (read in 2.1.0's dist/main.mjs,
``HttpMcpClient.callTool`` / ``buildRequestOptions``), so heartbeats do not extend it and the
written 3600000 ms must cover the longest call.

**Launch.** Measured with Kimi Code 2.1.0 on Node 22.23.5: ``-p`` runs one prompt headless
(``--auto`` and ``--yolo`` are refused with it; tools run without asking), ``--output-format
stream-json`` prints each message as a JSON line. The model comes from ``config.toml``, so
``prepare`` writes a provider ``ssebench`` of type ``openai`` (chat completions) at
``OPENAI_BASE_URL`` whose key is read from ``OPENAI_API_KEY`` (``api_key_env``: no key on
disk) and a model alias ``ssebench`` for the run's model, made ``default_model`` (``-p``
refuses to start without one, whatever ``--model`` says).
``KIMI_CODE_NO_AUTO_UPDATE=1`` stops the update check.

**Stream.** OpenAI-style messages: ``{"role": "assistant", "content", "tool_calls"}``,
``{"role": "tool", "tool_call_id", "content"}``, and ``role: "meta"`` lines (the version
first, ``session.resume_hint`` with the session id last). It carries no token counts. Kimi CLI's
stream has the same shape; one reader reads both (agents/shared/kimi_stream.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ssebench.agents.agent import MODEL_VAR, Agent, AgentCommand, model_from, openai_api, pick
from ssebench.agents.base import Unit
from ssebench.agents.generic.table import URL, TableClient
from ssebench.agents.runtime import NODE22_FIELDS
from ssebench.agents.shared.kimi_stream import KimiStreamJson

BINARY = "kimi"
ALIAS = "ssebench"  # the provider and the model alias prepare writes
DEFAULT_MODEL = "kimi-k2-turbo-preview"
#: what ``prepare`` reads: passed on, so that a container's entrypoint prepares with the run's values
PREPARE_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", MODEL_VAR)
DEFAULT_BASE_URL = "https://api.moonshot.ai/v1"
CONTEXT = 131072  # max_context_size of the alias (required by Kimi Code)


def prepare(*, home: Path, env: Mapping[str, str]) -> None:
    """The run's endpoint and model in Kimi Code's config.toml (other providers stay)."""
    import tomlkit

    from ssebench.agents import files
    from ssebench.agents.formats import EDITORS

    editor = EDITORS["toml"]
    provider = {
        "type": "openai",
        "base_url": (env.get("OPENAI_BASE_URL") or "").strip() or DEFAULT_BASE_URL,
        "api_key_env": "OPENAI_API_KEY",
    }
    model = {"provider": ALIAS, "model": model_from(env) or DEFAULT_MODEL, "max_context_size": CONTEXT}

    def write(text: str | None) -> str:
        text = editor.set(text, ("providers", ALIAS), provider)
        text = editor.set(text, ("models", ALIAS), model)
        document = tomlkit.parse(text)  # a top-level key, which the table editor does not set
        document["default_model"] = ALIAS  # without it `kimi -p` stops: "no default model configured"
        return tomlkit.dumps(document)

    files.edit(CLIENT.home_folder(home, env) / "config.toml", write, cache=files.cache_folder(env, home))


def launch(*, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> AgentCommand:
    return AgentCommand(
        argv=(BINARY, "-p", prompt, "--output-format", "stream-json", "--model", ALIAS),
        env={**pick(env, *PREPARE_VARS), "KIMI_CODE_NO_AUTO_UPDATE": "1"},
        timeouts={"toolTimeoutMs": "from agents install (default 3600000 ms), not reset by progress"},
    )


CLIENT = TableClient(
    name="kimi-code",
    title="Kimi Code",
    format="json",
    container=("mcpServers",),
    user_path=".kimi-code/mcp.json",
    project_path=".kimi-code/mcp.json",
    home_var=("KIMI_CODE_HOME", ".kimi-code"),
    shape=(("transport", "http"), ("url", URL)),
    timeout_key="toolTimeoutMs",
    timeout_unit=Unit.MILLISECONDS,
    # its schema allows 1 to 2147483647 ms (a signed 32-bit timer); above that it refuses the entry
    max_timeout=2_147_483,
    timeout_behaviour="Kimi Code takes up to 2147483647 ms for the whole call; progress does not extend it.",
    binaries=(BINARY,),
    extra_notes=(
        "Kimi Code loads a project's .kimi-code/mcp.json only once the folder is trusted.",
        "Kimi Code needs Node 22.19 or newer.",
    ),
)

AGENT = Agent(
    package="@moonshot-ai/kimi-code",
    binary=BINARY,
    **NODE22_FIELDS,
    client=CLIENT,
    launch=launch,
    prepare=prepare,
    config_vars=("KIMI_CODE_HOME",),
    model_api=openai_api,
    model_vars=(
        "`OPENAI_API_KEY`; `OPENAI_BASE_URL` (any OpenAI-compatible chat-completions API; default "
        "`https://api.moonshot.ai/v1` and model `kimi-k2-turbo-preview`)"
    ),
    stream_format="kimi-stream-json",  # kimi -p --output-format stream-json
    reader=KimiStreamJson,
)
