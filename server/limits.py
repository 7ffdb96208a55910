"""The server's bounds in time and space: idle MCP sessions, and ``MCP_LOG_DIR``'s size.

Both are read from the environment once and checked before anything starts (a bad
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

DEFAULT_SESSION_IDLE = 600.0
DEFAULT_LOG_MAX_SIZE = 1 << 30
DEFAULT_LOG_MAX_AGE = 7 * 86400.0

# The duration parser is ssebench.settings'; this name stays for its callers.
parse_duration = settings.duration


@dataclass(frozen=True)
class ServerLimits:
    session_idle: float = DEFAULT_SESSION_IDLE
    log_max_bytes: int = DEFAULT_LOG_MAX_SIZE
    log_max_age: float = DEFAULT_LOG_MAX_AGE

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerLimits:
        """The limits the environment sets; raises ValueError naming the bad variable."""
        return cls(
            session_idle=settings.value(SESSION_IDLE_VAR, settings.duration, DEFAULT_SESSION_IDLE, environ),
            log_max_bytes=settings.value(LOG_MAX_SIZE_VAR, settings.size, DEFAULT_LOG_MAX_SIZE, environ),
            log_max_age=settings.value(LOG_MAX_AGE_VAR, settings.duration, DEFAULT_LOG_MAX_AGE, environ),
        )
