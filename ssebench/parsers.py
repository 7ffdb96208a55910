"""The parsers of settings and flags: one per kind, each failing with one line.

Why apart from the table (ssebench/settings.py, which re-exports them): the same checks
serve variables and command-line flags; *name* is the variable or the flag the value came
from, so every :class:`SettingsError` names it and the bad value.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from pathlib import Path

# -- the parsers: one per kind; *name* is the variable or the flag the value came from ----

MAX_SECONDS = 10**9  # a timeout beyond this is a typo, or "forever" (which is still finite here)
UNIX_SOCKET_MAX_BYTES = 107  # sun_path holds 108 bytes, the last one a NUL
# A host name: dot-separated labels of letters, digits and inner hyphens (RFC 1123).
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
# A URL path: '/' then RFC 3986 path characters, '%' only as a %XX escape.
_URL_PATH = re.compile(r"/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*")
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_BOOLEANS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


class SettingsError(ValueError):
    """A setting cannot be used; ``str(err)`` names the variable (or flag), the value and the rule."""

    exit_code = 2


def shown(raw: str) -> str:
    """A value quoted for a one-line message: control characters escaped, as Python would."""
    return f"'{raw}'" if raw.isprintable() else repr(raw)


def duration(name: str, raw: str, *, units: bool = True) -> float:
    """A positive number of seconds (``"1.5"``); with *units* also ``"10m"``, ``"2h"``, ``"7d"``."""
    text = raw.strip().lower()
    unit = text[-1:] if units and text[-1:] in _DURATION_UNITS else ""
    try:
        seconds = float(text[: len(text) - len(unit)]) * _DURATION_UNITS.get(unit, 1)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < math.inf:
        rule = "a positive duration (e.g. 600, 10m, 2h, 7d)" if units else "a positive number of seconds"
        raise SettingsError(f"{name} must be {rule}, got {shown(raw)}")
    return seconds


def size(name: str, raw: str) -> int:
    """``"1073741824"``, ``"512M"``, ``"1G"``, ``"512MiB"`` (binary units) → bytes, 1 or more."""
    text = raw.strip().lower().removesuffix("ib").removesuffix("b")
    unit = text[-1:] if text[-1:] in _SIZE_UNITS else ""
    number = text[: len(text) - len(unit)]
    if not (number.isascii() and number.isdigit()) or int(number) < 1:
        raise SettingsError(f"{name} must be a size in bytes (e.g. 1073741824, 512M, 1G), got {shown(raw)}")
    return int(number) * _SIZE_UNITS[unit]


def count(name: str, raw: str) -> int:
    """A whole number, 1 or more, in ASCII digits (``" 64 "`` is fine)."""
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise SettingsError(f"{name} must be a whole number (1 or more), got {shown(raw)}")
    return int(text)


def whole_seconds(name: str, raw: str) -> int:
    """A positive whole number of seconds written in ASCII digits (``" 300 "`` is fine)."""
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise SettingsError(f"{name} must be a whole number of seconds (1 or more), got {shown(raw)}")
    if len(text) > 10 or int(text) > MAX_SECONDS:  # 1e400 s would overflow every clock sum
        raise SettingsError(
            f"{name} must be at most {MAX_SECONDS} seconds (about 31 years), "
            f"got {shown(raw) if len(raw) <= 40 else f'a {len(text)}-digit number'}"
        )
    return int(text)


def port(name: str, raw: str) -> int:
    """A TCP port, 1 to 65535."""
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        raise SettingsError(f"{name} must be a TCP port from 1 to 65535, got {shown(raw)}")
    return int(text)


def host(name: str, raw: str) -> str:
    """An IPv4 or IPv6 address (``[::1]`` or ``::1``) or a host name, without a port.

    Only the form is checked (no DNS lookup at start-up): ``256.1.1.1``, ``[::1`` and
    ``localhost:99`` are refused here instead of failing the server after the daemon started.
    """
    text = raw.strip()
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if ":" in inner:
        try:
            if "%" not in inner:  # a zone index (fe80::1%eth0) has no plain URL form
                return str(ipaddress.IPv6Address(inner))
        except ValueError:
            pass
        if "[" not in text and text.count(":") == 1:
            fault = "an address without a port (give the port in SSE_MCP_PORT)"
        else:
            fault = "an IPv4 or IPv6 address or a host name"
        raise SettingsError(f"{name} must be {fault}, got {shown(raw)}")
    labels = inner.rstrip(".").split(".")
    if inner and all(label.isascii() and label.isdigit() for label in labels):
        try:
            return str(ipaddress.IPv4Address(inner))
        except ValueError:
            raise SettingsError(
                f"{name} must be an IPv4 address (four numbers from 0 to 255) or a host name, got {shown(raw)}"
            ) from None
    if inner != text or not inner or len(inner) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise SettingsError(f"{name} must be an IPv4 or IPv6 address or a host name, got {shown(raw)}")
    return inner


def url_path(name: str, raw: str) -> str:
    """A URL's path: '/' and URL path characters, nothing to escape or to misread."""
    if not _URL_PATH.fullmatch(raw):
        fault = (
            "must start with '/'"
            if not raw.startswith("/")
            else "must hold only URL path characters (letters, digits, -._~!$&'()*+,;=:@/ and %XX)"
        )
        raise SettingsError(f"{name} {fault}, got {shown(raw)}")
    return raw


def path(name: str, raw: str) -> Path:
    """A path, made absolute: no control characters (a NUL cannot reach the OS; a newline in
    a path breaks every log line that names it) and valid UTF-8 (results.json is UTF-8)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise SettingsError(f"{name} must be a path without control characters, got {shown(raw)}")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise SettingsError(f"{name} must be a path in UTF-8, got {raw.encode('utf-8', 'surrogateescape')!r}") from None
    return Path(raw).absolute()


def socket_path(name: str, raw: str) -> Path:
    """A :func:`path` short enough for a Unix socket."""
    where = path(name, raw)
    length = len(os.fsencode(where))
    if length > UNIX_SOCKET_MAX_BYTES:
        raise SettingsError(
            f"{name} is {length} bytes long; a Unix socket path may have at most "
            f"{UNIX_SOCKET_MAX_BYTES}, got {shown(raw)}"
        )
    return where


def boolean(name: str, raw: str) -> bool:
    """On or off: 1/0, true/false, yes/no, on/off (any case)."""
    got = _BOOLEANS.get(raw.strip().lower())
    if got is None:
        raise SettingsError(f"{name} must be one of 1, 0, true, false, yes, no, on, off, got {shown(raw)}")
    return got
