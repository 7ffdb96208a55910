"""Scripted model APIs on 127.0.0.1, so the real agent CLIs run offline, with no API key.

Each class is a real HTTP server (stdlib, one thread per request, ephemeral port) that
speaks one vendor API the way the real one does, streaming (SSE) where the CLI asks for
it, and plays a two-turn script decided from the conversation each request carries:

1. a turn that offers the test_patch tool and has no result of it yet → call the tool;
2. a turn that carries the tool's result → a final text (``final_text``).

Side requests (no tool offered: titles, the Gemini router's JSON, token counts, Claude
Code's ``/api/hello``) get small valid answers and are recorded as ``kind="side"``.

API (shared by all)::

    with AnthropicModel() as model:          # or OpenAIResponsesModel(), OpenAIChatModel(), GeminiModel()
        model.url                             # "http://127.0.0.1:PORT" (no path)
        ... run the CLI against it ...
        model.requests                        # every RecordedRequest (method, path, query,
                                              #   headers, JSON body, kind, answer)
        model.turns()                         # the requests that offered the tool
        model.tool_calls_sent()               # how often the script called the tool
        model.tool_results()                  # what the CLI handed back, one per call

Constructor keywords: ``tool_name`` (default: the name the usual CLI exposes),
``final_text``, ``call_tool=False`` (answer with text only), ``port``.

| class                  | CLI            | base URL the CLI needs        | default tool name           |
|------------------------|----------------|-------------------------------|-----------------------------|
| AnthropicModel         | Claude Code    | ANTHROPIC_BASE_URL = url      | mcp__ssebench__test_patch   |
| AnthropicModel         | opencode       | provider baseURL = url + /v1  | ssebench_test_patch (pass it)|
| AnthropicModel         | Kilo Code CLI  | provider baseURL = url + /v1  | ssebench_test_patch         |
| OpenAIResponsesModel   | Codex          | base_url = url + /v1          | test_patch in mcp__ssebench |
| GeminiModel            | Gemini CLI     | GOOGLE_GEMINI_BASE_URL = url  | mcp_ssebench_test_patch     |
| OpenAIChatModel        | OpenAI-compatible CLIs | base URL = url + /v1  | per CLI (pass it)           |

Codex 0.171 hides MCP tools behind its ``tool_search`` tool for models it knows, and its
default model gets no ``tools`` list at all; name a model it has no metadata for (e.g.
``SSE_AGENT_MODEL=scripted-model``) and it offers ``test_patch`` directly. Claude Code's
ToolSearch deferral is switched off by its recipe (``ENABLE_TOOL_SEARCH=false``).

``tool_results()`` items: ``AnthropicToolResult`` (``content`` as sent, ``text_blocks``),
``ResponsesToolResult`` (``output`` as sent, ``input_texts``), ``ChatToolResult`` (``content``
as sent, ``text_parts``), ``GeminiToolResult``
(``response`` as sent, ``text``). ``for_cli(name)`` builds the right model for a CLI.

Outside pytest (e.g. inside a container): ``python -m tests.e2e.models CLI [--port N]
[--record FILE]`` (from the checkout) serves until killed, prints its URL on the first line,
and appends each request to FILE as one JSON line.
"""

from __future__ import annotations

from .anthropic import AnthropicModel, AnthropicToolResult
from .base import RecordedRequest, Reply, ScriptedModel
from .gemini import GeminiModel, GeminiToolResult
from .openai_chat import ChatToolResult, OpenAIChatModel
from .openai_responses import OpenAIResponsesModel, ResponsesToolResult

#: the tool name each CLI shows the model for an MCP server named ``ssebench``
TOOL_NAMES = {
    "claude": "mcp__ssebench__test_patch",
    "codex": "test_patch",  # in namespace mcp__ssebench
    "gemini": "mcp_ssebench_test_patch",
    "opencode": "ssebench_test_patch",
    "qwen": "mcp__ssebench__test_patch",
    "continue": "test_patch",
    "kilo": "ssebench_test_patch",
    "cline": "ssebench__test_patch",
    "copilot": "ssebench-test_patch",
    "nanocoder": "test_patch",
    "pi": "mcp__ssebench__test_patch",
    "kimi-code": "mcp__ssebench__test_patch",
    # gptme names an MCP tool "ssebench.test_patch" and sends it as its stem plus
    # sha256("ssebench.test_patch:0")[:12] (gptme/tools/native_names.py): the same every run
    "gptme": "ssebench_test_patch_2605c8948036",
    "hermes": "mcp__ssebench__test_patch",
    "mastracode": "ssebench_test_patch",
    "droid": "ssebench___test_patch",
    "mistral-vibe": "ssebench_test_patch",
    "fast-agent": "ssebench__test_patch",
    "code-puppy": "ssebench_test_patch",
    "kimi-cli": "test_patch",
}

#: the CLIs that talk OpenAI chat completions (OpenAIChatModel)
CHAT_CLIS = (
    "qwen",
    "continue",
    "cline",
    "nanocoder",
    "pi",
    "kimi-code",
    "gptme",
    "hermes",
    "droid",
    "mistral-vibe",
    "fast-agent",
    "code-puppy",
    "kimi-cli",
)
#: the CLIs that offer MCP tools only through a loader tool, which the script calls first
LOADERS = {"droid": "ToolSearch"}


def for_cli(cli: str, **kwargs: object) -> ScriptedModel:
    """The scripted model a CLI talks to, with that CLI's tool name."""
    kwargs.setdefault("tool_name", TOOL_NAMES[cli])
    if cli in ("claude", "opencode", "kilo", "copilot"):
        return AnthropicModel(**kwargs)  # type: ignore[arg-type]
    if cli in ("codex", "mastracode"):
        return OpenAIResponsesModel(**kwargs)  # type: ignore[arg-type]
    if cli == "gemini":
        return GeminiModel(**kwargs)  # type: ignore[arg-type]
    if cli in CHAT_CLIS:
        model = OpenAIChatModel(**kwargs)  # type: ignore[arg-type]
        model.loader = LOADERS.get(cli)
        return model
    raise ValueError(f"no scripted model for CLI {cli!r}; known: {', '.join(TOOL_NAMES)}")


__all__ = [
    "AnthropicModel",
    "AnthropicToolResult",
    "ChatToolResult",
    "GeminiModel",
    "GeminiToolResult",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "RecordedRequest",
    "Reply",
    "ResponsesToolResult",
    "ScriptedModel",
    "TOOL_NAMES",
    "for_cli",
]
