"""Round-trip editing of JSON / JSONC / JSON5 text: change one member, keep every other byte.

Why not json-five's round-trip model (``ModelLoader``/``ModelDumper``)? It keeps comments and
layout, but it builds a node per token in pure Python: 3 s for a 780 kB file, and Claude
Code's ``~/.claude.json`` grows to megabytes of project history. So this module records only
where each member of the objects on the edited path starts and ends, and edits are text
splices: insert a member after the last one, replace a member's value, or cut a member out.
Everything outside the splice is byte-identical by construction.

Two ways to find the members. A file that is strict JSON (``json.loads`` accepts it, in C) is
walked with the C decoder skipping every value off the path: milliseconds for megabytes. Any
other file (comments, trailing commas, JSON5) goes through json-five's tokenizer and a small
recursive-descent pass over its tokens; those files (editor settings) are small. Both live in
``formats.jsonscan``; :class:`JsonEditor` is this format's editor (``formats.EDITORS['json']``).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import json5

from ssebench.agents.formats.base import FormatError, depth_guarded
from ssebench.agents.formats.jsonscan import JsonSyntaxError, Member, Parser, Value, fast_value, line_of, skip_ws


@dataclass
class Document:
    """A parsed JSON/JSONC text; edits return new text and leave ``text`` alone."""

    text: str
    root: Value
    comment_starts: list[int]
    path: tuple[str, ...] | None = None  # set when parsed by the fast path: the only path walked

    @classmethod
    def parse(cls, text: str, path: Sequence[str] | None = None) -> Document:
        """Parse ``text``. With ``path``, a strict-JSON text has only the objects on that key
        path split into members (the fast path); other objects are spans without members."""
        if path is not None:
            try:
                json.loads(text)
            except ValueError:
                pass
            else:
                root = fast_value(text, skip_ws(text, 0), tuple(path))
                if root.kind != "object":
                    raise JsonSyntaxError("the top level is not an object", line_of(text, root.start))
                return cls(text, root, [], tuple(path))
        parser = Parser(text)
        root = parser.document()
        if root.kind != "object":
            raise JsonSyntaxError("the top level is not an object", line_of(text, root.start))
        return cls(text, root, parser.comment_starts)

    # -- reading -------------------------------------------------------------------------

    def python(self, value: Value) -> Any:
        raw = self.text[value.start : value.end]
        try:
            return json.loads(raw)
        except ValueError:
            try:
                return json5.loads(raw)
            except ValueError as exc:
                raise JsonSyntaxError(f"invalid value: {exc}", line_of(self.text, value.start)) from None

    def line(self, index: int) -> int:
        return line_of(self.text, index)

    def find(self, obj: Value, key: str) -> Member | None:
        found = None
        for member in obj.members:  # the last duplicate wins, as in JSON.parse
            if member.key == key:
                found = member
        return found

    def walk(self, path: Sequence[str]) -> tuple[Value, list[Member]]:
        """Follow ``path`` through nested objects; returns the deepest object reached and the
        members passed. Raises ``JsonSyntaxError`` when a step exists but is not an object."""
        obj, passed = self.root, []
        for key in path:
            member = self.find(obj, key)
            if member is None:
                break
            if member.value.kind != "object":
                raise JsonSyntaxError(f'"{key}" is not an object', self.line(member.key_start))
            passed.append(member)
            obj = member.value
        return obj, passed

    def present(self, keys: Sequence[str]) -> int:
        """How many of ``keys``, from the first, exist as nested objects."""
        return len(self.walk(keys)[1])

    def get(self, path: Sequence[str]) -> Any:
        obj, passed = self.walk(path[:-1])
        if len(passed) != len(path) - 1:
            return None
        member = self.find(obj, path[-1])
        return None if member is None else self.python(member.value)

    def has_comment(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self.comment_starts, start)
        return i < len(self.comment_starts) and self.comment_starts[i] < end

    # -- layout ----------------------------------------------------------------------------

    @property
    def newline(self) -> str:
        return "\r\n" if "\r\n" in self.text else "\n"

    def _line_indent(self, index: int) -> str:
        line_start = self.text.rfind("\n", 0, index) + 1
        prefix = self.text[line_start:index]
        return prefix[: len(prefix) - len(prefix.lstrip(" \t"))]

    def _own_line(self, index: int) -> bool:
        line_start = self.text.rfind("\n", 0, index) + 1
        return self.text[line_start:index].strip(" \t") == ""

    def indent_unit(self) -> str:
        for member in self.root.members:
            if self._own_line(member.key_start):
                unit = self._line_indent(member.key_start)
                if unit:
                    return unit
        return "  "

    def _render(self, value: Any, indent: str) -> str:
        unit = self.indent_unit()
        text = json.dumps(value, indent=unit, ensure_ascii=False)
        return text.replace("\n", self.newline + indent)

    # -- editing ---------------------------------------------------------------------------

    def set(self, path: Sequence[str], value: Any) -> str:
        """Text with ``path`` set to ``value``: the missing containers are created, an existing
        equal value is left as it is (same bytes), a different one is replaced in place."""
        obj, passed = self.walk(path[:-1])
        if len(passed) == len(path) - 1:
            member = self.find(obj, path[-1])
            if member is not None:
                if self.python(member.value) == value:
                    return self.text
                indent = self._line_indent(member.key_start)
                return self._splice([(member.value.start, member.value.end, self._render(value, indent))])
        missing = list(path[len(passed) :])
        nested: Any = value
        for key in reversed(missing[1:]):
            nested = {key: nested}
        return self._insert(obj, missing[0], nested)

    def _insert(self, obj: Value, key: str, value: Any) -> str:
        nl = self.newline
        outer = self._line_indent(obj.start)
        close = obj.end - 1
        if not obj.members:
            indent = outer + self.indent_unit()
            member = json.dumps(key, ensure_ascii=False) + ": " + self._render(value, indent)
            inner = self.text[obj.start + 1 : close]
            if inner.strip() == "":
                return self._splice([(obj.start + 1, close, nl + indent + member + nl + outer)])
            return self._splice([(obj.start + 1, obj.start + 1, nl + indent + member)])
        last = obj.members[-1]
        if not self._own_line(obj.members[0].key_start):  # an object written on one line
            member = json.dumps(key, ensure_ascii=False) + ": " + json.dumps(value, ensure_ascii=False)
            if last.comma_end is not None:
                return self._splice([(last.comma_end, last.comma_end, " " + member + ",")])
            return self._splice([(last.value.end, last.value.end, ", " + member)])
        indent = self._line_indent(obj.members[0].key_start)
        member = json.dumps(key, ensure_ascii=False) + ": " + self._render(value, indent)
        at = len(self.text[:close].rstrip())  # after the last value, comma or comment
        if last.comma_end is not None:  # keep the file's trailing-comma style
            return self._splice([(at, at, nl + indent + member + ",")])
        return self._splice([(last.value.end, last.value.end, ","), (at, at, nl + indent + member)])

    def remove(self, path: Sequence[str], prune: int, *, keep_empty: bool = False) -> str | None:
        """Text without ``path``; then the enclosing containers among the last ``prune`` path
        steps that are left empty (no members, no comments) are removed too. ``None`` means the
        document is left with nothing in it at all: the caller deletes the file (with
        ``keep_empty`` the text is returned instead, e.g. ``{}``)."""
        text = self.text
        doc = self
        for depth in range(len(path), len(path) - prune - 1, -1):
            obj, passed = doc.walk(path[: depth - 1])
            if len(passed) != depth - 1:
                return text
            member = doc.find(obj, path[depth - 1])
            if member is None:
                return text
            if depth < len(path):  # a container: only when empty and comment-free
                inner = member.value
                if inner.members or doc.has_comment(inner.start, inner.end):
                    break
            text = doc._cut(obj, member)
            doc = Document.parse(text, self.path)
        root = doc.root
        if (
            not keep_empty
            and not root.members
            and not doc.has_comment(0, len(text))
            and text[: root.start].strip() == ""
            and text[root.end :].strip() == ""
        ):
            return None
        return text

    def _cut(self, obj: Value, member: Member) -> str:
        i = obj.members.index(member)
        ws_start = len(self.text[: member.key_start].rstrip())
        if i == 0 and not self._own_line(member.key_start) and member.comma_end is not None:
            end = member.comma_end
            while end < len(self.text) and self.text[end] in " \t":
                end += 1
            return self._splice([(member.key_start, end, "")])
        if i == len(obj.members) - 1 and member.comma_end is None:
            cuts = [(ws_start, member.value.end, "")]
            if i > 0:
                prev = obj.members[i - 1]
                assert prev.comma_end is not None
                cuts.insert(0, (prev.comma_end - 1, prev.comma_end, ""))
            text = self._splice(cuts)
            if len(obj.members) == 1:
                return _collapse_if_blank(text, obj.start, obj.end - (member.value.end - ws_start))
            return text
        end = member.comma_end if member.comma_end is not None else member.value.end
        text = self._splice([(ws_start, end, "")])
        if len(obj.members) == 1:
            return _collapse_if_blank(text, obj.start, obj.end - (end - ws_start))
        return text

    def _splice(self, cuts: list[tuple[int, int, str]]) -> str:
        # From the end backwards, so earlier offsets stay valid; at one offset the cut listed
        # later goes in first, so the final text reads in the order the cuts were listed.
        text = self.text
        for _, (start, end, new) in sorted(enumerate(cuts), key=lambda c: (c[1][0], c[0]), reverse=True):
            text = text[:start] + new + text[end:]
        return text


def _collapse_if_blank(text: str, open_index: int, close_end: int) -> str:
    """``{`` + whitespace + ``}`` becomes ``{}``: what an empty object was before we filled it."""
    inner = text[open_index + 1 : close_end - 1]
    if inner.strip() == "":
        return text[: open_index + 1] + text[close_end - 1 :]
    return text


def new_text(path: Sequence[str], value: Any) -> str:
    nested: Any = value
    for key in reversed(path):
        nested = {key: nested}
    return json.dumps(nested, indent=2, ensure_ascii=False) + "\n"


@depth_guarded
class JsonEditor:
    """JSON with comments, trailing commas and JSON5 syntax kept (see ``jsonc``)."""

    suffix = "json"

    def get(self, text: str, path: Sequence[str]) -> Any:
        try:
            return Document.parse(text, path).get(path)
        except JsonSyntaxError as exc:
            raise FormatError(exc.message, exc.line) from None

    def set(self, text: str | None, path: Sequence[str], value: Any) -> str:
        if text is None or text.strip() == "":
            return new_text(path, value)
        try:
            return Document.parse(text, path).set(path, value)
        except JsonSyntaxError as exc:
            raise FormatError(exc.message, exc.line) from None

    def remove(
        self, text: str, path: Sequence[str], *, prune: int | None = None, keep_empty: bool = False
    ) -> str | None:
        if text.strip() == "":
            return text
        try:
            return Document.parse(text, path).remove(
                path, prune=len(path) - 1 if prune is None else prune, keep_empty=keep_empty
            )
        except JsonSyntaxError as exc:
            raise FormatError(exc.message, exc.line) from None

    def present(self, text: str, keys: Sequence[str]) -> int:
        if text.strip() == "":
            return 0
        try:
            return Document.parse(text, keys).present(keys)
        except JsonSyntaxError as exc:
            raise FormatError(exc.message, exc.line) from None
