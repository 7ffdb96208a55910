"""The gateway's part of a job's preflight: every problem at once, before anything starts."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ssebench import settings
from ssebench.jobs.gateway.spec import GatewaySpec
from ssebench.preflight import Problem


def problems(spec: GatewaySpec, environ: Mapping[str, str] | None = None) -> list[Problem]:
    """What stops the job's gateway from starting: the litellm command at its pin, the
    vendor's key in the environment. Every backend reaches it (docs/jobs.md, "Which backends")."""
    from ssebench.agents.pypi import installed_version
    from ssebench.jobs.gateway.proxy import install_hint, litellm_command, pinned

    env = dict(os.environ if environ is None else environ)
    found: list[Problem] = []
    try:
        command = litellm_command(env)
    except settings.SettingsError as error:
        return [Problem("gateway", str(error))]
    if command is None or not command.exists():
        where = str(command) if command is not None else "litellm: not found on PATH"
        found.append(Problem("gateway", f"{where} (set SSE_GATEWAY_LITELLM); install it: {install_hint()}"))
    else:
        version = installed_version("litellm", command)
        if version != pinned():
            have = f"LiteLLM {version}" if version else "not a venv of LiteLLM"
            found.append(Problem("gateway", f"{command} is {have}, the gateway needs {pinned()}: {install_hint()}"))
    if not env.get(spec.key_env):
        why = "the vendor's key the gateway forwards with ([gateway] key_env)"
        found.append(Problem("gateway", f"{spec.key_env} is not set: {why}"))
    return found
