"""What every config format editor shares: the protocol, its error, the depth guard and the
plain-data helpers that check an edit (``formats/{jsonc,toml,yaml}.py``).

A format editor turns a text into a text with one entry set or removed, keeping every other
byte where the format allows it; it never touches a file (``agents/files.py`` does that).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any, Protocol


class FormatError(ValueError):
    """Raised by an editor; the file layer adds the file name."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line = message, line


class Editor(Protocol):
    """One config format. ``path`` is the key path of the entry, e.g. ("mcpServers", "ssebench");
    the keys before the last are its containers."""

    suffix: str

    def get(self, text: str, path: Sequence[str]) -> Any: ...
    def set(self, text: str | None, path: Sequence[str], value: Any) -> str: ...
    def remove(
        self, text: str, path: Sequence[str], *, prune: int | None = None, keep_empty: bool = False
    ) -> str | None:
        """The text without the entry; of its containers left empty, the innermost ``prune``
        are removed too (default: all). None when nothing is left (the file goes), unless
        ``keep_empty``."""

    def present(self, text: str, keys: Sequence[str]) -> int:
        """How many of ``keys``, from the first, exist (as containers) in the text."""


def depth_guarded(cls):
    """Every parser here recurses once per nesting level; a file nested thousands deep
    (no client writes one) becomes a FormatError instead of a RecursionError traceback."""

    def guard(method):
        @functools.wraps(method)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            except RecursionError:
                raise FormatError(
                    "is nested too deeply to edit (hundreds of levels); no client writes such a file"
                ) from None

        return run

    for name in ("get", "set", "remove", "present"):
        setattr(cls, name, guard(getattr(cls, name)))
    return cls


def present_depth(node: Any, keys: Sequence[str]) -> int:
    """How many of *keys*, from the first, lead through nested mappings of parsed *node*
    (a key with no value counts): the ``present`` of the editors that parse to dicts."""
    for count, key in enumerate(keys):
        if not isinstance(node, dict) or key not in node:
            return count
        node = node[key]
    return len(keys)


def put(data: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        if not isinstance(data.get(key), dict):  # missing, or null ("extensions:" with nothing)
            data[key] = {}
        data = data[key]
    data[path[-1]] = copy.deepcopy(value)


def drop(data: dict[str, Any], path: Sequence[str]) -> None:
    for key in path[:-1]:
        data = data[key]
    del data[path[-1]]


def prune_empty(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: prune_empty(v) for k, v in data.items() if not (isinstance(v, dict) and not prune_empty(v))}
    return data


def find_named(items: list[Any], name: str) -> int | None:
    """The index of the list entry whose ``name`` is NAME (a named-list format: gptme's
    ``[[mcp.servers]]``, Continue's YAML ``mcpServers`` list), or None."""
    return next((i for i, item in enumerate(items) if isinstance(item, dict) and item.get("name") == name), None)


def named_present(data: Any, keys: Sequence[str]) -> int:
    """:meth:`Editor.present` over parsed data where a list holds entries by their ``name``."""
    node: Any = data
    for count, key in enumerate(keys):
        if isinstance(node, list):
            return count + 1 if find_named(node, key) is not None else count
        if not isinstance(node, dict) or key not in node:
            return count
        node = node[key]
    return len(keys)
