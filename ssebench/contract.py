"""The daemon's run stream as types: each NDJSON event and the result of a check.

docs/daemon-api.md describes the wire; this module is its one definition. The daemon's
runner yields these events typed (:data:`RunEvent`), its HTTP layer writes them with
:func:`to_line` (``to_json`` gives the exact objects it has always sent, key order
included), grading reads them as they are (in its own process: no wire), and the MCP
server reads every line back through :func:`parse_line`, its trust boundary.
Anything off the contract (a missing or unknown key, a wrong type, an unknown check,
state or event) raises :class:`ContractError`: the server turns that into the spec's
internal-failure text, never into a verdict on the patch. Plain dataclasses with a small
reader: the daemon and grading start without pydantic's import.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ssebench.checks import CHECK_ORDER, Check, State


class ContractError(ValueError):
    """An event or result that is not what docs/daemon-api.md says."""


_E = TypeVar("_E", bound=enum.Enum)
_REQUIRED: Any = object()


def _get(obj: Mapping[str, Any], key: str, kind: type, default: Any = _REQUIRED) -> Any:
    """``obj[key]`` if it has exactly the type ``kind`` (bool is no int; an int is a float)."""
    if key not in obj:
        if default is _REQUIRED:
            raise ContractError(f"missing {key!r} in {dict(obj)!r}")
        return default
    value = obj[key]
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        ok, value = True, float(value)
    if not ok:
        raise ContractError(f"{key!r} must be {kind.__name__}, got {value!r}")
    return value


def _member(obj: Mapping[str, Any], key: str, kind: type[_E]) -> _E:
    value = _get(obj, key, str)
    try:
        return kind(value)
    except ValueError:
        raise ContractError(f"unknown {key} {value!r}") from None


def _only(obj: object, keys: set[str]) -> Mapping[str, Any]:
    if not isinstance(obj, dict):
        raise ContractError(f"not an object: {obj!r}")
    if extra := set(obj) - keys:
        raise ContractError(f"unknown keys {sorted(extra)} in {obj!r}")
    return obj


def _count(obj: Mapping[str, Any], key: str, required: bool) -> int:
    if not required:  # counts mean nothing here: the daemon sends null or omits them
        if obj.get(key) is not None:
            _get(obj, key, int)
        return 0
    value: int = _get(obj, key, int)
    if value < 0:
        raise ContractError(f"{key!r} must not be negative, got {value}")
    return value


@dataclass(frozen=True)
class CheckResult:
    """How one check of a run ended (the ``CHECK`` object of docs/daemon-api.md).

    ``pocs_passed``/``pocs_total`` mean something only for a counted kind (the PoCs)
    that ran; on the wire they are then numbers, null when it did not run, absent for
    other kinds.
    """

    check: Check
    state: State
    timed_out: bool = False
    elapsed: float = 0.0
    pocs_passed: int = 0
    pocs_total: int = 0
    covered_by_intent: bool = False
    has_log: bool = False
    log_bytes: int = 0

    KEYS: ClassVar[set[str]] = {
        "check",
        "state",
        "timed_out",
        "elapsed",
        "pocs_passed",
        "pocs_total",
        "covered_by_intent",
        "has_log",
        "log_bytes",
    }

    def __post_init__(self) -> None:
        if not 0 <= self.pocs_passed <= self.pocs_total:
            raise ContractError(f"bad PoC counts {self.pocs_passed} of {self.pocs_total} for {self.check.value}")

    @property
    def counts_shown(self) -> bool:
        """Do the PoC counts mean something (a counted kind that ran)?"""
        return self.check.kind.counted and self.state is not State.NOT_RUN

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "check": self.check.value,
            "state": self.state.value,
            "timed_out": self.timed_out,
            "elapsed": round(self.elapsed, 3),
        }
        if self.check.kind.counted:
            shown = self.counts_shown
            data["pocs_passed"] = self.pocs_passed if shown else None
            data["pocs_total"] = self.pocs_total if shown else None
        data["covered_by_intent"] = self.covered_by_intent
        data["has_log"] = self.has_log
        data["log_bytes"] = self.log_bytes
        return data

    @classmethod
    def from_json(cls, obj: object, extra: frozenset[str] = frozenset()) -> CheckResult:
        data = _only(obj, cls.KEYS | extra)
        check, state = _member(data, "check", Check), _member(data, "state", State)
        counted = check.kind.counted and state is not State.NOT_RUN
        try:
            return cls(
                check,
                state,
                _get(data, "timed_out", bool, False),
                _get(data, "elapsed", float, 0.0),
                _count(data, "pocs_passed", counted),
                _count(data, "pocs_total", counted),
                _get(data, "covered_by_intent", bool, False),
                _get(data, "has_log", bool, False),
                _get(data, "log_bytes", int, 0),
            )
        except ContractError as exc:
            raise ContractError(f"{exc} in {obj!r}") from None


@dataclass(frozen=True)
class Queued:
    """The run waits behind ``position`` others (sent only when that is more than 0)."""

    position: int
    KIND: ClassVar[str] = "queued"

    def to_json(self) -> dict[str, Any]:
        return {"event": self.KIND, "position": self.position}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Queued:
        return cls(_get(_only(obj, {"event", "position"}), "position", int))


@dataclass(frozen=True)
class QueueHeartbeat:
    """Still waiting in the queue, ``queued`` runs ahead."""

    queued: int
    KIND: ClassVar[str] = "heartbeat"

    def to_json(self) -> dict[str, Any]:
        return {"event": self.KIND, "queued": self.queued}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> QueueHeartbeat:
        return cls(_get(_only(obj, {"event", "queued"}), "queued", int))


@dataclass(frozen=True)
class CheckHeartbeat:
    """A check's command still runs, ``elapsed`` seconds in."""

    check: Check
    elapsed: float
    KIND: ClassVar[str] = "heartbeat"

    def to_json(self) -> dict[str, Any]:
        return {"event": self.KIND, "check": self.check.value, "elapsed": round(self.elapsed, 1)}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> CheckHeartbeat:
        data = _only(obj, {"event", "check", "elapsed"})
        return cls(_member(data, "check", Check), _get(data, "elapsed", float))


@dataclass(frozen=True)
class Started:
    """The run has the daemon."""

    run_id: str
    difficulty: int
    KIND: ClassVar[str] = "started"

    def to_json(self) -> dict[str, Any]:
        return {"event": self.KIND, "run_id": self.run_id, "difficulty": self.difficulty}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Started:
        data = _only(obj, {"event", "run_id", "difficulty"})
        return cls(_get(data, "run_id", str), _get(data, "difficulty", int))


@dataclass(frozen=True)
class CheckStarted:
    """A check begins (with its copy of the tree)."""

    check: Check
    KIND: ClassVar[str] = "check_started"

    def to_json(self) -> dict[str, Any]:
        return {"event": self.KIND, "check": self.check.value}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> CheckStarted:
        return cls(_member(_only(obj, {"event", "check"}), "check", Check))


@dataclass(frozen=True)
class CheckFinished:
    """A check ended, or was skipped (not run, or covered by the intent tests)."""

    result: CheckResult
    KIND: ClassVar[str] = "check_finished"

    @property
    def check(self) -> Check:
        return self.result.check

    def to_json(self) -> dict[str, Any]:
        return {"event": self.KIND, **self.result.to_json()}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> CheckFinished:
        return cls(CheckResult.from_json(obj, frozenset({"event"})))


@dataclass(frozen=True)
class Result:
    """The last line of a run: every check's result, in run order, each at most once.

    ``difficulty`` is set by the daemon's HTTP layer (the runner does not know the level).
    """

    run_id: str
    checks: tuple[CheckResult, ...]
    difficulty: int | None = None
    KIND: ClassVar[str] = "result"

    def __post_init__(self) -> None:
        names = [c.check for c in self.checks]
        if not self.run_id:
            raise ContractError("the result has an empty run_id")
        if len(set(names)) != len(names) or names != sorted(names, key=CHECK_ORDER.index):
            raise ContractError(f"result checks twice or out of order: {[n.value for n in names]}")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"event": self.KIND, "run_id": self.run_id, "checks": [c.to_json() for c in self.checks]}
        if self.difficulty is not None:
            data["difficulty"] = self.difficulty
        return data

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Result:
        data = _only(obj, {"event", "run_id", "checks", "difficulty"})
        checks = _get(data, "checks", list)
        return cls(
            _get(data, "run_id", str),
            tuple(CheckResult.from_json(c) for c in checks),
            _get(data, "difficulty", int, None),
        )


@dataclass(frozen=True)
class Error:
    """The run itself failed (never the patch's fault); the last line."""

    message: str
    KIND: ClassVar[str] = "error"

    def to_json(self) -> dict[str, Any]:
        return {"event": self.KIND, "message": self.message}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Error:
        return cls(_get(_only(obj, {"event", "message"}), "message", str))


Event = Queued | QueueHeartbeat | CheckHeartbeat | Started | CheckStarted | CheckFinished | Result | Error
# What the runner of a task's checks yields (the HTTP layer adds the queue's and the run's own).
RunEvent = CheckStarted | CheckHeartbeat | CheckFinished | Result

_READERS = {cls.KIND: cls.from_json for cls in (Queued, Started, CheckStarted, CheckFinished, Result, Error)}


def parse_event(obj: object) -> Event:
    """The typed event of one decoded line; :class:`ContractError` if it is off-contract."""
    if not isinstance(obj, dict) or not isinstance(obj.get("event"), str):
        raise ContractError(f"not an event: {obj!r}")
    kind = obj["event"]
    if kind == "heartbeat":
        return QueueHeartbeat.from_json(obj) if "queued" in obj else CheckHeartbeat.from_json(obj)
    reader = _READERS.get(kind)
    if reader is None:
        raise ContractError(f"unknown event {kind!r}")
    return reader(obj)


def parse_line(line: str) -> Event:
    """One NDJSON line of ``POST /runs``."""
    try:
        obj = json.loads(line)
    except ValueError:
        raise ContractError(f"not JSON: {line[:200]!r}") from None
    return parse_event(obj)


def to_line(event: Event) -> bytes:
    """The NDJSON line the daemon sends for *event*."""
    return (json.dumps(event.to_json(), separators=(", ", ": ")) + "\n").encode()
