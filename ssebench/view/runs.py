"""One run folder read defensively: whatever it holds, a :class:`Run` and the problems met.

A run folder may be missing files, still being written, or hold malformed JSON; the view
shows what it could read and names the rest (``problems``), never raises. Nothing here
runs anything from the folder: it only opens files, without following a symlink out.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

RESULTS = "results.json"
DIALOG = "dialog.jsonl"
SERVER_LOG = "server.log"
JOB = "job.json"
#: the files whose size and mtime decide whether a run is read again
WATCHED = (RESULTS, DIALOG, SERVER_LOG)
#: a results.json or server.log larger than this is not read (a run's are a few KiB)
SMALL_LIMIT = 8 << 20
#: the dialog is scanned for test_patch calls only when the server's log is missing
DIALOG_SCAN_LIMIT = 256 << 20
_CALL = re.compile(r"test_patch call (\d+) \(level (\d+)\): (.*?) (?:in|after) ([\d.]+) s\s*$")


@dataclass
class Call:
    """One test_patch call: its number, how it ended (the call log's summary), seconds."""

    number: int
    ended: str
    seconds: float | None = None

    @property
    def outcome(self) -> str:
        """The summary's first part: ``passed``, ``FAILED``, ``internal failure``, ``cancelled``..."""
        return self.ended.split(" [", 1)[0]


@dataclass
class Run:
    """What the list and the run page show of one run (JSON-able for the index)."""

    root: int
    rel: str
    task: str | None = None
    agent: str | None = None
    model: str | None = None
    level: int | None = None
    status: str | None = None
    passed: bool | None = None
    exit_code: int | None = None
    agent_exit: int | None = None
    duration: float | None = None
    started: str | None = None
    checks: list[tuple[str, str]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    live: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """The grade in one word: passed, failed, no verdict, running."""
        if self.passed is True:
            return "passed"
        if self.passed is False:
            return "failed"
        return "running" if self.live else "no verdict"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        calls = [Call(**c) for c in data.pop("calls", [])]
        checks = [(str(a), str(b)) for a, b in data.pop("checks", [])]
        return cls(**data, calls=calls, checks=checks)


def read_small(path: Path, limit: int = SMALL_LIMIT) -> bytes | None:
    """The bytes of a regular file, opened without following a symlink; None when absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{path.name} is larger than {limit >> 20} MiB")
    return data


def open_nofollow(path: Path) -> BinaryIO:
    """PATH opened for reading, never through a symlink (OSError for one), regular files only."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path.name} is not a regular file")
    return os.fdopen(fd, "rb")


def read_json(path: Path, problems: list[str]) -> Any:
    """The JSON in PATH, or None with a named problem (missing files are no problem)."""
    try:
        data = read_small(path)
    except OSError as exc:
        problems.append(f"{path.name}: cannot be read ({exc.strerror or exc})")
        return None
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8", errors="replace"))
    except ValueError as exc:
        problems.append(f"{path.name}: not valid JSON ({exc}); half-written?")
        return None


def read_run(folder: Path, root: int, rel: str, job_row: dict[str, Any] | None = None) -> Run:
    """Everything the list needs from FOLDER; never raises."""
    run = Run(root=root, rel=rel)
    _from_job(run, job_row or {})
    results = read_json(folder / RESULTS, run.problems)
    if isinstance(results, dict):
        _from_results(run, results)
    elif results is not None:
        run.problems.append(f"{RESULTS}: not a JSON object")
    _from_dialog_head(run, folder / DIALOG)
    run.calls = _server_calls(folder / SERVER_LOG, run.problems)
    if not run.calls and not (folder / SERVER_LOG).exists():
        run.calls = _dialog_calls(folder / DIALOG)
    run.live = results is None and not _dialog_complete(folder / DIALOG)
    if results is None and not run.live and not run.problems:
        run.problems.append(f"{RESULTS}: missing (the run did not finish, or was stopped)")
    return run


def _from_job(run: Run, row: dict[str, Any]) -> None:
    run.task = _str(row.get("task"))
    run.agent = _str(row.get("agent"))
    run.level = _int(row.get("level"))
    run.started = _str(row.get("started"))
    run.status = _str(row.get("status")) or _str(row.get("state"))


def _from_results(run: Run, data: dict[str, Any]) -> None:
    task = obj(data.get("task"))
    run.task = _str(task.get("id")) or run.task
    difficulty = obj(data.get("difficulty"))
    run.level = _int(difficulty.get("level")) if difficulty.get("level") is not None else run.level
    run.status = _str(data.get("status")) or run.status
    run.passed = data.get("passed") if isinstance(data.get("passed"), bool) else None
    run.exit_code = _int(data.get("exit_code"))
    run.duration = _float(data.get("duration"))
    run.started = _str(data.get("started_at")) or run.started
    agent = obj(data.get("agent"))
    run.agent_exit = _int(agent.get("exit_code"))
    command = agent.get("command")
    if not run.agent and isinstance(command, list) and command and isinstance(command[0], str):
        run.agent = os.path.basename(command[0])
    run.checks = checks_of(data)


def checks_of(data: dict[str, Any]) -> list[tuple[str, str]]:
    """``[(check, state), ...]`` from results.json's grading (empty when there is none)."""
    checks = obj(data.get("grading")).get("checks")
    checks = checks if isinstance(checks, list) else []
    return [(str(c.get("check")), str(c.get("state"))) for c in checks if isinstance(c, dict)]


def _from_dialog_head(run: Run, path: Path) -> None:
    """Agent and model from the dialog's first line (``init``), read alone."""
    try:
        with open_nofollow(path) as stream:
            head = stream.readline(64 << 10)
    except OSError:
        return
    try:
        event = json.loads(head)
    except ValueError:
        return
    if isinstance(event, dict) and event.get("type") == "init":
        run.agent = _str(event.get("agent")) or run.agent
        run.model = _str(event.get("model"))


def _server_calls(path: Path, problems: list[str]) -> list[Call]:
    """The call log's lines of server.log, read line by line (never the whole log)."""
    calls = []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except OSError as exc:
        problems.append(f"{SERVER_LOG}: cannot be read ({exc.strerror or exc})")
        return []
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            problems.append(f"{SERVER_LOG}: not a regular file")
            return []
        while line := stream.readline(64 << 10):
            found = _CALL.search(line.decode("utf-8", errors="replace")) if b"test_patch call" in line else None
            if found:
                calls.append(Call(int(found[1]), found[3], float(found[4])))
    return calls


def _dialog_calls(path: Path) -> list[Call]:
    """test_patch calls from the dialog's tool results (when no server log was kept)."""
    calls: list[Call] = []
    try:
        with open_nofollow(path) as stream:
            read = 0
            for line in stream:
                read += len(line)
                if read > DIALOG_SCAN_LIMIT:
                    break
                if b"test_patch" not in line or b'"running"' in line:
                    continue
                event = _loads(line)
                if event and event.get("type") == "tool" and str(event.get("name", "")).endswith("test_patch"):
                    calls.append(Call(len(calls) + 1, _call_ending(event)))
    except OSError:
        return []
    return calls


def _call_ending(event: dict[str, Any]) -> str:
    if event.get("status") == "error":
        return "error"
    output = str(event.get("output", ""))
    return "passed" if "every check" in output.split("\n", 1)[0] else "FAILED"


def _dialog_complete(path: Path) -> bool:
    """Whether the dialog's last line is ``complete`` (read from the end, not whole)."""
    try:
        with open_nofollow(path) as stream:
            size = stream.seek(0, os.SEEK_END)
            stream.seek(max(0, size - (64 << 10)))
            tail = stream.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    except OSError:
        return False
    event = _loads(tail)
    return bool(event and event.get("type") == "complete")


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def obj(value: Any) -> dict[str, Any]:
    """VALUE if it is a JSON object, else an empty one (so a malformed file reads as empty)."""
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
