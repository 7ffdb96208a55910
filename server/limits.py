"""The server's bounds in time and space: idle MCP sessions, ``MCP_LOG_DIR``'s size, tasks,
resumable streams, and the optional bearer tokens.

All are read from the environment once and checked before anything starts (a bad
value stops ``ssebench serve``/``up`` with one line, exit 2):

- ``SSE_MCP_SESSION_IDLE`` (default ``10m``): an MCP session with no request in flight
  for this long is closed and forgotten (its id then answers 404 and the client opens
  a new one). A running ``test_patch`` call is a request in flight, so it never
  expires during a call. Without it, every session a client opened stayed in memory
  until the server stopped (10,000 sessions held 470 MB).
- ``SSE_MCP_LOG_MAX_SIZE`` (default ``1G``) and ``SSE_MCP_LOG_MAX_AGE`` (default
  ``7d``): after each long log is saved, the saved logs (``<uuid>.txt`` files in
  ``MCP_LOG_DIR``) older than the age, then the oldest while the folder holds more
  than the size, are removed; never the file just written. When the disk is full,
  every other saved log goes before the save is given up.

- ``SSE_MCP_TASK_TTL`` (default ``1h``): a finished ``test_patch`` task (``server/tasks.py``)
  is kept this long after it ends, then forgotten; ``ttlMs`` reports it counted from the
  task's creation.
- ``SSE_MCP_RESUME_GRACE`` (default ``2m``, at least ``1m`` unless set lower on purpose):
  a 2025-11-25 call whose stream dropped goes on this long for the client to resume it.
- ``SSE_MCP_EVENT_MAX_AGE`` (default ``15m``) and ``SSE_MCP_EVENT_MAX_SIZE`` (default
  ``16M``): the resumable streams' events (``server/events.py``) are dropped by age and,
  oldest first, by their total size.
- ``SSE_MCP_BEARER_TOKENS`` (unset: no authentication): comma-separated tokens; with
  them every request needs ``Authorization: Bearer <one of them>``, and each token is
  one client whose tasks no other token sees.

Durations are seconds or a number with ``s``, ``m``, ``h`` or ``d``; sizes are bytes
or a number with ``K``, ``M``, ``G`` (binary units).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ssebench import settings

SESSION_IDLE_VAR = "SSE_MCP_SESSION_IDLE"
LOG_MAX_SIZE_VAR = "SSE_MCP_LOG_MAX_SIZE"
LOG_MAX_AGE_VAR = "SSE_MCP_LOG_MAX_AGE"
TASK_TTL_VAR = "SSE_MCP_TASK_TTL"
RESUME_GRACE_VAR = "SSE_MCP_RESUME_GRACE"
EVENT_MAX_AGE_VAR = "SSE_MCP_EVENT_MAX_AGE"
EVENT_MAX_SIZE_VAR = "SSE_MCP_EVENT_MAX_SIZE"
BEARER_TOKENS_VAR = "SSE_MCP_BEARER_TOKENS"

DEFAULT_SESSION_IDLE = 600.0
DEFAULT_LOG_MAX_SIZE = 1 << 30
DEFAULT_LOG_MAX_AGE = 7 * 86400.0
DEFAULT_TASK_TTL = 3600.0
DEFAULT_RESUME_GRACE = 120.0
DEFAULT_EVENT_MAX_AGE = 900.0
DEFAULT_EVENT_MAX_SIZE = 16 << 20

# The duration parser is ssebench.settings'; this name stays for its callers.
parse_duration = settings.duration


@dataclass(frozen=True)
class ServerLimits:
    session_idle: float = DEFAULT_SESSION_IDLE
    log_max_bytes: int = DEFAULT_LOG_MAX_SIZE
    log_max_age: float = DEFAULT_LOG_MAX_AGE
    task_ttl: float = DEFAULT_TASK_TTL
    resume_grace: float = DEFAULT_RESUME_GRACE
    event_max_age: float = DEFAULT_EVENT_MAX_AGE
    event_max_bytes: int = DEFAULT_EVENT_MAX_SIZE
    bearer_tokens: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerLimits:
        """The limits the environment sets; raises ValueError naming the bad variable."""
        return cls(
            session_idle=settings.value(SESSION_IDLE_VAR, settings.duration, DEFAULT_SESSION_IDLE, environ),
            log_max_bytes=settings.value(LOG_MAX_SIZE_VAR, settings.size, DEFAULT_LOG_MAX_SIZE, environ),
            log_max_age=settings.value(LOG_MAX_AGE_VAR, settings.duration, DEFAULT_LOG_MAX_AGE, environ),
            task_ttl=settings.value(TASK_TTL_VAR, settings.duration, DEFAULT_TASK_TTL, environ),
            resume_grace=settings.value(RESUME_GRACE_VAR, settings.duration, DEFAULT_RESUME_GRACE, environ),
            event_max_age=settings.value(EVENT_MAX_AGE_VAR, settings.duration, DEFAULT_EVENT_MAX_AGE, environ),
            event_max_bytes=settings.value(EVENT_MAX_SIZE_VAR, settings.size, DEFAULT_EVENT_MAX_SIZE, environ),
            bearer_tokens=settings.value(BEARER_TOKENS_VAR, _tokens, (), environ),
        )


def _tokens(name: str, raw: str) -> tuple[str, ...]:
    """Comma-separated tokens; an empty one (``a,,b``) or one with whitespace inside is refused."""
    tokens = tuple(t.strip() for t in raw.split(","))
    if any(not t or any(c.isspace() for c in t) for t in tokens):
        raise settings.SettingsError(
            f"{name}: expected comma-separated tokens without spaces, got an empty or spaced one"
        )
    return tokens
