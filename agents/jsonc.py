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
recursive-descent pass over its tokens; those files (editor settings) are small.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import json5
from json5.tokenizer import tokenize

_SKIP = {"WHITESPACE", "LINE_COMMENT", "BLOCK_COMMENT"}
_COMMENTS = {"LINE_COMMENT", "BLOCK_COMMENT"}
_SCALAR_START = {
    "DOUBLE_QUOTE_STRING", "SINGLE_QUOTE_STRING", "TRUE", "FALSE", "NULL", "INTEGER", "FLOAT",
    "HEXADECIMAL", "INFINITY", "NAN", "PLUS", "MINUS",
}
_NUMBER = {"INTEGER", "FLOAT", "HEXADECIMAL", "INFINITY", "NAN"}


class JsonSyntaxError(ValueError):
    """A document that is not JSON/JSONC; ``line`` is 1-based."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass
class Value:
    """A parsed value: its span in the text and, for objects, its members."""

    kind: str  # "object" | "array" | "scalar"
    start: int
    end: int  # exclusive
    members: list[Member] = field(default_factory=list)


@dataclass
class Member:
    key: str
    key_start: int
    value: Value
    comma_end: int | None  # end of the comma that follows the value, if any


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _decode_key(raw: str, kind: str) -> str:
    if kind == "NAME":
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return json5.loads(raw)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        try:
            tokens = list(tokenize(text))
        except json5.JSON5DecodeError as exc:
            index = _illegal_index(str(exc))
            raise JsonSyntaxError(f"unexpected character {text[index:index + 1]!r}", _line_of(text, index)) from None
        self.tokens = [t for t in tokens if t.type not in _SKIP]
        self.comment_starts = [t.index for t in tokens if t.type in _COMMENTS]
        self.pos = 0

    def _peek(self):  # noqa: ANN202
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _fail(self, what: str):  # noqa: ANN202
        tok = self._peek()
        if tok is None:
            raise JsonSyntaxError(f"unexpected end of file, expected {what}", _line_of(self.text, len(self.text)))
        raise JsonSyntaxError(f"expected {what}, found {tok.value[:20]!r}", _line_of(self.text, tok.index))

    def document(self) -> Value:
        if not self.tokens:
            self._fail("a value")
        value = self.value()
        if self._peek() is not None:
            self._fail("end of file")
        return value

    def value(self) -> Value:
        tok = self._peek()
        if tok is None:
            self._fail("a value")
        if tok.type == "LBRACE":
            return self.obj()
        if tok.type == "LBRACKET":
            return self.array()
        if tok.type in _SCALAR_START:
            start = tok.index
            self.pos += 1
            if tok.type in ("PLUS", "MINUS"):
                nxt = self._peek()
                if nxt is None or nxt.type not in _NUMBER:
                    self._fail("a number")
                self.pos += 1
                tok = nxt
            if tok.type in ("INTEGER", "FLOAT") and (nxt := self._peek()) is not None and nxt.type == "EXPONENT" \
                    and nxt.index == tok.end:
                self.pos += 1
                tok = nxt
            return Value("scalar", start, tok.end)
        self._fail("a value")
        raise AssertionError  # unreachable

    def obj(self) -> Value:
        open_tok = self.tokens[self.pos]
        self.pos += 1
        members: list[Member] = []
        while True:
            tok = self._peek()
            if tok is None:
                self._fail("'}'")
            if tok.type == "RBRACE":
                self.pos += 1
                return Value("object", open_tok.index, tok.end, members)
            if tok.type not in ("DOUBLE_QUOTE_STRING", "SINGLE_QUOTE_STRING", "NAME"):
                self._fail("a key or '}'")
            self.pos += 1
            colon = self._peek()
            if colon is None or colon.type != "COLON":
                self._fail("':'")
            self.pos += 1
            value = self.value()
            comma_end = None
            nxt = self._peek()
            if nxt is not None and nxt.type == "COMMA":
                comma_end = nxt.end
                self.pos += 1
            elif nxt is None or nxt.type != "RBRACE":
                self._fail("',' or '}'")
            try:
                key = _decode_key(tok.value, tok.type)
            except ValueError:  # e.g. a raw line break inside a quoted key
                raise JsonSyntaxError(f"invalid key {tok.value[:20]!r}", _line_of(self.text, tok.index)) from None
            members.append(Member(key, tok.index, value, comma_end))

    def array(self) -> Value:
        open_tok = self.tokens[self.pos]
        self.pos += 1
        while True:
            tok = self._peek()
            if tok is None:
                self._fail("']'")
            if tok.type == "RBRACKET":
                self.pos += 1
                return Value("array", open_tok.index, tok.end)
            self.value()
            nxt = self._peek()
            if nxt is not None and nxt.type == "COMMA":
                self.pos += 1
            elif nxt is None or nxt.type != "RBRACKET":
                self._fail("',' or ']'")


def _illegal_index(message: str) -> int:
    # json-five's lexer reports "Illegal character 'x' at index N".
    try:
        return int(message.rsplit("index", 1)[1].split()[0])
    except (IndexError, ValueError):
        return 0


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
                root = _fast_value(text, _skip_ws(text, 0), tuple(path))
                if root.kind != "object":
                    raise JsonSyntaxError("the top level is not an object", _line_of(text, root.start))
                return cls(text, root, [], tuple(path))
        parser = _Parser(text)
        root = parser.document()
        if root.kind != "object":
            raise JsonSyntaxError("the top level is not an object", _line_of(text, root.start))
        return cls(text, root, parser.comment_starts)

    # -- reading -------------------------------------------------------------------------

    def python(self, value: Value) -> Any:
        raw = self.text[value.start:value.end]
        try:
            return json.loads(raw)
        except ValueError:
            try:
                return json5.loads(raw)
            except ValueError as exc:
                raise JsonSyntaxError(f"invalid value: {exc}", _line_of(self.text, value.start)) from None

    def line(self, index: int) -> int:
        return _line_of(self.text, index)

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
        missing = list(path[len(passed):])
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
            inner = self.text[obj.start + 1:close]
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
            obj, passed = doc.walk(path[:depth - 1])
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
        if not keep_empty and not root.members and not doc.has_comment(0, len(text)) \
                and text[:root.start].strip() == "" \
                and text[root.end:].strip() == "":
            return None
        return text

    def _cut(self, obj: Value, member: Member) -> str:
        i = obj.members.index(member)
        ws_start = len(self.text[:member.key_start].rstrip())
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


_WS = re.compile(r"[ \t\n\r]*")
_KEY = re.compile(r'"(?:[^"\\]|\\.)*"')
_DECODER = json.JSONDecoder()


def _skip_ws(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def _fast_value(text: str, i: int, path: tuple[str, ...]) -> Value:
    """A value of a text known to be strict JSON; objects on ``path`` (and the root) get
    their members, everything else is skipped by the C decoder."""
    if text[i] != "{":
        _, end = _DECODER.raw_decode(text, i)
        return Value("array" if text[i] == "[" else "scalar", i, end)
    start, members = i, []
    i = _skip_ws(text, i + 1)
    while text[i] != "}":
        match = _KEY.match(text, i)
        assert match is not None  # the text is valid JSON
        key = json.loads(match.group())
        i = _skip_ws(text, match.end()) + 1  # past the colon
        i = _skip_ws(text, i)
        if path and key == path[0] and text[i] == "{":
            value = _fast_value(text, i, path[1:])
        else:
            _, end = _DECODER.raw_decode(text, i)
            value = Value("object" if text[i] == "{" else "array" if text[i] == "[" else "scalar", i, end)
        i = _skip_ws(text, value.end)
        comma_end = None
        if text[i] == ",":
            comma_end = i + 1
            i = _skip_ws(text, i + 1)
        members.append(Member(key, match.start(), value, comma_end))
    return Value("object", start, i + 1, members)


def _collapse_if_blank(text: str, open_index: int, close_end: int) -> str:
    """``{`` + whitespace + ``}`` becomes ``{}``: what an empty object was before we filled it."""
    inner = text[open_index + 1:close_end - 1]
    if inner.strip() == "":
        return text[:open_index + 1] + text[close_end - 1:]
    return text


def new_text(path: Sequence[str], value: Any) -> str:
    nested: Any = value
    for key in reversed(path):
        nested = {key: nested}
    return json.dumps(nested, indent=2, ensure_ascii=False) + "\n"
