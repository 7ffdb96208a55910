"""The job as it started, kept in job.json (``spec``): what ``jobs resume`` runs and compares with.

Why: a job file edited between ``jobs run`` and ``jobs resume`` (a level added, a model
changed) would otherwise mix results of two different jobs in one folder without a word.
The parsed job is stored when the job starts; resume compares the job file as it is now
with it, lists what changed and refuses unless ``--use-stored`` (then the stored job runs).
A comment or a reformatting changes nothing. Secrets never go into the folder (it is
shared, exported, attached to papers): an agent's ``env`` values whose names hold KEY,
TOKEN, SECRET or PASSWORD are stored as their sha256 only, and taken back from the job
file when it still holds the same value.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ssebench.jobs.gateway.spec import GatewaySpec
from ssebench.jobs.jobfile import AgentSpec, Job, JobFileError

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)


def _digest(value: str) -> dict[str, str]:
    return {"sha256": hashlib.sha256(value.encode()).hexdigest()}


def _agent(agent: AgentSpec) -> dict[str, Any]:
    env = {k: (_digest(v) if SECRET_NAME.search(k) else v) for k, v in sorted(agent.env.items())}
    command = list(agent.command) if agent.command is not None else None
    budget = {"max_cost": agent.max_cost, "max_tokens": agent.max_tokens}
    return {"name": agent.name, "command": command, "model": agent.model, "env": env, "timeout": agent.timeout} | budget


def to_spec(job: Job) -> dict[str, Any]:
    """The job as job.json stores it (JSON; secrets as digests)."""
    return {
        "tasks": [str(t) for t in job.tasks],
        "agents": [_agent(a) for a in job.agents],
        "levels": list(job.levels),
        "attempts": job.attempts,
        "concurrency": job.concurrency,
        "backend": job.backend,
        "retry": {"on": list(job.retry_on), "max_tries": job.max_tries},
        "timeouts": dict(sorted(job.timeouts.items())),
        "base": str(job.base),
        "gateway": job.gateway.to_json() if job.gateway is not None else None,
    }


def from_spec(spec: Mapping[str, Any], current: Job | None) -> Job:
    """The stored job, its secrets taken from CURRENT (the job file now) where they are the
    same; JobFileError naming a secret that is no longer there."""
    mine = {a.name: a for a in current.agents} if current is not None else {}
    agents = []
    for stored in spec["agents"]:
        env = {}
        for key, value in stored["env"].items():
            if isinstance(value, dict):
                now = mine[stored["name"]].env.get(key) if stored["name"] in mine else None
                if now is None or _digest(now) != value:
                    raise JobFileError(
                        f"agents {stored['name']}: env {key}: a secret, not kept in the job's folder, and the job "
                        "file no longer holds the value the job started with; put it back to resume as stored"
                    )
                value = now
            env[key] = value
        command = tuple(stored["command"]) if stored["command"] is not None else None
        budget = (stored.get("max_cost"), stored.get("max_tokens"))  # absent in folders of older versions
        agents.append(AgentSpec(stored["name"], command, stored["model"], env, stored["timeout"], *budget))
    return Job(
        tasks=tuple(Path(t) for t in spec["tasks"]),
        agents=tuple(agents),
        levels=tuple(spec["levels"]),
        attempts=spec["attempts"],
        concurrency=spec["concurrency"],
        backend=spec["backend"],
        retry_on=tuple(spec["retry"]["on"]),
        max_tries=spec["retry"]["max_tries"],
        timeouts=dict(spec["timeouts"]),
        base=Path(spec["base"]),
        file=current.file if current is not None else None,
        digest=current.digest if current is not None else "",
        gateway=_gateway(spec.get("gateway")),
    )


def _gateway(stored: Mapping[str, Any] | None) -> GatewaySpec | None:
    if stored is None:
        return None
    return GatewaySpec(stored["api"], stored["url"], stored["key_env"], stored["prices"])


def _shown(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"sha256"}:
        return "(a secret)"
    return "none" if value is None else repr(value) if isinstance(value, str) else str(value)


def _same(key: str, a: Any, b: Any) -> bool:
    """Levels in another order are the same levels (only the runs' order differs)."""
    if key == "levels" and isinstance(a, list) and isinstance(b, list):
        return sorted(a) == sorted(b)
    return bool(a == b)


def differences(stored: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What changed from STORED to NOW, one line each (secrets never shown). Tasks and agents
    in another order are no change: the runs and their ids are the same."""
    lines = []
    for key in stored.keys() | now.keys():
        if key in ("tasks", "agents") or _same(key, stored.get(key), now.get(key)):
            continue
        lines.append(f"{key}: {_shown(stored.get(key))} → {_shown(now.get(key))}")
    lines.sort()
    old, new = stored.get("tasks", []), now.get("tasks", [])
    lines += [f"tasks: - {t}" for t in old if t not in new] + [f"tasks: + {t}" for t in new if t not in old]
    return lines + _agent_differences(stored.get("agents", []), now.get("agents", []))


def _agent_differences(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    before, after = {a["name"]: a for a in old}, {a["name"]: a for a in new}
    lines = [f"agents: - {n}" for n in before if n not in after] + [f"agents: + {n}" for n in after if n not in before]
    for name in (n for n in before if n in after):
        a, b = before[name], after[name]
        for field in ("command", "model", "timeout", "max_cost", "max_tokens"):
            if a.get(field) != b.get(field):
                lines.append(f"agents {name}: {field}: {_shown(a.get(field))} → {_shown(b.get(field))}")
        for var in sorted(a["env"].keys() | b["env"].keys()):
            if a["env"].get(var) != b["env"].get(var):
                lines.append(f"agents {name}: env {var}: {_shown(a['env'].get(var))} → {_shown(b['env'].get(var))}")
    return lines
