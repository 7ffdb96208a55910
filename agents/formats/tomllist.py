"""TOML whose servers are an array of named tables (gptme's ``[[mcp.servers]]`` with ``name``).

The entry path's last key is the item's ``name``: ``("mcp", "servers", "ssebench")`` is the
``[[mcp.servers]]`` table whose ``name`` is ``ssebench``. The edit goes through tomlkit's
document (comments, key order and the other tables kept). ``switches`` are keys the list's
parent table must hold for the client to read the list at all (gptme reads
``[[mcp.servers]]`` only with ``[mcp] enabled = true``, and connects at start only with
``auto_start = true``): ``set`` adds them, ``remove`` takes them away with the table when the
list it emptied was all that table held besides them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ssebench.agents.formats.base import FormatError, depth_guarded, find_named, named_present
from ssebench.agents.formats.toml import TomlEditor


def _plain(value: Any) -> Any:
    return value.unwrap() if hasattr(value, "unwrap") else value


@depth_guarded
class NamedListTomlEditor:
    suffix = "toml"

    def __init__(self, switches: Mapping[str, Any] | None = None) -> None:
        self.switches = dict(switches or {})
        self._toml = TomlEditor()

    def _parent(self, doc: Any, containers: Sequence[str], create: bool) -> Any:
        """The table holding the list (made when ``create``), or None."""
        import tomlkit

        node = doc
        for index, key in enumerate(containers[:-1]):
            if key not in node and create:
                node[key] = tomlkit.table()
            if key not in node:
                return None
            node = node[key]
            if not isinstance(node, dict):
                raise FormatError(f'"{".".join(containers[: index + 1])}" is not a table')
        return node

    def _items(self, parent: Any, key: str) -> list[Any] | None:
        if parent is None or key not in parent:
            return None
        items = parent[key]
        if not isinstance(items, list):
            raise FormatError(f'"{key}" is not an array of tables')
        return items

    _find = staticmethod(find_named)

    def get(self, text: str, path: Sequence[str]) -> Any:
        doc = self._toml._parse(text)
        items = self._items(self._parent(doc, path[:-1], create=False), path[-2])
        index = None if items is None else self._find(items, path[-1])
        if items is None or index is None:
            return None
        return {k: _plain(v) for k, v in items[index].items() if k != "name"}

    def _fresh(self, path: Sequence[str], value: Any) -> str:
        """The text of the list's parent table holding only the switches and this entry: what
        ``set`` appends where the file had no such table, and ``remove`` cuts again."""
        return self.set("", path, value)

    def set(self, text: str | None, path: Sequence[str], value: Any) -> str:
        import tomlkit

        source = text or ""
        doc = self._toml._parse(source)
        if source.strip() and len(path) == 3 and path[0] not in doc:
            # appended as text, so that the file's own bytes stay as they are (tomlkit would add a blank line)
            return source + ("" if source.endswith("\n") else "\n") + self._fresh(path, value)
        parent = self._parent(doc, path[:-1], create=True)
        for key, switch in self.switches.items():
            if parent.get(key) != switch:
                parent[key] = switch
        items = self._items(parent, path[-2])
        if items is None:
            parent[path[-2]] = items = tomlkit.aot()
        item = tomlkit.table()
        for key, val in {"name": path[-1], **value}.items():
            item.add(key, val)
        index = self._find(items, path[-1])
        if index is None:
            items.append(item)
        elif _plain(items[index]) != _plain(item):
            items[index] = item
        out = tomlkit.dumps(doc)
        return source if out == source else out

    def present(self, text: str, keys: Sequence[str]) -> int:
        doc = self._toml._parse(text)
        return named_present(doc, keys)

    def remove(
        self, text: str, path: Sequence[str], *, prune: int | None = None, keep_empty: bool = False
    ) -> str | None:
        import tomlkit

        doc = self._toml._parse(text)
        parent = self._parent(doc, path[:-1], create=False)
        items = self._items(parent, path[-2])
        index = None if items is None else self._find(items, path[-1])
        if items is None or index is None:
            return text
        alone = len(items) == 1 and {k: _plain(v) for k, v in parent.items() if k != path[-2]} == self.switches
        appended = self._fresh(path, {k: _plain(v) for k, v in items[index].items() if k != "name"})
        if alone and len(path) == 3 and text.endswith(appended) and (prune is None or prune >= 2):
            rest = text[: -len(appended)]
            return rest if rest.strip() or keep_empty else None  # what set appended, cut as text
        del items[index]
        levels = len(path) - 1 if prune is None else prune
        if not items and levels >= 1:
            del parent[path[-2]]
            if levels >= 2 and {k: _plain(v) for k, v in parent.items()} == self.switches:
                holder = self._parent(doc, path[:-2], create=False) if len(path) > 3 else doc
                del holder[path[-3]]
        out = tomlkit.dumps(doc)
        if not out.strip():
            return "" if keep_empty else None
        return out
