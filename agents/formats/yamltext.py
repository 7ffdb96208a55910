"""Line-level edits of block-style YAML: add or cut one ``key:`` block, touch no other line.

ruamel.yaml's round trip keeps comments, but it attaches a comment to the key *before* it, so
a comment that introduces the next top-level key would end up above an entry appended to a
mapping. These helpers insert the entry's lines after the mapping's last content line (before
the comments that belong to what follows) and cut them out again. They know only block
mappings; ``formats.yaml.YamlEditor`` checks every result by loading it with ruamel.yaml and falls
back to ruamel's own edit when this returns None or the check fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

_KEY_LINE = re.compile(
    r"""^(?P<key>"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"{\[\]}&*!|>%@`-][^:#]*?)"""
    r"""[ \t]*:(?:[ \t]+(?P<rest>.*))?$"""
)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _key_of(line: str) -> tuple[str, str] | None:
    """(key, rest after the colon) of a ``key: ...`` line, or None."""
    match = _KEY_LINE.match(line.strip())
    if match is None:
        return None
    raw = match.group("key")
    if raw.startswith('"'):
        key = json.loads(raw)
    elif raw.startswith("'"):
        key = raw[1:-1].replace("''", "'")
    else:
        key = raw.strip()
    return key, (match.group("rest") or "").strip()


def _last_content(lines: list[str], start: int, end: int) -> int:
    """Index just after the last content line in [start, end), or ``start``."""
    for i in range(end - 1, start - 1, -1):
        if _content(lines[i]):
            return i + 1
    return start


def _find(lines: list[str], start: int, end: int, indent: int, key: str) -> tuple[int, int, str] | None:
    """The ``key:`` line at ``indent`` in [start, end): (its index, end of its block, rest)."""
    found = None
    for i in range(start, end):
        line = lines[i].rstrip("\r\n")
        if not _content(line) or _indent(line) != indent:
            continue
        parsed = _key_of(line)
        if parsed is not None and parsed[0] == key:
            found = i, parsed[1]  # the last duplicate wins
    if found is None:
        return None
    i, rest = found
    j = i + 1
    while j < end and (not _content(lines[j]) or _indent(lines[j]) > indent):
        j += 1
    return i, _last_content(lines, i + 1, j) if j > i + 1 else i + 1, rest


def _region(lines: list[str], keys: Sequence[str]) -> tuple[int, int, int] | None | str:
    """The lines of the mapping at ``keys``: (start, end, child indent); None when a key is
    missing; "unsupported" for anything but a non-empty block mapping."""
    start, end, indent = 0, len(lines), 0
    for key in keys:
        found = _find(lines, start, end, indent, key)
        if found is None:
            return None
        i, block_end, rest = found
        if rest and not rest.startswith("#"):
            return "unsupported"  # a flow mapping or a scalar on the key's line
        children = [line for line in lines[i + 1 : block_end] if _content(line)]
        if not children or _indent(children[0]) <= indent:
            return "unsupported"
        start, end, indent = i + 1, block_end, _indent(children[0])
    return start, end, indent


def set_block(text: str, path: Sequence[str], value: Any, render: Callable[[dict, int], str]) -> str | None:
    """``text`` with the block of ``path`` set to ``value`` (replaced in place, or added after
    the last content line of its mapping); ``render(mapping, indent)`` gives the lines of a
    mapping at that indent. None where this cannot edit the text."""
    lines = text.splitlines(keepends=True)
    nl = "\r\n" if "\r\n" in text else "\n"
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += nl
    depth = len(path) - 1
    while depth > 0 and _region(lines, path[:depth]) is None:
        depth -= 1
    region = _region(lines, path[:depth])
    if not isinstance(region, tuple):
        return None
    start, end, indent = region
    missing = list(path[depth:])
    nested = value
    for key in reversed(missing[1:]):
        nested = {key: nested}
    block = render({missing[0]: nested}, indent).replace("\n", nl)
    if len(missing) == 1:
        found = _find(lines, start, end, indent, missing[0])
        if found is not None:
            i, block_end, _ = found
            return "".join(lines[:i]) + block + "".join(lines[block_end:])
    at = _last_content(lines, start, end) if depth else len(lines)
    return "".join(lines[:at]) + block + "".join(lines[at:])


def remove_block(text: str, path: Sequence[str], prune: int | None = None) -> str | None:
    """``text`` without the block of ``path``, and without a container left with no content
    (only when its line holds nothing but the key), among the last ``prune`` containers
    (default: all). None where this cannot edit the text."""
    prune = len(path) - 1 if prune is None else prune
    lines = text.splitlines(keepends=True)
    region = _region(lines, path[:-1])
    if not isinstance(region, tuple):
        return None
    start, end, indent = region
    found = _find(lines, start, end, indent, path[-1])
    if found is None:
        return None
    i, block_end, _ = found
    del lines[i:block_end]
    for depth in range(len(path) - 1, len(path) - 1 - prune, -1):
        parent = _region(lines, path[: depth - 1])
        if not isinstance(parent, tuple):
            break
        pstart, pend, pindent = parent
        located = _find(lines, pstart, pend, pindent, path[depth - 1])
        if located is None:
            break
        k, kend, rest = located
        if rest or any(_content(line) for line in lines[k + 1 : kend]):
            break
        del lines[k]
    return "".join(lines)
