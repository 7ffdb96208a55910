"""Codex CLI's run recipe: ``codex exec --json`` with the model provider given by ``-c``.

Measured with Codex 0.171: ``wire_api = "responses"`` is the only wire API ("chat" is gone);
a custom provider is ``model_providers.<id> = {base_url, wire_api, env_key}``, and ``-c``
overrides leave the user's config.toml (where ``agents install`` put the server) untouched.
The per-call limit is ``tool_timeout_sec`` in that entry; progress does not extend it.
Codex omits an MCP server still starting when the first turn begins ("omitting pending
optional MCP server"): under load the model was offered no test_patch at all. Marking the
server ``required`` makes ``codex exec`` wait for it (and fail loudly if it cannot start).
``--skip-git-repo-check``: a task tree need not be a git repository. The sandbox is off
(``danger-full-access``): the container is the sandbox and the agent must build and test.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ssebench.agents.codex import AGENT
from ssebench.agents.recipe import AgentRecipe, Launch, ModelApi, model_from, pick

SERVER_NAME = "ssebench"  # the name agents install registers the server under
PROVIDER_ID = "ssebench"  # the provider ssebench defines when OPENAI_BASE_URL is set
KEY_VAR = "OPENAI_API_KEY"
EXEC_KEY_VAR = "CODEX_API_KEY"  # codex exec's own key variable (OpenAI's API)


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


@dataclass(frozen=True)
class CodexRecipe(AgentRecipe):
    def model_api(self, env: Mapping[str, str]) -> ModelApi:
        # with OPENAI_BASE_URL the recipe's provider names OPENAI_API_KEY as its env_key;
        # without a key Codex retries its connection until the agent timeout
        if (env.get("OPENAI_BASE_URL") or "").strip():
            return ModelApi(keys=(KEY_VAR,), base_url="OPENAI_BASE_URL")
        return ModelApi(keys=(KEY_VAR, EXEC_KEY_VAR), base_url="OPENAI_BASE_URL")

    def launch(self, *, prompt: str, mcp_url: str, home: Path, env: Mapping[str, str]) -> Launch:
        argv = [
            self.binary,
            "exec",
            "--skip-git-repo-check",
            "--json",
            "--sandbox",
            "danger-full-access",
            "-c",
            f"mcp_servers.{SERVER_NAME}.required=true",
        ]
        base_url = (env.get("OPENAI_BASE_URL") or "").strip()
        if base_url:
            provider = (
                f"{{name = {_toml_string('ssebench model API')}, base_url = {_toml_string(base_url)}, "
                f'wire_api = "responses", env_key = {_toml_string(KEY_VAR)}}}'
            )
            argv += [
                "-c",
                f"model_providers.{PROVIDER_ID}={provider}",
                "-c",
                f"model_provider={_toml_string(PROVIDER_ID)}",
            ]
        model = model_from(env)
        if model:
            argv += ["-c", f"model={_toml_string(model)}"]
        argv.append(prompt)
        return Launch(
            argv=tuple(argv),
            env=pick(env, "OPENAI_BASE_URL", KEY_VAR, EXEC_KEY_VAR, "CODEX_HOME"),
            stream_format=self.stream_format,
            timeouts={"tool_timeout_sec": "from agents install (default 3600 s), not reset by progress"},
        )


RECIPE = CodexRecipe(AGENT)
