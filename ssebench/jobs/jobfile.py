"""JOB.toml: read and check a job file, or build the same job from ``--task/--agent/--difficulty``.

Every fault is one :class:`JobFileError` line naming the file, the key and the problem
(``ssebench jobs run`` prints it and exits 2 before anything starts). docs/jobs.md has the
format. Paths in the file (tasks, a custom command's program) are taken from the job
file's folder; without a file, from the current folder.
"""

from __future__ import annotations

import glob
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LEVELS = range(0, 5)
DEFAULT_LEVELS = (2,)
DEFAULT_MAX_TRIES = 3
#: what `[retry] on` may name: "infra" (every infrastructure failure) or one status
RETRYABLE = ("infra", "agent_timeout", "agent_failed", "daemon_failed", "server_failed", "grading_error")
TIMEOUT_KEYS = ("mcp", "agent", "run")
_NAME_RE = re.compile(r"[A-Za-z0-9_-]+")
_TOP_KEYS = {"tasks", "levels", "attempts", "concurrency", "backend", "agents", "retry", "timeouts"}
_AGENT_KEYS = {"name", "command", "model", "env", "timeout"}


class UnknownAgent(ValueError):
    """An agent name that is neither bundled nor given a command: the preflight lists it
    beside every other problem rather than stopping at it."""


class JobFileError(ValueError):
    """One line: the file, the key, the problem."""


@dataclass(frozen=True)
class AgentSpec:
    """One ``[[agents]]`` table."""

    name: str
    command: tuple[str, ...] | None = None  # None: a bundled agent run with its recipe
    model: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None


@dataclass(frozen=True)
class Job:
    """A checked job: absolute task files, agents, levels, attempts and policies."""

    tasks: tuple[Path, ...]
    agents: tuple[AgentSpec, ...]
    levels: tuple[int, ...] = DEFAULT_LEVELS
    attempts: int = 1
    concurrency: int | None = None
    backend: str | None = None
    retry_on: tuple[str, ...] = ("infra",)
    max_tries: int = DEFAULT_MAX_TRIES
    timeouts: dict[str, float] = field(default_factory=dict)
    base: Path = Path(".")  # where relative paths of a custom command are taken from
    file: Path | None = None
    digest: str = ""  # sha256 of the job file's bytes (of the flags without a file)
    #: task files that exist but do not load: (key, the loader's one line); the preflight
    #: lists them with every other problem (they are not in ``tasks``)
    broken: tuple[tuple[str, str], ...] = ()


class _JobReader:
    """Typed access to the parsed TOML raising one precise error per fault."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, key: str, problem: str) -> JobFileError:
        return JobFileError(f"{self.where}: {key}: {problem}")

    def integer(self, data: dict[str, Any], key: str, default: int, low: int = 1) -> int:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be a whole number, got {_kind(value)}")
        if value < low:
            raise self.fail(key, f"must be at least {low}, got {value}")
        return value

    def seconds(self, value: object, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
            raise self.fail(key, f"must be a positive number of seconds, got {value!r}")
        return float(value)

    def strings(self, value: object, key: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, f"must be a list of strings, got {_kind(value)}")
        return list(value)


def _kind(value: object) -> str:
    return {
        bool: "a boolean",
        str: "a string",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def load(path: Path) -> Job:
    """Read and check JOB.toml."""
    shown = str(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise JobFileError(f"{shown}: cannot read the job file: {error.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise JobFileError(f"{shown}: not valid TOML: {error}") from None
    job = parse(data, _JobReader(shown), base=path.resolve().parent)
    return _with(job, file=path.resolve(), digest=hashlib.sha256(raw).hexdigest())


def _with(job: Job, **changes: Any) -> Job:
    from dataclasses import replace

    return replace(job, **changes)


def parse(data: dict[str, Any], r: _JobReader, *, base: Path) -> Job:
    """The checked job of a parsed job file (or of the flags, shaped the same way)."""
    for key in data:
        if key not in _TOP_KEYS:
            raise r.fail(key, f"unknown key (known keys: {', '.join(sorted(_TOP_KEYS))})")
    if "tasks" not in data:
        raise r.fail("tasks", "missing (required)")
    tasks, broken = _tasks(r, r.strings(data["tasks"], "tasks"), base)
    agents, unknown = _agents(r, data.get("agents"))
    levels = _levels(r, data.get("levels", list(DEFAULT_LEVELS)))
    backend = data.get("backend")
    from ssebench.jobs.backends import BACKENDS

    if backend is not None and backend not in BACKENDS:
        raise r.fail("backend", f"must be one of {', '.join(BACKENDS)}, got {backend!r}")
    retry_on, max_tries = _retry(r, data.get("retry", {}))
    return Job(
        tasks=tasks,
        agents=agents,
        levels=levels,
        attempts=r.integer(data, "attempts", 1),
        concurrency=r.integer(data, "concurrency", 0) if "concurrency" in data else None,
        backend=backend,
        retry_on=retry_on,
        max_tries=max_tries,
        timeouts=_timeouts(r, data.get("timeouts", {})),
        base=base,
        broken=broken + unknown,
    )


def _tasks(r: _JobReader, entries: list[str], base: Path) -> tuple[tuple[Path, ...], tuple[tuple[str, str], ...]]:
    """Task files, folders holding task.toml, or globs of either; each task once. A task
    file that exists but does not load is kept aside (the preflight lists them all)."""
    from ssebench.task import TaskError, load_task

    if not entries:
        raise r.fail("tasks", "must name at least one task")
    found: dict[Path, None] = {}
    ids: dict[str, Path] = {}
    broken: list[tuple[str, str]] = []
    for i, entry in enumerate(entries):
        key = f"tasks[{i}]"
        try:
            files = _task_files(r, key, entry, base)
        except JobFileError as missing:  # listed with every other problem by the preflight
            broken.append(("task", str(missing)))
            continue
        for file in files:
            try:
                task = load_task(file)
            except TaskError as error:
                broken.append(("task", str(error)))
                continue
            if task.id in ids and ids[task.id] != task.file:
                raise r.fail(key, f"task id '{task.id}' is also the id of {ids[task.id]}")
            ids[task.id] = task.file
            found[task.file] = None
    return tuple(found), tuple(dict.fromkeys(broken))


def _task_files(r: _JobReader, key: str, entry: str, base: Path) -> list[Path]:
    pattern = entry if Path(entry).is_absolute() else str(base / entry)
    matches = sorted(glob.glob(pattern, recursive=True)) if glob.has_magic(entry) else [pattern]
    if not matches:
        raise r.fail(key, f"'{entry}' matches no task")
    files = []
    for match in matches:
        file = Path(match) / "task.toml" if Path(match).is_dir() else Path(match)
        if not file.is_file():
            raise r.fail(key, f"'{entry}': {file} does not exist")
        files.append(file)
    return files


def _agents(r: _JobReader, tables: object) -> tuple[tuple[AgentSpec, ...], tuple[tuple[str, str], ...]]:
    from ssebench.agents.registry import names

    if tables is None:
        raise r.fail("agents", "missing (required: at least one [[agents]] table)")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise r.fail("agents", "must be one or more [[agents]] tables")
    agents: list[AgentSpec] = []
    unknown: list[tuple[str, str]] = []
    for i, table in enumerate(tables):
        try:
            agent = _agent(r, table, f"agents[{i}]", names())
        except UnknownAgent as error:
            unknown.append((f"agent {table['name']}", str(r.fail(f"agents[{i}].name", str(error)))))
            continue
        if any(a.name == agent.name for a in agents):
            raise r.fail(f"agents[{i}].name", f"'{agent.name}' is already the name of another agent")
        agents.append(agent)
    return tuple(agents), tuple(unknown)


def _agent(r: _JobReader, table: dict[str, Any], key: str, bundled: tuple[str, ...]) -> AgentSpec:
    for unknown in table:
        if unknown not in _AGENT_KEYS:
            raise r.fail(f"{key}.{unknown}", f"unknown key (known keys: {', '.join(sorted(_AGENT_KEYS))})")
    name = table.get("name")
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise r.fail(f"{key}.name", f"must be a name of letters, digits, '-' or '_', got {name!r}")
    command = None
    if "command" in table:
        command = tuple(r.strings(table["command"], f"{key}.command"))
        if not command or not command[0]:
            raise r.fail(f"{key}.command", "must not be empty")
    elif name not in bundled:
        from ssebench.choices import maybe_meant

        raise UnknownAgent(
            f"unknown agent '{name}'{maybe_meant(name, bundled)} (bundled: {', '.join(bundled)}; or give a command)"
        )
    model = table.get("model")
    if model is not None and not isinstance(model, str):
        raise r.fail(f"{key}.model", f"must be a string, got {_kind(model)}")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise r.fail(f"{key}.env", "must be a table of strings")
    timeout = r.seconds(table["timeout"], f"{key}.timeout") if "timeout" in table else None
    return AgentSpec(name, command, model, dict(env), timeout)


def _levels(r: _JobReader, value: object) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise r.fail("levels", f"must be a list of levels 0-4, got {_kind(value)}")
    for i, level in enumerate(value):
        if isinstance(level, bool) or not isinstance(level, int) or level not in LEVELS:
            raise r.fail(f"levels[{i}]", f"must be a level 0-4, got {level!r}")
    return tuple(dict.fromkeys(value))


def _retry(r: _JobReader, table: object) -> tuple[tuple[str, ...], int]:
    if not isinstance(table, dict):
        raise r.fail("retry", f"must be a table, got {_kind(table)}")
    for key in table:
        if key not in ("on", "max_tries"):
            raise r.fail(f"retry.{key}", "unknown key (known keys: max_tries, on)")
    on = r.strings(table.get("on", ["infra"]), "retry.on")
    for i, what in enumerate(on):
        if what not in RETRYABLE:
            raise r.fail(f"retry.on[{i}]", f"must be one of {', '.join(RETRYABLE)}, got {what!r}")
    return tuple(on), r.integer(table, "max_tries", DEFAULT_MAX_TRIES)


def _timeouts(r: _JobReader, table: object) -> dict[str, float]:
    if not isinstance(table, dict):
        raise r.fail("timeouts", f"must be a table, got {_kind(table)}")
    for key, value in table.items():
        if key not in TIMEOUT_KEYS:
            raise r.fail(f"timeouts.{key}", f"unknown key (known keys: {', '.join(TIMEOUT_KEYS)})")
        r.seconds(value, f"timeouts.{key}")
    return {k: float(v) for k, v in table.items()}


class _FlagReader(_JobReader):
    """Names the flag, not the job file's key: ``--difficulty 7: must be a level 0-4, got 7``."""

    FLAGS = (("tasks", "--task"), ("agents", "--agent"), ("levels", "--difficulty"), ("attempts", "--attempts"))

    def fail(self, key: str, problem: str) -> JobFileError:
        for name, flag in self.FLAGS:
            if key.startswith(name):
                return JobFileError(f"{flag}: {problem}")
        return JobFileError(f"{key}: {problem}")


def from_flags(tasks: list[str], agents: list[str], levels: list[str], attempts: int) -> Job:
    """The job of ``ssebench jobs run --task ... --agent ... --difficulty ...`` (no file)."""
    r = _FlagReader("ssebench jobs run")
    parsed: list[int | str] = [int(v) if v.strip().isdigit() else v for v in levels]
    data: dict[str, Any] = {"tasks": tasks, "agents": [{"name": a} for a in agents], "attempts": attempts}
    if parsed:
        data["levels"] = parsed
    job = parse(data, r, base=Path.cwd())
    digest = hashlib.sha256(repr((tasks, agents, levels, attempts)).encode()).hexdigest()
    return _with(job, digest=digest)
