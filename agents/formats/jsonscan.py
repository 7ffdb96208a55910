"""Finding the members of JSON / JSONC / JSON5 objects, for the splices of ``formats.jsonc``.

Two ways. A file that is strict JSON (``json.loads`` accepts it, in C) is walked with the C
decoder skipping every value off the edited path (:func:`fast_value`): milliseconds for
megabytes. Any other file (comments, trailing commas, JSON5) goes through json-five's
tokenizer and a small recursive-descent pass over its tokens (:class:`Parser`); those files
(editor settings) are small.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import json5
from json5.tokenizer import tokenize

_SKIP = {"WHITESPACE", "LINE_COMMENT", "BLOCK_COMMENT"}
_COMMENTS = {"LINE_COMMENT", "BLOCK_COMMENT"}
_SCALAR_START = {
    "DOUBLE_QUOTE_STRING",
    "SINGLE_QUOTE_STRING",
    "TRUE",
    "FALSE",
    "NULL",
    "INTEGER",
    "FLOAT",
    "HEXADECIMAL",
    "INFINITY",
    "NAN",
    "PLUS",
    "MINUS",
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


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _decode_key(raw: str, kind: str) -> str:
    if kind == "NAME":
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return json5.loads(raw)


class Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        try:
            tokens = list(tokenize(text))
        except json5.JSON5DecodeError as exc:
            index = _illegal_index(str(exc))
            raise JsonSyntaxError(f"unexpected character {text[index : index + 1]!r}", line_of(text, index)) from None
        self.tokens = [t for t in tokens if t.type not in _SKIP]
        self.comment_starts = [t.index for t in tokens if t.type in _COMMENTS]
        self.pos = 0

    def _peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _fail(self, what: str):
        tok = self._peek()
        if tok is None:
            raise JsonSyntaxError(f"unexpected end of file, expected {what}", line_of(self.text, len(self.text)))
        raise JsonSyntaxError(f"expected {what}, found {tok.value[:20]!r}", line_of(self.text, tok.index))

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
            if (
                tok.type in ("INTEGER", "FLOAT")
                and (nxt := self._peek()) is not None
                and nxt.type == "EXPONENT"
                and nxt.index == tok.end
            ):
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
                raise JsonSyntaxError(f"invalid key {tok.value[:20]!r}", line_of(self.text, tok.index)) from None
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


_WS = re.compile(r"[ \t\n\r]*")
_KEY = re.compile(r'"(?:[^"\\]|\\.)*"')
_DECODER = json.JSONDecoder()


def skip_ws(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def fast_value(text: str, i: int, path: tuple[str, ...]) -> Value:
    """A value of a text known to be strict JSON; objects on ``path`` (and the root) get
    their members, everything else is skipped by the C decoder."""
    if text[i] != "{":
        _, end = _DECODER.raw_decode(text, i)
        return Value("array" if text[i] == "[" else "scalar", i, end)
    start, members = i, []
    i = skip_ws(text, i + 1)
    while text[i] != "}":
        match = _KEY.match(text, i)
        assert match is not None  # the text is valid JSON
        key = json.loads(match.group())
        i = skip_ws(text, match.end()) + 1  # past the colon
        i = skip_ws(text, i)
        if path and key == path[0] and text[i] == "{":
            value = fast_value(text, i, path[1:])
        else:
            _, end = _DECODER.raw_decode(text, i)
            value = Value("object" if text[i] == "{" else "array" if text[i] == "[" else "scalar", i, end)
        i = skip_ws(text, value.end)
        comma_end = None
        if text[i] == ",":
            comma_end = i + 1
            i = skip_ws(text, i + 1)
        members.append(Member(key, match.start(), value, comma_end))
    return Value("object", start, i + 1, members)
