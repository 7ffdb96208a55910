"""Qwen Code's run recipe: ``qwen -p`` with stream-json output, the OpenAI-compatible API.

Measured with Qwen Code 0.24: ``--auth-type openai`` with ``OPENAI_API_KEY`` and
``OPENAI_BASE_URL`` talks chat completions to any endpoint, with no login; the model is
``OPENAI_MODEL`` (``--model`` from ``SSE_AGENT_MODEL``). ``--approval-mode yolo`` and the
entry's ``trust: true`` let it call the tool headless. Usage statistics are switched off
(``QWEN_USAGE_STATISTICS_ENABLED=false``: they go to a vendor endpoint) and so is the
update check. Two limits hold a call: the entry's ``timeout`` (total, default 10 minutes,
not reset by progress) and ``mcp.toolIdleTimeoutMs`` / ``QWEN_CODE_MCP_TOOL_IDLE_TIMEOUT_MS``
(default 5 minutes without a word; the server's progress notifications reset it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.agents.qwen import AGENT
from ssebench.agents.recipe import AgentRecipe, Launch, ModelApi, model_from, pick

#: the variables Qwen Code reads for the OpenAI-compatible API and the idle limit, passed on when set
QWEN_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "QWEN_CODE_MCP_TOOL_IDLE_TIMEOUT_MS")


@dataclass(frozen=True)
class QwenRecipe(AgentRecipe):
    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        # without a key Qwen Code exits at once asking for an auth method
        return ModelApi(keys=("OPENAI_API_KEY",), base_url="OPENAI_BASE_URL")

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = [self.binary, "-p", prompt, "--output-format", "stream-json", "--approval-mode", "yolo"]
        argv += ["--auth-type", "openai"]
        model = model_from(env)
        if model:
            argv += ["--model", model]
        added = {
            **pick(env, *QWEN_VARS),
            "QWEN_USAGE_STATISTICS_ENABLED": "false",
            "QWEN_CODE_SKIP_UPDATE_CHECK_ONCE": "true",
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",  # the sandbox is ssebench's, not Qwen Code's
        }
        return Launch(
            argv=tuple(argv),
            env=added,
            stream_format=self.stream_format,
            timeouts={
                "timeout": "from agents install (default 3600000 ms), not reset by progress",
                "mcp.toolIdleTimeoutMs": "Qwen Code's default 300000 ms, reset by progress",
            },
        )


RECIPE = QwenRecipe(AGENT)
