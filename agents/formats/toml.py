"""TOML editing for Codex's ``config.toml`` (tomlkit, the entry's table cut or added as text)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ssebench.agents.formats.base import FormatError, depth_guarded, drop, present_depth, prune_empty, put

_HEADER = re.compile(r"^[ \t]*(\[\[?)([^\[\]]+)\]\]?[ \t]*(#.*)?$")


@depth_guarded
class TomlEditor:
    """TOML through tomlkit, with the entry's table added or cut as a text block.

    tomlkit keeps comments and formatting, but adding then deleting a table leaves the blank
    line it added, so the text around the entry would drift. The entry's ``[a.b]`` block is
    therefore appended or cut as text, and the result is checked by parsing it again: if that
    check fails (an entry written as an inline table or dotted keys, a header inside a
    multi-line string...), tomlkit's own edit is used instead.
    """

    suffix = "toml"

    def _parse(self, text: str):
        import tomlkit
        from tomlkit.exceptions import ParseError, TOMLKitError

        try:
            return tomlkit.parse(text)
        except ParseError as exc:
            raise FormatError(str(exc).split(" at line ")[0], exc.line) from None
        except TOMLKitError as exc:  # KeyAlreadyPresent and kin: not ParseErrors, no line
            raise FormatError(str(exc).rstrip(".")) from None

    def _walk(self, doc, text: str, keys: Sequence[str]):
        node = doc
        for i, key in enumerate(keys):
            if key not in node:
                return None
            node = node[key]
            if not isinstance(node, dict):
                raise FormatError(f'"{".".join(keys[: i + 1])}" is not a table', _toml_line(text, keys[i]))
        return node

    def get(self, text: str, path: Sequence[str]) -> Any:
        doc = self._parse(text)
        container = self._walk(doc, text, path[:-1])
        if container is None or path[-1] not in container:
            return None
        return _unwrapped(container[path[-1]])

    def _render(self, path: Sequence[str], value: dict[str, Any]) -> str:
        import tomlkit

        table = tomlkit.table()
        for k, v in value.items():
            table.add(k, v)
        doc = tomlkit.document()
        node: Any = doc
        for key in path[:-1]:
            sub = tomlkit.table(is_super_table=True)
            node.add(key, sub)
            node = node[key]
        node.add(path[-1], table)
        return tomlkit.dumps(doc)

    def set(self, text: str | None, path: Sequence[str], value: Any) -> str:
        text = text or ""
        nl = "\r\n" if "\r\n" in text else "\n"
        doc = self._parse(text)
        container = self._walk(doc, text, path[:-1])
        expected = doc.unwrap()
        put(expected, path, value)
        if container is not None and path[-1] in container:
            if _unwrapped(container[path[-1]]) == value:
                return text
            span = _toml_block(text, path)
            if span is not None:
                candidate = text[: span[0]] + self._render(path, value).replace("\n", nl) + text[span[1] :]
                if self._same(candidate, expected):
                    return candidate
        else:
            base = text if text.endswith("\n") or text == "" else text + nl
            block = self._render(path, value).replace("\n", nl)
            candidate = base + (nl if base.strip() else "") + block
            if self._same(candidate, expected):
                return candidate
        return self._fallback_set(doc, path, value)

    def _fallback_set(self, doc, path: Sequence[str], value: Any) -> str:
        import tomlkit

        node = doc
        for key in path[:-1]:
            if key not in node:
                node.add(key, tomlkit.table(is_super_table=True))
            node = node[key]
        node[path[-1]] = value
        return tomlkit.dumps(doc)

    def _same(self, candidate: str, expected: dict[str, Any]) -> bool:
        try:
            got = self._parse(candidate).unwrap()
        except FormatError:
            return False
        return prune_empty(got) == prune_empty(expected)

    def present(self, text: str, keys: Sequence[str]) -> int:
        return present_depth(self._parse(text), keys)

    def remove(
        self, text: str, path: Sequence[str], *, prune: int | None = None, keep_empty: bool = False
    ) -> str | None:
        prune = len(path) - 1 if prune is None else prune
        doc = self._parse(text)
        container = self._walk(doc, text, path[:-1])
        if container is None or path[-1] not in container:
            return text
        expected = doc.unwrap()
        drop(expected, path)
        result = None
        span = _toml_block(text, path)
        if span is not None:
            start, end = span
            nl = "\r\n" if "\r\n" in text else "\n"
            if text[:start].endswith(nl + nl):  # the one blank line install put before it
                start -= len(nl)
            elif start == 0 and text[end : end + len(nl)] == nl:  # first in the file: the blank line after it
                end += len(nl)
            candidate = text[:start] + text[end:]
            if self._same(candidate, expected):
                result = candidate
        if result is None:
            import tomlkit

            del container[path[-1]]
            _drop_empty_super_tables(doc, path[:-1], prune)
            result = tomlkit.dumps(doc)
        return None if result.strip() == "" and not keep_empty else result


def _unwrapped(item: Any) -> Any:
    """A value read from a tomlkit document as plain Python (what is not an item stays as it is)."""
    return item.unwrap() if hasattr(item, "unwrap") else item


def _toml_line(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"^\s*(\[+\s*)?[\"']?{re.escape(key)}\b", line):
            return number
    return None


def _header_path(inner: str) -> tuple[str, ...] | None:
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        node: Any = tomlkit.parse(f"[{inner}]\n").unwrap()
    except ParseError:
        return None
    keys: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        key = next(iter(node))
        keys.append(key)
        node = node[key]
    return tuple(keys)


def _toml_block(text: str, path: Sequence[str]) -> tuple[int, int] | None:
    """Offsets of the ``[path]`` block (with its sub-tables): from its header line to the end
    of its last key line. Comments just before the next header belong to that header."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    start_line = None
    end_line = len(lines)
    target = tuple(path)
    for i, line in enumerate(lines):
        match = _HEADER.match(line.rstrip("\r\n"))
        if not match:
            continue
        header = _header_path(match.group(2))
        if header is None:
            continue
        if start_line is None:
            if header == target and match.group(1) == "[":
                start_line = i
        elif header[: len(target)] != target:
            end_line = i
            break
    if start_line is None:
        return None
    while end_line > start_line + 1:
        stripped = lines[end_line - 1].strip()
        if stripped and not stripped.startswith("#"):
            break
        end_line -= 1
    return offsets[start_line], offsets[end_line]


def _drop_empty_super_tables(doc, keys: Sequence[str], prune: int) -> None:
    for depth in range(len(keys), len(keys) - prune, -1):
        node = doc
        for key in keys[: depth - 1]:
            node = node[key]
        child = node.get(keys[depth - 1])
        if isinstance(child, dict) and len(child) == 0 and getattr(child, "is_super_table", lambda: False)():
            del node[keys[depth - 1]]
