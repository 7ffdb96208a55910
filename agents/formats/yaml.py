"""YAML editing for Goose's ``config.yaml`` (line edits of ``formats.yamltext``, checked by ruamel.yaml)."""

from __future__ import annotations

import copy
import io
from collections.abc import Sequence
from typing import Any

from ssebench.agents.formats import yamltext
from ssebench.agents.formats.base import FormatError, depth_guarded, drop, present_depth, prune_empty, put


@depth_guarded
class YamlEditor:
    """YAML: the entry's lines are added or cut as text (``yamltext``) and the result checked
    by loading it with ruamel.yaml; where that is not possible (flow style, an empty or
    scalar container...) ruamel.yaml's round-trip mode does the edit (comments, key order,
    quoting and the file's indentation kept, but a comment below the last entry of a mapping
    then ends up above an entry appended after it)."""

    suffix = "yaml"

    def _yaml(self, text: str):
        from ruamel.yaml import YAML
        from ruamel.yaml.util import load_yaml_guess_indent

        yaml = YAML(typ="rt")
        yaml.preserve_quotes = True
        yaml.width = 4096
        indent, block_seq = 2, 0
        if text.strip():
            try:
                _, guessed, guessed_seq = load_yaml_guess_indent(text)
            except Exception:
                guessed, guessed_seq = None, None
            indent = guessed or 2
            block_seq = guessed_seq or 0
        yaml.indent(mapping=indent, sequence=indent + block_seq, offset=block_seq)
        return yaml

    def _load(self, text: str):
        from ruamel.yaml.error import MarkedYAMLError, YAMLError

        _check_yaml_depth(text)
        yaml = self._yaml(text)
        try:
            data = yaml.load(text)
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "invalid YAML"
            raise FormatError(problem, mark.line + 1 if mark else None) from None
        except YAMLError as exc:
            raise FormatError(str(exc).splitlines()[0]) from None
        except TypeError:  # ruamel.yaml hashes keys: "? {a: 1}" makes a mapping a key
            raise FormatError("a mapping key is itself a mapping or a list") from None
        if data is not None and not isinstance(data, dict):
            raise FormatError("the top level is not a mapping", 1)
        _check_keys(data)
        return yaml, data

    def _walk(self, data, keys: Sequence[str]):
        node = data
        for i, key in enumerate(keys):
            if node is None or key not in node or node[key] is None:
                return None
            child = node[key]
            if not isinstance(child, dict):
                line = node.lc.key(key)[0] + 1 if hasattr(node, "lc") else None
                raise FormatError(f'"{".".join(keys[: i + 1])}" is not a mapping', line)
            node = child
        return node

    def _dump(self, yaml, data) -> str:
        out = io.StringIO()
        yaml.dump(data, out)
        return out.getvalue()

    def get(self, text: str, path: Sequence[str]) -> Any:
        _, data = self._load(text)
        container = self._walk(data, path[:-1])
        if container is None or path[-1] not in container:
            return None
        return _plain(container[path[-1]])

    def set(self, text: str | None, path: Sequence[str], value: Any) -> str:
        from ruamel.yaml.comments import CommentedMap

        text = text or ""
        yaml, data = self._load(text)
        if data is None:  # empty, or only comments: append below them
            base = text if text.endswith("\n") or text == "" else text + "\n"
            nested: Any = copy.deepcopy(value)
            for key in reversed(path):
                nested = {key: nested}
            return base + self._dump(yaml, nested)
        container = self._walk(data, path[:-1])
        if container is not None and path[-1] in container and _plain(container[path[-1]]) == value:
            return text
        expected = _plain(data)
        put(expected, path, value)
        candidate = yamltext.set_block(text, path, value, lambda mapping, indent: self._render(yaml, mapping, indent))
        if candidate is not None and self._same(candidate, expected):
            return candidate
        node = data
        for key in path[:-1]:
            if node.get(key) is None:
                node[key] = CommentedMap()
            node = node[key]
        node[path[-1]] = copy.deepcopy(value)
        return self._dump(yaml, data)

    def _render(self, yaml, mapping: dict[str, Any], indent: int) -> str:
        pad = " " * indent
        return "".join(
            pad + line if line.strip() else line for line in self._dump(yaml, mapping).splitlines(keepends=True)
        )

    def _same(self, candidate: str, expected: Any) -> bool:
        try:
            _, data = self._load(candidate)
        except FormatError:
            return False
        return prune_empty(_plain(data)) == prune_empty(expected)

    def present(self, text: str, keys: Sequence[str]) -> int:
        return present_depth(self._load(text)[1], keys)

    def remove(
        self, text: str, path: Sequence[str], *, prune: int | None = None, keep_empty: bool = False
    ) -> str | None:
        prune = len(path) - 1 if prune is None else prune
        yaml, data = self._load(text)
        container = self._walk(data, path[:-1])
        if container is None or path[-1] not in container:
            return text
        expected = _plain(data)
        drop(expected, path)
        for depth in range(len(path) - 1, len(path) - 1 - prune, -1):  # what pruning takes too
            parent = expected
            for key in path[: depth - 1]:
                parent = parent[key]
            if parent.get(path[depth - 1]) == {}:
                del parent[path[depth - 1]]
        candidate = yamltext.remove_block(text, path, prune)
        # strict: a container pruning must keep (it was there before install) must still be there
        if candidate is not None and _empty_as_none(self._loaded(candidate)) == _empty_as_none(expected):
            return None if candidate.strip() == "" and not keep_empty else candidate
        del container[path[-1]]
        for depth in range(len(path) - 1, len(path) - 1 - prune, -1):
            parent = self._walk(data, path[: depth - 1])
            child = parent.get(path[depth - 1]) if parent is not None else None
            if isinstance(child, dict) and len(child) == 0:
                del parent[path[depth - 1]]
        if len(data) == 0 and "#" not in text and not keep_empty:
            return None
        return self._dump(yaml, data)

    def _loaded(self, text: str) -> Any:
        try:
            _, data = self._load(text)
        except FormatError:
            return object()  # equal to nothing
        return _plain(data) if data is not None else {}


def _check_keys(data: Any) -> None:
    """Refuse a mapping whose key is itself a mapping or a list (YAML's ``? {a: 1}``): no
    client writes one, and such a key cannot even be looked up (it is unhashable)."""
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(key, (dict, list)):
                    line = node.lc.line + 1 if hasattr(node, "lc") else None
                    raise FormatError("a mapping key is itself a mapping or a list", line)
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


YAML_MAX_DEPTH = 200  # ruamel.yaml recurses several frames per level, and slows down long before


def _check_yaml_depth(text: str) -> None:
    """Refuse YAML nested deeper than YAML_MAX_DEPTH before ruamel.yaml sees it: it would take
    seconds per thousand levels to end in a RecursionError. Flow brackets are counted outside
    quotes and comments, block levels by the stack of indentations."""
    depth = flow = 0
    indents: list[int] = []
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if stripped and not stripped.startswith("#") and flow == 0:
            indent = len(line) - len(stripped)
            while indents and indents[-1] >= indent:
                indents.pop()
            indents.append(indent)
        quote = None
        previous = " "
        i = 0
        while i < len(line):
            char = line[i]
            if quote == '"':
                if char == "\\":
                    i += 1
                elif char == '"':
                    quote = None
            elif quote == "'":
                if char == "'":
                    quote = None
            elif char == "#" and previous in " \t":
                break
            elif char in "\"'":
                quote = char
            elif char in "[{":
                flow += 1
                depth = max(depth, len(indents) + flow)
            elif char in "]}":
                flow = max(0, flow - 1)
            previous = char
            i += 1
        depth = max(depth, len(indents) + flow)
        if depth > YAML_MAX_DEPTH:
            raise FormatError(
                f"is nested too deeply to edit (more than {YAML_MAX_DEPTH} levels); no client writes such a file",
                text.count("\n", 0, text.find(line)) + 1 if line else None,
            )


def _empty_as_none(data: Any) -> Any:
    """``extensions:`` (null) and ``extensions: {}`` are the same container for comparing."""
    if isinstance(data, dict):
        return {k: _empty_as_none(v) for k, v in data.items()} or None
    return data


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value
