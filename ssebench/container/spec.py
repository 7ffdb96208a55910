"""A run's :class:`~ssebench.runrecord.RunSpec`: read from ``ssebench run --spec FILE``, or
built from the flags and the environment (the entrypoint's, when nobody gave one).

``ssebench jobs`` passes a spec so the record carries its job, run, attempt and limits;
a run copies its spec, with ``backend`` resolved, into its record.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from ssebench import settings
from ssebench.runrecord import Backend, RunSpec
from ssebench.settings import SettingsError

#: the flags of ``ssebench run`` a spec replaces (giving one with --spec is a usage error)
SPEC_FLAGS = {
    "task": "--task",
    "agent": "--agent",
    "difficulty": "--difficulty",
    "agent_timeout": "--agent-timeout",
    "mcp_timeout": "--mcp-timeout",
}


def read_spec(path: str) -> RunSpec:
    """The spec in the JSON file *path*; SettingsError naming the file and what is wrong."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SettingsError(f"--spec {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return RunSpec.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise SettingsError(f"--spec {path}: not a run spec: {at}: {first['msg']}") from None


def clashes(given: Mapping[str, object], command: list[str]) -> list[str]:
    """The flags given beside --spec that the spec already says."""
    flags = [flag for name, flag in SPEC_FLAGS.items() if given.get(name) is not None]
    return flags + (["-- CMD"] if command else [])


def job_ids(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """job_id and run_id from SSE_JOB_ID / SSE_JOB_RUN ("JOB/RUN"), as ``ssebench jobs`` sets them."""
    run = settings.raw("SSE_JOB_RUN", env) or None
    return settings.raw("SSE_JOB_ID", env) or None, run.rsplit("/", 1)[-1] if run else None


def seconds(name: str, raw: str | None) -> float | None:
    """A timeout flag or variable, checked as the entrypoint checks it; None when unset."""
    return float(settings.whole_seconds(name, raw)) if raw is not None else None


def from_flags(
    *,
    task_file: str,
    task_id: str,
    agent: str | None,
    command: list[str] | None,
    level: int,
    backend: Backend,
    env: Mapping[str, str],
    agent_timeout: str | None = None,
    mcp_timeout: str | None = None,
) -> RunSpec:
    """The spec of a run given by flags (a flag wins over its variable in *env*)."""
    job_id, run_id = job_ids(env)
    return RunSpec(
        task_file=task_file,
        task_id=task_id,
        agent=agent,
        command=None if agent else _absolute(command or []),
        model=settings.raw("SSE_AGENT_MODEL", env) or None,
        level=level,
        backend=backend,
        agent_timeout=seconds("SSE_AGENT_TIMEOUT", _flag_or_var(agent_timeout, "SSE_AGENT_TIMEOUT", env)),
        mcp_timeout=seconds("SSE_MCP_TIMEOUT", _flag_or_var(mcp_timeout, "SSE_MCP_TIMEOUT", env)),
        job_id=job_id,
        run_id=run_id,
    )


def _absolute(command: list[str]) -> tuple[str, ...]:
    """A relative program path (``./agent.sh``) made absolute, as the entrypoint runs it: a spec
    read back elsewhere names the same program."""
    import os

    if command and "/" in command[0] and not os.path.isabs(command[0]):
        return (os.path.abspath(command[0]), *command[1:])
    return tuple(command)


def _flag_or_var(flag: str | None, var: str, env: Mapping[str, str]) -> str | None:
    return flag if flag is not None else settings.raw(var, env)


def whole(value: float | None) -> str | None:
    """A spec's timeout as the entrypoint's setting (whole seconds, at least 1)."""
    return None if value is None else str(max(1, round(value)))
