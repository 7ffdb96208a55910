"""Load and validate a task file (``task.toml``), as docs/task-format.md specifies.

A bad task must stop the daemon before anything listens, with one message that names
the file, the key and what is wrong, so every fault becomes a :class:`TaskError`
carrying exactly that message. Unknown keys are refused at every level (top level
and inside the tables): a misspelt optional key such as ``timout`` would otherwise
silently fall back to its default, which is the kind of mistake a task author never
notices until a check hangs for half an hour.
"""

from __future__ import annotations

import os
import os.path
import re
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.checks import TASK_TABLE_KEYS, Check

DEFAULT_BUILD_TIMEOUT = Check.BUILD.kind.default_timeout
DEFAULT_POC_TIMEOUT = Check.POCS.kind.default_timeout
DEFAULT_FUNCTIONAL_TIMEOUT = Check.FUNCTIONAL.kind.default_timeout
DEFAULT_INTENT_TIMEOUT = Check.INTENT.kind.default_timeout
MAX_TIMEOUT = 7 * 24 * 3600.0  # a week: a bigger figure is a typo (and 1e400 cannot be waited on)
MAX_TASK_BYTES = 1024 * 1024  # a task file is a page of TOML; a bigger one is not a task file
BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark, which Windows editors put first: accepted
# Control characters refused in strings. A NUL cannot reach bash or the OS at all; the others
# make a command or a path that reads differently from what runs. Tabs and newlines are fine
# in commands and text (multi-line ``run``), not in paths.
_TEXT_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PATH_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

_ID_RE = re.compile(r"[A-Za-z0-9._-]+")


class TaskError(ValueError):
    """The task file cannot be used; ``str(err)`` is the one message for the user."""

    exit_code = 2


@dataclass(frozen=True)
class Command:
    """A shell command (run with ``bash -c``) and its timeout in seconds."""

    run: str
    timeout: float
    network: bool = False  # the check's sandbox may use the network (``network = true``)


@dataclass(frozen=True)
class Pocs:
    command: Command
    files: tuple[Path, ...]  # absolute, in run order


@dataclass(frozen=True)
class Intent:
    command: Command
    diff: Path  # absolute
    files: tuple[Path, ...] = ()  # absolute, inside the task folder: visible only in the intent step


@dataclass(frozen=True)
class Resources:
    """``[resources]``: CPUs and memory (bytes) one run of the task needs (docs/jobs.md)."""

    cpus: float | None = None
    memory: int | None = None


@dataclass(frozen=True)
class Task:
    file: Path  # absolute path of task.toml
    id: str
    source: Path  # absolute
    description: str
    build: Command
    pocs: Pocs | None
    functional: Command | None
    intent: Intent | None
    resources: Resources | None = None  # ``[resources]``: what one run of it needs (ssebench jobs)

    @property
    def dir(self) -> Path:
        """The folder of task.toml (``SSE_TASK_DIR``)."""
        return self.file.parent

    @property
    def poc_count(self) -> int:
        return len(self.pocs.files) if self.pocs else 0


# The keys task-format.md defines; anything else is refused (see the module docstring).
_TOP_KEYS = {"id", "source", "description", "build", "pocs", "functional", "intent", "resources"}
_TABLE_KEYS = TASK_TABLE_KEYS  # one row per check kind: ssebench/checks.py
_RESOURCE_KEYS = {"cpus", "memory"}  # ``[resources]``, not a check kind


class _TaskReader:
    """Typed access to the parsed TOML that raises one precise TaskError per fault."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.base = file.parent

    def fail(self, key: str, fault: str) -> TaskError:
        return TaskError(f"{self.file}: key '{key}': {fault}")

    def unknown(self, table: dict[str, Any], allowed: set[str], prefix: str) -> None:
        for key in table:
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                raise self.fail(prefix + key, f"unknown key (known keys: {known})")

    def string(
        self,
        table: dict[str, Any],
        key: str,
        prefix: str,
        *,
        required: bool,
        default: str = "",
        nonempty: bool = False,
        path: bool = False,
    ) -> str:
        if key not in table:
            if required:
                raise self.fail(prefix + key, "missing (required)")
            return default
        value = table[key]
        if not isinstance(value, str):
            raise self.fail(prefix + key, f"must be a string, got {_kind(value)}")
        if nonempty and not value.strip():
            raise self.fail(prefix + key, "must not be empty")
        _no_control(self, prefix + key, value, path=path)
        return value

    def timeout(self, table: dict[str, Any], prefix: str, default: float) -> float:
        if "timeout" not in table:
            return default
        value = table["timeout"]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(prefix + "timeout", f"must be a number of seconds, got {_kind(value)}")
        if not value > 0 or value != value or value == float("inf"):
            raise self.fail(prefix + "timeout", f"must be a positive number of seconds, got {value}")
        if value > MAX_TIMEOUT:
            shown = value if len(str(value)) <= 20 else f"a {len(str(value))}-digit number"
            raise self.fail(prefix + "timeout", f"must be at most {MAX_TIMEOUT:.0f} seconds (a week), got {shown}")
        return float(value)

    def table(self, data: dict[str, Any], key: str, *, required: bool) -> dict[str, Any] | None:
        if key not in data:
            if required:
                raise self.fail(key, "missing (required table)")
            return None
        value = data[key]
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a table, got {_kind(value)}")
        self.unknown(value, _TABLE_KEYS[key], key + ".")
        return value

    def path(self, raw: str, key: str, *, want_dir: bool) -> Path:
        path = Path(raw)
        if not path.is_absolute():
            path = self.base / path
        path = Path(normalize_path(path))
        if want_dir:
            if not path.is_dir():
                fault = "is not a folder" if path.exists() else "does not exist"
                raise self.fail(key, f"folder '{raw}' {fault} (resolved to {_shown_path(path)})")
        elif not path.is_file():
            fault = "is not a file" if path.exists() else "does not exist"
            raise self.fail(key, f"file '{raw}' {fault} (resolved to {_shown_path(path)})")
        return path

    def command(self, table: dict[str, Any], prefix: str, default_timeout: float) -> Command:
        run = self.string(table, "run", prefix, required=True, nonempty=True)
        network = table.get("network", False)
        if not isinstance(network, bool):
            raise self.fail(prefix + "network", f"must be true or false, got {_kind(network)}")
        return Command(run, self.timeout(table, prefix, default_timeout), network)


def _no_control(reader: _TaskReader, key: str, value: str, *, path: bool) -> None:
    match = (_PATH_CONTROL if path else _TEXT_CONTROL).search(value)
    if match is not None:
        char = match.group()
        line = value.count("\n", 0, match.start()) + 1
        where = f" (line {line} of the value)" if "\n" in value and not path else ""
        what = "a path" if path else "a string"
        raise reader.fail(key, f"{what} must not contain control characters, found U+{ord(char):04X}{where}")


def _shown_path(path: Path) -> str:
    text = str(path)
    return text if text.isprintable() else repr(text)


def _kind(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array", dict: "a table"}
    return names.get(type(value), type(value).__name__)


def normalize_path(path: Path) -> str:
    """Absolute path with ``..`` folded but symlinks kept (what the author wrote)."""
    return os.path.normpath(os.path.abspath(path))


def load_task(path: str | Path) -> Task:
    """Read, validate and resolve a task file, or the ``task.toml`` of a folder given
    instead (as ``jobs``, ``task verify`` and ``run --docker`` take one); raises :class:`TaskError`."""
    file = Path(normalize_path(Path(path)))
    if file.is_dir():
        if not (file / "task.toml").is_file():
            raise TaskError(f"{file}: a folder without task.toml, not a task file")
        file = file / "task.toml"
    data = _read_toml(file)
    r = _TaskReader(file)
    r.unknown(data, _TOP_KEYS, "")

    task_id = r.string(data, "id", "", required=True)
    if not _ID_RE.fullmatch(task_id):
        raise r.fail("id", f"must match [A-Za-z0-9._-]+, got {task_id!r}")
    source = r.path(r.string(data, "source", "", required=True, nonempty=True, path=True), "source", want_dir=True)
    description = r.string(data, "description", "", required=False)

    build_table = r.table(data, "build", required=True)
    assert build_table is not None
    build = r.command(build_table, "build.", DEFAULT_BUILD_TIMEOUT)
    pocs = _pocs(r, data)

    functional = None
    if (t := r.table(data, "functional", required=False)) is not None:
        functional = r.command(t, "functional.", DEFAULT_FUNCTIONAL_TIMEOUT)

    intent = None
    if (t := r.table(data, "intent", required=False)) is not None:
        diff = r.path(
            r.string(t, "diff", "intent.", required=True, nonempty=True, path=True), "intent.diff", want_dir=False
        )
        intent = Intent(r.command(t, "intent.", DEFAULT_INTENT_TIMEOUT), diff, _intent_files(r, t))

    return Task(
        file=file,
        id=task_id,
        source=source,
        description=description,
        build=build,
        pocs=pocs,
        functional=functional,
        intent=intent,
        resources=_resources(r, data),
    )


def _resources(r: _TaskReader, data: dict[str, Any]) -> Resources | None:
    """``[resources]``: ``cpus`` (a number > 0) and ``memory`` (bytes, or a size such as "4G")."""
    table = data.get("resources")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise r.fail("resources", f"must be a table, got {_kind(table)}")
    r.unknown(table, _RESOURCE_KEYS, "resources.")
    cpus = table.get("cpus")
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, int | float) or not 0 < cpus <= 1024):
        raise r.fail("resources.cpus", f"must be a number of CPUs above 0 (at most 1024), got {cpus!r}")
    memory = table.get("memory")
    if memory is not None:
        from ssebench.daemon.limits import parse_size

        try:
            memory = parse_size("memory", str(memory)) if not isinstance(memory, bool) else None
        except ValueError:
            memory = None
        if memory is None:
            raise r.fail("resources.memory", f"must be bytes or a size such as 512M or 4G, got {table['memory']!r}")
    return Resources(float(cpus) if cpus is not None else None, memory)


def _read_toml(file: Path) -> dict[str, Any]:
    """The task file's TOML table: read through a non-blocking, size-capped open."""
    if _PATH_CONTROL.search(str(file)):
        raise TaskError(f"{_shown_path(file)}: the task file's path must not contain control characters")
    try:
        # O_NONBLOCK and a regular-file check: a FIFO named as the task must not hang the start
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            if stat.S_ISDIR(mode):
                raise IsADirectoryError
            raise TaskError(f"{file}: is not a regular file, not a task file")
        with os.fdopen(fd, "rb") as stream:
            raw = stream.read(MAX_TASK_BYTES + 1)
    except FileNotFoundError:
        raise TaskError(f"{file}: the task file does not exist") from None
    except IsADirectoryError:
        raise TaskError(f"{file}: is a folder, not a task file") from None
    except OSError as exc:
        raise TaskError(f"{file}: cannot read the task file: {exc.strerror}") from None
    if len(raw) > MAX_TASK_BYTES:
        raise TaskError(
            f"{file}: the task file is larger than {MAX_TASK_BYTES // 1024} KiB; "
            "a task file names its PoCs and diffs, it does not hold them"
        )
    if raw.startswith(BOM):
        raw = raw[len(BOM) :]
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TaskError(f"{file}: not valid TOML: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{file}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise TaskError(f"{file}: not valid TOML for a task: arrays or tables nested too deeply") from None
    return data


def _pocs(r: _TaskReader, data: dict[str, Any]) -> Pocs | None:
    """The ``[pocs]`` table, its files resolved; None when the task has none."""
    if (t := r.table(data, "pocs", required=False)) is None:
        return None
    command = r.command(t, "pocs.", DEFAULT_POC_TIMEOUT)
    if "files" not in t:
        raise r.fail("pocs.files", "missing (required in [pocs])")
    files = t["files"]
    if not isinstance(files, list):
        raise r.fail("pocs.files", f"must be an array of strings, got {_kind(files)}")
    resolved = []
    for i, item in enumerate(files):
        if not isinstance(item, str):
            raise r.fail(f"pocs.files[{i}]", f"must be a string, got {_kind(item)}")
        _no_control(r, f"pocs.files[{i}]", item, path=True)
        resolved.append(r.path(item, f"pocs.files[{i}]", want_dir=False))
    return Pocs(command, tuple(resolved))


def _intent_files(r: _TaskReader, table: dict[str, Any]) -> tuple[Path, ...]:
    """``[intent] files``: files or folders inside the task folder (they are hidden from
    every other check, which only makes sense for a part of the folder checks see)."""
    files = table.get("files", [])
    if not isinstance(files, list):
        raise r.fail("intent.files", f"must be an array of strings, got {_kind(files)}")
    resolved = []
    for i, item in enumerate(files):
        key = f"intent.files[{i}]"
        if not isinstance(item, str):
            raise r.fail(key, f"must be a string, got {_kind(item)}")
        if not item.strip():
            raise r.fail(key, "must not be empty")
        _no_control(r, key, item, path=True)
        path = Path(normalize_path(r.base / item))
        rel = os.path.relpath(path, r.base)
        if rel == ".":
            raise r.fail(key, f"'{item}' is the task folder itself; name files or folders inside it")
        if rel.split(os.sep)[0] == "..":
            raise r.fail(key, f"'{item}' is not inside the task folder (resolved to {_shown_path(path)})")
        if not path.exists():
            raise r.fail(key, f"file or folder '{item}' does not exist (resolved to {_shown_path(path)})")
        resolved.append(path)
    return tuple(resolved)
