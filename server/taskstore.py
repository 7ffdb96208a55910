"""The ``test_patch`` tasks this server holds (SEP-2663's ``Task``), in memory.

A task is created when a client that opted in calls ``test_patch`` and ends
``completed`` (the call's result, inlined), ``failed`` (a JSON-RPC error) or
``cancelled``. A finished task is kept ``ttl`` seconds after it ends, then forgotten;
``ttlMs`` reports that deadline counted from ``createdAt``, as the spec counts it, so it
grows while the checks run (the spec lets it change) and a running task never expires.

Ids are 256 random bits (``secrets``): a task is reached only by its id, no request
lists tasks, and a task made under one bearer token (its *owner*) is unknown to every
other token (the same "not found" as an id that never existed).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Status = Literal["working", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
POLL_INTERVAL_MS = 5000  # the spec's own example; status moves at each check and heartbeat


def _iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class TaskRecord:
    """One task: what ``tasks/get`` shows, and the run behind it while it works."""

    task_id: str
    owner: str | None
    created_wall: float
    created: float  # monotonic
    status: Status = "working"
    status_message: str | None = None
    updated_wall: float = 0.0
    ended: float | None = None  # monotonic, once terminal
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    job: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


@dataclass
class TaskStore:
    """Tasks by id; finished ones expire ``ttl`` seconds after they end."""

    ttl: float
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    _tasks: dict[str, TaskRecord] = field(default_factory=dict)

    def create(self, owner: str | None) -> TaskRecord:
        now = self.wall()
        record = TaskRecord(secrets.token_urlsafe(32), owner, now, self.clock(), updated_wall=now)
        self._tasks[record.task_id] = record
        return record

    def get(self, task_id: str, owner: str | None) -> TaskRecord | None:
        """The task, if it exists, has not expired, and belongs to *owner*."""
        self.sweep()
        record = self._tasks.get(task_id)
        if record is None or not secrets.compare_digest(record.owner or "", owner or ""):
            return None
        return record

    def running(self) -> list[TaskRecord]:
        return [r for r in self._tasks.values() if not r.terminal]

    def __len__(self) -> int:
        return len(self._tasks)

    def say(self, record: TaskRecord, message: str) -> None:
        """A progress line: the task's status message while it works."""
        if not record.terminal:
            record.status_message = message
            record.updated_wall = self.wall()

    def finish(
        self,
        record: TaskRecord,
        status: Status,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        message: str | None = None,
    ) -> None:
        if record.terminal:
            return
        record.status, record.result, record.error = status, result, error
        record.status_message = message
        record.ended = self.clock()
        record.updated_wall = self.wall()

    def sweep(self) -> None:
        """Forget the finished tasks whose time is up."""
        now = self.clock()
        for task_id in [t for t, r in self._tasks.items() if r.ended is not None and now - r.ended >= self.ttl]:
            del self._tasks[task_id]

    def ttl_ms(self, record: TaskRecord) -> int:
        """TTL plus the whole seconds the task ran (or has run): exactly the TTL at creation,
        never past the real deadline."""
        end = record.ended if record.ended is not None else self.clock()
        return round(self.ttl * 1000) + 1000 * int(end - record.created)

    def wire(self, record: TaskRecord) -> dict[str, Any]:
        """The ``Task`` fields (camelCase, as on the wire)."""
        task: dict[str, Any] = {
            "taskId": record.task_id,
            "status": record.status,
            "createdAt": _iso(record.created_wall),
            "lastUpdatedAt": _iso(record.updated_wall),
            "ttlMs": self.ttl_ms(record),
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if record.status_message is not None:
            task["statusMessage"] = record.status_message
        if record.status == "completed":
            task["result"] = record.result
        elif record.status == "failed":
            task["error"] = record.error
        return task
