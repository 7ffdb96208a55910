"""YAML whose servers are a list of named items (Continue's ``mcpServers: [{name: ...}]``).

The entry path's last key is the item's ``name``, not a mapping key: ``("mcpServers",
"ssebench")`` is the item of the ``mcpServers`` list whose ``name`` is ``ssebench``. The
edit goes through ruamel.yaml's round-trip mode (comments, key order, quoting and the
file's indentation kept), after the same checks as the mapping editor (formats/yaml.py).
A file the edit creates starts from ``skeleton`` (Continue refuses a config without its
``name`` and ``version``).
"""

from __future__ import annotations

import copy
import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ssebench.agents.formats.base import FormatError, depth_guarded, find_named, named_present
from ssebench.agents.formats.yaml import YamlEditor, _plain

_DASH = re.compile(r"^( *)- +\S")
_KEY = re.compile(r"^( *)[^\s#-][^:]*:\s*(#.*)?$")


def _list_style(text: str) -> tuple[int, int]:
    """(mapping indent, dash offset) of the file's first block list under a key; with none,
    cn's own style (``models:`` then ``  - name: ...``): 2 and 2."""
    lines = text.splitlines()
    for before, line in zip(lines, lines[1:], strict=False):
        key, dash = _KEY.match(before), _DASH.match(line)
        if key and dash:
            return 2, max(len(dash.group(1)) - len(key.group(1)), 0)
    return 2, 2


@depth_guarded
class NamedListYamlEditor:
    suffix = "yaml"

    def __init__(self, skeleton: Mapping[str, Any] | None = None) -> None:
        self.skeleton = dict(skeleton or {})
        self._yaml = YamlEditor()

    def _items(self, data: Any, containers: Sequence[str], create: bool) -> list[Any] | None:
        """The list at ``containers`` (made when ``create``), or None where there is none."""
        node = data
        for index, key in enumerate(containers):
            last = index == len(containers) - 1
            value = node.get(key) if isinstance(node, dict) else None
            if value is None and create:
                node[key] = value = [] if last else {}
            if value is None:
                return None
            if not isinstance(value, list if last else dict):
                kind = "a list" if last else "a mapping"
                raise FormatError(f"'{'.'.join(containers[: index + 1])}' is not {kind}")
            node = value
        return node

    _find = staticmethod(find_named)

    def get(self, text: str, path: Sequence[str]) -> Any:
        _, data = self._yaml._load(text)
        items = self._items(data or {}, path[:-1], create=False)
        index = None if items is None else self._find(items, path[-1])
        if items is None or index is None:
            return None
        return {k: v for k, v in _plain(items[index]).items() if k != "name"}

    def _load(self, text: str) -> tuple[Any, Any]:
        """ruamel.yaml's round trip set to the file's own list style (formats/yaml.py's loader)."""
        yaml, data = self._yaml._load(text)
        mapping, offset = _list_style(text)
        yaml.indent(mapping=mapping, sequence=offset + 2, offset=offset)
        return yaml, data

    def set(self, text: str | None, path: Sequence[str], value: Any) -> str:
        source = text if text and text.strip() else ""
        yaml, data = self._load(source)
        if data is None:
            data = yaml.load(self._yaml._dump(yaml, copy.deepcopy(self.skeleton)) if self.skeleton else "{}")
        items = self._items(data, path[:-1], create=True)
        assert items is not None
        item = {"name": path[-1], **copy.deepcopy(value)}
        index = self._find(items, path[-1])
        if index is None:
            items.append(item)
        elif _plain(items[index]) != item:
            items[index] = item
        else:
            return source
        return self._dump(yaml, data)

    def _dump(self, yaml: Any, data: Any) -> str:
        out = io.StringIO()
        yaml.dump(data, out)
        return out.getvalue()

    def present(self, text: str, keys: Sequence[str]) -> int:
        _, data = self._yaml._load(text)
        return named_present(data or {}, keys)

    def remove(
        self, text: str, path: Sequence[str], *, prune: int | None = None, keep_empty: bool = False
    ) -> str | None:
        yaml, data = self._load(text)
        items = self._items(data or {}, path[:-1], create=False)
        index = None if items is None else self._find(items, path[-1])
        if items is None or index is None:
            return text
        del items[index]
        self._prune(data, path[:-1], len(path) - 1 if prune is None else prune)
        if not data or _plain(data) == self.skeleton:
            return self._dump(yaml, data) if keep_empty and data else ("" if keep_empty else None)
        return self._dump(yaml, data)

    def _prune(self, data: Any, containers: Sequence[str], prune: int) -> None:
        """Drop the innermost ``prune`` containers the removal left empty."""
        for depth in range(len(containers), len(containers) - prune, -1):
            parent = data
            for key in containers[: depth - 1]:
                parent = parent[key]
            if parent.get(containers[depth - 1]):
                return
            del parent[containers[depth - 1]]
