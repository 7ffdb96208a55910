"""The one retry every Kubernetes API call of the backend goes through (docs/kubernetes.md).

Why: a cluster's API server answers 429 (throttled) or 5xx (restarting, overloaded), or
drops or refuses a connection, now and then; a run must not be lost to one such answer.
Such transient errors are retried with exponential backoff (0.5, 1, 2, 4 s: at most
:data:`BACKOFF` ``.attempts`` tries, ~7.5 s in all; a 429's ``Retry-After`` is honoured up
to the longest wait); anything else (403, 404, 410, 422, a bad certificate) is raised at
once. A create whose try failed transiently may still have reached the server: the next
try's 409 AlreadyExists is then success if the object there is ours (the same labels).

:func:`call` is for the client's API methods (it adds a request timeout, so a hung
connection is a timeout, retried, not a hang); :func:`retry` for a whole step built of
them (one watch slice, opening an exec stream, a log download).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: (connect, read) seconds of one API request; a watch or log stream reads in pieces
REQUEST_TIMEOUT = (15.0, 60.0)
RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})
# What an exec's websocket reports in its ApiException(status=0): the handshake's answer or socket error
_WEBSOCKET_TRANSIENT = re.compile(
    r"Handshake status (429|5\d\d)|Connection (refused|reset|aborted)|timed out|Broken pipe", re.IGNORECASE
)


@dataclass(frozen=True)
class Backoff:
    """How often and how long to wait between tries: exponential, bounded."""

    attempts: int = 5
    first: float = 0.5
    longest: float = 8.0

    def delay(self, attempt: int, error: BaseException) -> float:
        """Seconds to wait after failed try number *attempt* (0-based)."""
        asked = _retry_after(error)
        return min(self.longest, asked if asked is not None else self.first * 2**attempt)


BACKOFF = Backoff()


def transient(error: BaseException) -> bool:
    """Whether *error* is worth another try: 429, 5xx, a refused, reset or timed-out connection."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError, SSLError
    from urllib3.exceptions import TimeoutError as Urllib3Timeout

    if isinstance(error, ApiException):
        if error.status in RETRIED_STATUS:
            return True
        return error.status == 0 and bool(_WEBSOCKET_TRANSIENT.search(str(error.reason or "")))
    if isinstance(error, MaxRetryError):  # urllib3 gave up its own quick retries: why?
        return error.reason is not None and transient(error.reason)
    if isinstance(error, SSLError):
        return False
    return isinstance(error, ProtocolError | NewConnectionError | Urllib3Timeout | ConnectionError | TimeoutError)


def retry(step: Callable[[], T], backoff: Backoff = BACKOFF) -> T:
    """STEP's value; a transient error tries it again, up to ``backoff.attempts`` times."""
    for attempt in range(backoff.attempts):
        try:
            return step()
        except Exception as error:
            if not transient(error) or attempt == backoff.attempts - 1:
                raise
            time.sleep(backoff.delay(attempt, error))
    raise AssertionError("unreachable: the last try returns or raises")


def call(method: Callable[..., T], *args: Any, backoff: Backoff = BACKOFF, **kwargs: Any) -> T:
    """One API METHOD of the client, with a request timeout, retried on transient errors."""
    kwargs.setdefault("_request_timeout", REQUEST_TIMEOUT)
    return retry(lambda: method(*args, **kwargs), backoff)


def create(
    method: Callable[..., Any],
    read: Callable[..., Any],
    namespace: str,
    body: Mapping[str, Any],
    backoff: Backoff = BACKOFF,
) -> None:
    """Create BODY with METHOD; a 409 after a transiently failed try is success when the
    object READ finds under its name carries BODY's labels (our earlier try made it)."""
    from kubernetes.client.exceptions import ApiException

    failed_before = False
    for attempt in range(backoff.attempts):
        try:
            method(namespace, body, _request_timeout=REQUEST_TIMEOUT)
            return
        except Exception as error:
            exists = isinstance(error, ApiException) and error.status == 409
            if exists and failed_before and _ours(read, namespace, body, backoff):
                return
            if not transient(error) or attempt == backoff.attempts - 1:
                raise
            failed_before = True
            time.sleep(backoff.delay(attempt, error))


def _ours(read: Callable[..., Any], namespace: str, body: Mapping[str, Any], backoff: Backoff) -> bool:
    meta = body["metadata"]
    found = call(read, meta["name"], namespace, backoff=backoff)
    return dict(found.metadata.labels or {}) == dict(meta.get("labels") or {})


def _retry_after(error: BaseException) -> float | None:
    """A 429's or 503's ``Retry-After`` seconds, when it gave one."""
    headers = getattr(error, "headers", None) or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
