"""Each try of a run through the gateway: its own key in, its record out.

:meth:`RunGate.admit` gives the try a new key (a retried run starts from a zero budget), writes
the key's sha256 with the run's budget for the proxy's hooks, and points the agent at the
gateway through the variables it reads (its record's ``model_api``: the base URL and the first
key variable; the vendor's own key variable blanked, so the agent cannot go round the gateway).
:meth:`RunGate.settle` retires the key, keeps the run's ledger in its folder
(``gateway.jsonl``) and writes the record with what the gateway counted (ledger.apply).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import replace

from ssebench import runrecord
from ssebench.container.gatewayroute import COMMAND_VARS, PORT_VAR  # a Docker run relays the port
from ssebench.jobs.backend import JobRun
from ssebench.jobs.gateway import ledger
from ssebench.jobs.gateway.proxy import Proxy
from ssebench.jobs.jobfile import AgentSpec
from ssebench.runrecord import RunResult

LEDGER_FILE = "gateway.jsonl"  # in the run's folder: one line per model request of its last try


def base_url(variable: str, url: str) -> str:
    """The gateway's URL as VARIABLE's readers expect it: OpenAI's clients take the ``/v1``."""
    return f"{url}/v1" if "OPENAI" in variable else url


def agent_vars(agent: str | None, env: Mapping[str, str], url: str, key: str) -> dict[str, str]:
    """The variables that point a run's agent (a bundled one's name; None: a custom command)
    at the gateway with its key, looked up in ENV (the run's environment); ValueError for an
    agent that has no base URL variable."""
    if agent is None:
        return {name: (base_url(name, url) if name.endswith("_URL") else key) for name in COMMAND_VARS}
    from ssebench.agents import registry

    api = registry.agent(agent).model_api(env)
    if api.base_url is None or not api.keys:
        raise ValueError(f"{agent} has no base URL variable to point it at the model gateway")
    blanked = {name: "" for name in api.keys[1:]}  # one credential: the run's key
    return {**blanked, api.base_url: base_url(api.base_url, url), api.keys[0]: key}


class RunGate:
    """The scheduler's view of the gateway: ``admit`` before a try, ``settle`` after it."""

    def __init__(self, proxy: Proxy, agents: Mapping[str, AgentSpec]) -> None:
        self.proxy, self.agents = proxy, agents

    def admit(self, run: JobRun) -> JobRun:
        key = f"sk-ssebench-{secrets.token_urlsafe(24)}"
        agent = self.agents[run.agent_name]
        budget = {"run": run.run_id, "max_cost": agent.max_cost, "max_tokens": agent.max_tokens}
        (self.proxy.ledger / f"{run.run_id}.jsonl").unlink(missing_ok=True)  # a new try counts from zero
        path = self.proxy.keys / f"{hashlib.sha256(key.encode()).hexdigest()}.json"
        path.write_text(json.dumps(budget), encoding="utf-8")
        gateway = agent_vars(run.spec.agent, {**os.environ, **run.env}, self.proxy.url, key)
        env = {**run.env, self.proxy.spec.key_env: "", **gateway, PORT_VAR: str(self.proxy.port)}
        return replace(run, env=env)

    def settle(self, run: JobRun, result: RunResult) -> RunResult:
        """The try's record with the gateway's facts (written in its folder), its key retired."""
        for path in self.proxy.keys.glob("*.json"):
            with contextlib.suppress(OSError, ValueError):
                if json.loads(path.read_text(encoding="utf-8")).get("run") == run.run_id:
                    path.unlink()
        agent = self.agents[run.agent_name]
        source = self.proxy.ledger / f"{run.run_id}.jsonl"
        counted = ledger.facts(ledger.read_lines(source), agent.max_cost, agent.max_tokens)
        if source.exists() and run.folder.is_dir():
            shutil.copyfile(source, run.folder / LEDGER_FILE)
        amended = ledger.apply(result, counted)
        if run.folder.is_dir():
            runrecord.write(run.folder, amended)
        return amended
