"""Config-file handling, written once for every client.

Two layers. The *format editors* (JSON/JSONC, TOML, YAML) turn a text into a text with one
entry set or removed, keeping every other byte where the format allows it. The *file layer*
reads, locks, diffs, backs up and atomically replaces: a user's config is never half-written,
never truncated by a concurrent writer, and a malformed file is reported (file and line) and
left untouched.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import errno
import functools
import hashlib
import io
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from ssebench.agents import jsonc, yamltext

BOM = "\ufeff"


class ConfigError(Exception):
    """A config file we must not touch: malformed, or a key of the wrong type."""

    def __init__(self, path: Path, message: str, line: int | None = None) -> None:
        self.path, self.message, self.line = path, message, line
        where = f"{path}, line {line}" if line else str(path)
        super().__init__(f"{where}: {message}")


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
    def remove(self, text: str, path: Sequence[str], *, prune: int | None = None,
               keep_empty: bool = False) -> str | None:
        """The text without the entry; of its containers left empty, the innermost ``prune``
        are removed too (default: all). None when nothing is left (the file goes), unless
        ``keep_empty``."""
    def present(self, text: str, keys: Sequence[str]) -> int:
        """How many of ``keys``, from the first, exist (as containers) in the text."""


def _depth_guarded(cls):  # noqa: ANN001, ANN202
    """Every parser here recurses once per nesting level; a file nested thousands deep
    (no client writes one) becomes a FormatError instead of a RecursionError traceback."""
    def guard(method):  # noqa: ANN001, ANN202
        @functools.wraps(method)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            except RecursionError:
                raise FormatError("is nested too deeply to edit (hundreds of levels); no client writes such "
                                  "a file") from None
        return run

    for name in ("get", "set", "remove", "present"):
        setattr(cls, name, guard(getattr(cls, name)))
    return cls


# --------------------------------------------------------------------------- JSON / JSONC


@_depth_guarded
class JsonEditor:
    """JSON with comments, trailing commas and JSON5 syntax kept (see ``jsonc``)."""

    suffix = "json"

    def get(self, text: str, path: Sequence[str]) -> Any:
        try:
            return jsonc.Document.parse(text, path).get(path)
        except jsonc.JsonSyntaxError as exc:
            raise FormatError(exc.message, exc.line) from None

    def set(self, text: str | None, path: Sequence[str], value: Any) -> str:
        if text is None or text.strip() == "":
            return jsonc.new_text(path, value)
        try:
            return jsonc.Document.parse(text, path).set(path, value)
        except jsonc.JsonSyntaxError as exc:
            raise FormatError(exc.message, exc.line) from None

    def remove(self, text: str, path: Sequence[str], *, prune: int | None = None,
               keep_empty: bool = False) -> str | None:
        if text.strip() == "":
            return text
        try:
            return jsonc.Document.parse(text, path).remove(
                path, prune=len(path) - 1 if prune is None else prune, keep_empty=keep_empty)
        except jsonc.JsonSyntaxError as exc:
            raise FormatError(exc.message, exc.line) from None

    def present(self, text: str, keys: Sequence[str]) -> int:
        if text.strip() == "":
            return 0
        try:
            return jsonc.Document.parse(text, keys).present(keys)
        except jsonc.JsonSyntaxError as exc:
            raise FormatError(exc.message, exc.line) from None


# --------------------------------------------------------------------------- TOML

_HEADER = re.compile(r"^[ \t]*(\[\[?)([^\[\]]+)\]\]?[ \t]*(#.*)?$")


@_depth_guarded
class TomlEditor:
    """TOML through tomlkit, with the entry's table added or cut as a text block.

    tomlkit keeps comments and formatting, but adding then deleting a table leaves the blank
    line it added, so the text around the entry would drift. The entry's ``[a.b]`` block is
    therefore appended or cut as text, and the result is checked by parsing it again: if that
    check fails (an entry written as an inline table or dotted keys, a header inside a
    multi-line string...), tomlkit's own edit is used instead.
    """

    suffix = "toml"

    def _parse(self, text: str):  # noqa: ANN202
        import tomlkit
        from tomlkit.exceptions import ParseError, TOMLKitError

        try:
            return tomlkit.parse(text)
        except ParseError as exc:
            raise FormatError(str(exc).split(" at line ")[0], exc.line) from None
        except TOMLKitError as exc:  # KeyAlreadyPresent and kin: not ParseErrors, no line
            raise FormatError(str(exc).rstrip(".")) from None

    def _walk(self, doc, text: str, keys: Sequence[str]):  # noqa: ANN001, ANN202
        node = doc
        for i, key in enumerate(keys):
            if key not in node:
                return None
            node = node[key]
            if not isinstance(node, dict):
                raise FormatError(f'"{".".join(keys[:i + 1])}" is not a table', _toml_line(text, keys[i]))
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
        _put(expected, path, value)
        if container is not None and path[-1] in container:
            if _unwrapped(container[path[-1]]) == value:
                return text
            span = _toml_block(text, path)
            if span is not None:
                candidate = text[:span[0]] + self._render(path, value).replace("\n", nl) + text[span[1]:]
                if self._same(candidate, expected):
                    return candidate
        else:
            base = text if text.endswith("\n") or text == "" else text + nl
            block = self._render(path, value).replace("\n", nl)
            candidate = base + (nl if base.strip() else "") + block
            if self._same(candidate, expected):
                return candidate
        return self._fallback_set(doc, path, value)

    def _fallback_set(self, doc, path: Sequence[str], value: Any) -> str:  # noqa: ANN001
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
        return _prune_empty(got) == _prune_empty(expected)

    def present(self, text: str, keys: Sequence[str]) -> int:
        node = self._parse(text)
        for count, key in enumerate(keys):
            if not isinstance(node, dict) or key not in node:
                return count
            node = node[key]
        return len(keys)

    def remove(self, text: str, path: Sequence[str], *, prune: int | None = None,
               keep_empty: bool = False) -> str | None:
        prune = len(path) - 1 if prune is None else prune
        doc = self._parse(text)
        container = self._walk(doc, text, path[:-1])
        if container is None or path[-1] not in container:
            return text
        expected = doc.unwrap()
        _drop(expected, path)
        result = None
        span = _toml_block(text, path)
        if span is not None:
            start, end = span
            nl = "\r\n" if "\r\n" in text else "\n"
            if text[:start].endswith(nl + nl):  # the one blank line install put before it
                start -= len(nl)
            elif start == 0 and text[end:end + len(nl)] == nl:  # first in the file: the blank line after it
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
        elif header[:len(target)] != target:
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


def _put(data: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        if not isinstance(data.get(key), dict):  # missing, or null ("extensions:" with nothing)
            data[key] = {}
        data = data[key]
    data[path[-1]] = copy.deepcopy(value)


def _drop(data: dict[str, Any], path: Sequence[str]) -> None:
    for key in path[:-1]:
        data = data[key]
    del data[path[-1]]


def _prune_empty(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _prune_empty(v) for k, v in data.items() if not (isinstance(v, dict) and not _prune_empty(v))}
    return data


def _drop_empty_super_tables(doc, keys: Sequence[str], prune: int) -> None:  # noqa: ANN001
    for depth in range(len(keys), len(keys) - prune, -1):
        node = doc
        for key in keys[:depth - 1]:
            node = node[key]
        child = node.get(keys[depth - 1])
        if isinstance(child, dict) and len(child) == 0 and getattr(child, "is_super_table", lambda: False)():
            del node[keys[depth - 1]]


# --------------------------------------------------------------------------- YAML


@_depth_guarded
class YamlEditor:
    """YAML: the entry's lines are added or cut as text (``yamltext``) and the result checked
    by loading it with ruamel.yaml; where that is not possible (flow style, an empty or
    scalar container...) ruamel.yaml's round-trip mode does the edit (comments, key order,
    quoting and the file's indentation kept, but a comment below the last entry of a mapping
    then ends up above an entry appended after it)."""

    suffix = "yaml"

    def _yaml(self, text: str):  # noqa: ANN202
        from ruamel.yaml import YAML
        from ruamel.yaml.util import load_yaml_guess_indent

        yaml = YAML(typ="rt")
        yaml.preserve_quotes = True
        yaml.width = 4096
        indent, block_seq = 2, 0
        if text.strip():
            try:
                _, guessed, guessed_seq = load_yaml_guess_indent(text)
            except Exception:  # noqa: BLE001 - reported by _load below
                guessed, guessed_seq = None, None
            indent = guessed or 2
            block_seq = guessed_seq or 0
        yaml.indent(mapping=indent, sequence=indent + block_seq, offset=block_seq)
        return yaml

    def _load(self, text: str):  # noqa: ANN202
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
        if data is not None and not isinstance(data, dict):
            raise FormatError("the top level is not a mapping", 1)
        return yaml, data

    def _walk(self, data, keys: Sequence[str]):  # noqa: ANN001, ANN202
        node = data
        for i, key in enumerate(keys):
            if node is None or key not in node or node[key] is None:
                return None
            child = node[key]
            if not isinstance(child, dict):
                line = node.lc.key(key)[0] + 1 if hasattr(node, "lc") else None
                raise FormatError(f'"{".".join(keys[:i + 1])}" is not a mapping', line)
            node = child
        return node

    def _dump(self, yaml, data) -> str:  # noqa: ANN001
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
        _put(expected, path, value)
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

    def _render(self, yaml, mapping: dict[str, Any], indent: int) -> str:  # noqa: ANN001
        pad = " " * indent
        return "".join(pad + line if line.strip() else line
                       for line in self._dump(yaml, mapping).splitlines(keepends=True))

    def _same(self, candidate: str, expected: Any) -> bool:
        try:
            _, data = self._load(candidate)
        except FormatError:
            return False
        return _prune_empty(_plain(data)) == _prune_empty(expected)

    def present(self, text: str, keys: Sequence[str]) -> int:
        _, node = self._load(text)
        for count, key in enumerate(keys):
            if not isinstance(node, dict) or key not in node:  # a key with no value counts
                return count
            node = node[key]
        return len(keys)

    def remove(self, text: str, path: Sequence[str], *, prune: int | None = None,
               keep_empty: bool = False) -> str | None:
        prune = len(path) - 1 if prune is None else prune
        yaml, data = self._load(text)
        container = self._walk(data, path[:-1])
        if container is None or path[-1] not in container:
            return text
        expected = _plain(data)
        _drop(expected, path)
        for depth in range(len(path) - 1, len(path) - 1 - prune, -1):  # what pruning takes too
            parent = expected
            for key in path[:depth - 1]:
                parent = parent[key]
            if parent.get(path[depth - 1]) == {}:
                del parent[path[depth - 1]]
        candidate = yamltext.remove_block(text, path, prune)
        # strict: a container pruning must keep (it was there before install) must still be there
        if candidate is not None and _empty_as_none(self._loaded(candidate)) == _empty_as_none(expected):
            return None if candidate.strip() == "" and not keep_empty else candidate
        del container[path[-1]]
        for depth in range(len(path) - 1, len(path) - 1 - prune, -1):
            parent = self._walk(data, path[:depth - 1])
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
            raise FormatError(f"is nested too deeply to edit (more than {YAML_MAX_DEPTH} levels); no client writes "
                              "such a file", text.count("\n", 0, text.find(line)) + 1 if line else None)


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


EDITORS: dict[str, Editor] = {"json": JsonEditor(), "toml": TomlEditor(), "yaml": YamlEditor()}


# --------------------------------------------------------------------------- the file layer


@dataclass(frozen=True)
class Change:
    """What an edit does to one file; ``None`` text means "no file"."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        if not self.changed:
            return ""
        before = (self.before or "").splitlines(keepends=True)
        after = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            before, after,
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _read_bytes(path: Path) -> bytes | None:
    try:
        # O_NONBLOCK: a FIFO in the config's place must not hang us; only regular files are read
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigError(path, "is a directory, not a config file") from None
    except PermissionError:
        raise ConfigError(path, "cannot be read (permission denied)") from None
    except OSError as exc:
        raise ConfigError(path, f"cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(path, "is not a regular file (a FIFO, socket or device), not a config file")
        return stream.read()


def _decode(path: Path, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, "is not UTF-8 text", data.count(b"\n", 0, exc.start) + 1) from None
    if text.startswith(BOM + BOM):
        # One BOM is an editor's habit and is kept; two are a broken file no client reads.
        raise ConfigError(path, "starts with two byte-order marks (U+FEFF); no client reads it so, remove one "
                                "and try again", 1)
    return text[1:] if text.startswith(BOM) else text


def read_text(path: Path) -> str | None:
    """The file's text (BOM removed), or None when there is no file."""
    data = _read_bytes(path)
    return None if data is None else _decode(path, data)


def real_path(path: Path) -> Path:
    """Write through a symlink (dotfile managers link config files), never replace the link."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _cache_dir(*parts: str) -> Path:
    cache = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(cache) if os.path.isabs(cache) else Path.home() / ".cache").joinpath("ssebench", *parts)


def _digest(path: Path, *more: str) -> str:
    return hashlib.sha256("\0".join([str(path.resolve()), *more]).encode()).hexdigest()[:24]


def lock_for(path: Path):  # noqa: ANN201
    """An inter-process lock for ``path``, kept in a folder we own rather than next to the
    config (a project-scope lock file would show up in the project's tree). Claude Code's own
    lock is taken as well, see :func:`app_lock`."""
    from filelock import FileLock

    base = _cache_dir("locks")
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    return FileLock(str(base / f"{_digest(path)}.lock"), timeout=60)


# --------------------------------------------------------------------------- the client's own lock

# Claude Code locks ~/.claude.json (and $CLAUDE_CONFIG_DIR/.claude.json) while it rewrites it,
# the proper-lockfile way: the lock is a DIRECTORY `<file>.lock` made with mkdir (atomic), kept
# fresh by its holder touching its mtime every few seconds, and taken over by others once its
# mtime is older than the stale limit (proper-lockfile's default, 10 s). Taking the same lock
# means Claude Code never rewrites the file between our read and our rename.
APP_LOCKED_NAMES = (".claude.json",)
APP_LOCK_STALE_SECONDS = 10.0
APP_LOCK_TIMEOUT_SECONDS = 10.0


@contextlib.contextmanager
def app_lock(path: Path, timeout: float | None = None) -> Iterator[Path | None]:
    """Hold the client's own ``<path>.lock`` directory while ``path`` is written (for the files
    in ``APP_LOCKED_NAMES``; a no-op for the rest). ``path`` as the client names it (not
    resolved: proper-lockfile is used with ``realpath: false``)."""
    if path.name not in APP_LOCKED_NAMES:
        yield None
        return
    lock = path.with_name(path.name + ".lock")
    timeout = APP_LOCK_TIMEOUT_SECONDS if timeout is None else timeout
    deadline = time.monotonic() + timeout
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)  # the write would make it anyway
            os.mkdir(lock, 0o777)
            break
        except FileExistsError:
            pass
        except OSError as exc:
            raise ConfigError(path, f"cannot take Claude Code's lock {lock}: {exc.strerror}") from None
        try:
            age = time.time() - os.stat(lock).st_mtime
        except FileNotFoundError:
            continue  # released meanwhile
        if age > APP_LOCK_STALE_SECONDS:
            with contextlib.suppress(OSError):  # a holder that died: take it over, as Claude Code would
                os.rmdir(lock)
            continue
        if time.monotonic() >= deadline:
            raise ConfigError(path, f"is locked by Claude Code ({lock} has been held for more than {timeout:g} s, "
                                    "refreshed by a running claude); try again when Claude Code is idle")
        time.sleep(0.05)
    try:
        yield lock
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(lock)


# --------------------------------------------------------------------------- what install added


@dataclass(frozen=True)
class Provenance:
    """What an install added besides the entry, so uninstall removes that and nothing else:
    an empty ``"mcpServers": {}`` or a ``{}`` file that was there before stays, byte for byte."""

    containers_created: int  # the innermost containers of the entry's path that install made
    file_created: bool  # there was no file
    blank: str | None = None  # the text of a blank file (whitespace only) install filled
    # sha256 of the text install wrote and of the text before it (which NAME.bak then holds):
    # while the file is still exactly what install wrote, uninstall gives back the .bak's text,
    # byte for byte whatever the format (a YAML `extensions: {}` turned into a block, say).
    after_sha: str | None = None
    before_sha: str | None = None


def _records_dir() -> Path:
    # Beside the locks, in ssebench's cache: losing a record is safe (uninstall then takes the
    # entry only and leaves an empty container), and nothing of ours appears among the user's
    # state (agents/created.py keeps the files and folders an install created there).
    return _cache_dir("installed")


def _record_file(target: Path, entry_path: Sequence[str]) -> Path:
    return _records_dir() / f"{_digest(target, *entry_path)}.json"


def provenance(editor: Editor, before: str | None, entry_path: Sequence[str]) -> Provenance:
    if before is None:
        return Provenance(len(entry_path) - 1, True)
    if before.strip() == "":
        return Provenance(len(entry_path) - 1, False, before if len(before) <= 4096 else "")
    containers = entry_path[:-1]
    return Provenance(len(containers) - editor.present(before, containers), False)


def load_record(target: Path, entry_path: Sequence[str]) -> Provenance | None:
    try:
        data = json.loads(_record_file(real_path(target), entry_path).read_text(encoding="utf-8"))
        return Provenance(int(data["containers_created"]), bool(data["file_created"]), data.get("blank"),
                          data.get("after_sha"), data.get("before_sha"))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none (or unreadable): uninstall removes the entry only


def note_install(target: Path, editor: Editor, change: Change, entry_path: Sequence[str]) -> None:
    """Record what the install in ``change`` added. An entry that was there already keeps the
    record of the install that added it. Best effort: without a record, uninstall is cautious."""
    if not change.changed or (change.before is not None and change.before.strip()
                              and editor.get(change.before, entry_path) is not None):
        return
    record = _record_file(real_path(target), entry_path)
    with contextlib.suppress(OSError):
        record.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        found = provenance(editor, change.before, entry_path)
        if change.before is not None and change.after is not None:
            found = Provenance(found.containers_created, found.file_created, found.blank,
                               _sha(change.after), _sha(change.before))
        data = {"config": str(target), "entry": list(entry_path), **asdict(found)}
        _atomic_write(record, (json.dumps(data, ensure_ascii=False) + "\n").encode(), 0o600)


def forget_install(target: Path, entry_path: Sequence[str]) -> None:
    with contextlib.suppress(OSError):
        _record_file(real_path(target), entry_path).unlink()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def removed_text(editor: Editor, text: str, entry_path: Sequence[str], record: Provenance | None,
                 target: Path | None = None) -> str | None:
    """``text`` without the entry and without what the install recorded in ``record`` added
    (None: delete the file). Without a record only the entry goes: an empty container or an
    empty ``{}`` may have been the user's."""
    if record is not None and record.after_sha == _sha(text) and target is not None:
        try:
            previous = read_text(real_path(target).with_name(real_path(target).name + ".bak"))
        except ConfigError:
            previous = None
        if previous is not None and _sha(previous) == record.before_sha:
            return previous  # untouched since install: exactly what was there before
    prune = record.containers_created if record else 0
    result = editor.remove(text, entry_path, prune=prune)
    if result is not None:
        return result
    if record is not None and record.file_created:
        return None
    if record is not None and record.blank is not None:
        return record.blank
    return editor.remove(text, entry_path, prune=prune, keep_empty=True)


# --------------------------------------------------------------------------- writing


FS_IOC_GETFLAGS = 0x80086601  # linux/fs.h
FS_IMMUTABLE_FL, FS_APPEND_FL = 0x10, 0x20


def _inode_flags(path: Path) -> int:
    """The file's chattr flags (0 where the filesystem or platform has none)."""
    import array
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return 0
    try:
        buf = array.array("l", [0])
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, buf, True)
        return int(buf[0])
    except OSError:
        return 0
    finally:
        os.close(fd)


def check_writable(target: Path) -> None:
    """Refuse, before writing anything, a config its owner made read-only or immutable: a
    rename would replace a 0444 file (and root ignores the mode), against the user's intent."""
    try:
        st = target.stat()
    except FileNotFoundError:
        return
    flags = _inode_flags(target)
    if flags & (FS_IMMUTABLE_FL | FS_APPEND_FL):
        flag = "i" if flags & FS_IMMUTABLE_FL else "a"
        raise ConfigError(target, f"is {'immutable' if flag == 'i' else 'append-only'} (chattr +{flag}); "
                                  f"ssebench leaves it so (chattr -{flag} lets it edit the file)")
    if not st.st_mode & stat.S_IWUSR:
        raise ConfigError(target, f"is read-only (mode {stat.S_IMODE(st.st_mode):04o}); ssebench does not replace a "
                                  "read-only config (chmod u+w lets it edit the file)")
    if not os.access(target, os.W_OK):
        if os.statvfs(target).f_flag & os.ST_RDONLY:
            raise ConfigError(target, "is on a read-only file system; ssebench cannot change it there")
        raise ConfigError(target, f"is not writable for you (owner uid {st.st_uid}, mode "
                                  f"{stat.S_IMODE(st.st_mode):04o}); ssebench does not replace it")


def _temp_copy(next_to: Path, data: bytes, mode: int) -> str:
    """``data`` in a new temp file in ``next_to``'s folder (synced, with ``mode``); its path."""
    fd, tmp = tempfile.mkstemp(dir=next_to.parent, prefix=f".{next_to.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def _atomic_write(path: Path, data: bytes, mode: int) -> None:
    tmp = _temp_copy(path, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _why(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.EPERM:
        reason += " (an immutable file or folder? lsattr shows an 'i')"
    return reason


def _commit(target: Path, raw: bytes | None, new: bytes | None, mode: int) -> None:
    """Put ``new`` in place of ``target`` (None: delete it) and ``raw`` (the old bytes) in
    ``NAME.bak`` — both or neither. Both are first written to temp files beside them; the
    config is replaced first, the .bak after; if the .bak cannot be replaced the old bytes
    go back. Whatever fails, no temp file stays and the message names the config."""
    bak = target.with_name(target.name + ".bak")
    tmp_new = tmp_bak = None
    try:
        try:
            if new is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp_new = _temp_copy(target, new, mode)
            if raw is not None:
                tmp_bak = _temp_copy(bak, raw, mode)
        except OSError as exc:
            raise ConfigError(target, f"cannot be written: cannot create a file in {target.parent}: "
                                      f"{_why(exc)}") from None
        try:
            if tmp_new is not None:
                os.replace(tmp_new, target)
                tmp_new = None
            else:
                target.unlink()
        except OSError as exc:
            raise ConfigError(target, f"cannot be {'replaced' if new is not None else 'removed'}: {_why(exc)}") \
                from None
        if tmp_bak is not None:
            try:
                os.replace(tmp_bak, bak)
                tmp_bak = None
            except OSError as exc:
                kept, tmp_bak = tmp_bak, None
                try:
                    os.replace(kept, target)  # the old bytes back: no change without its backup
                except OSError:
                    raise ConfigError(target, f"was changed, but its backup {bak} cannot be written "
                                              f"({_why(exc)}); the previous content is in {kept}") from None
                raise ConfigError(target, f"its backup {bak} cannot be written: {_why(exc)}") from None
    finally:
        for tmp in (tmp_new, tmp_bak):
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)


def edit(path: Path, transform: Callable[[str | None], str | None], *, dry_run: bool = False) -> Change:
    """Read ``path``, apply ``transform`` (text → text, None meaning no file), and unless
    ``dry_run`` write the result: under a lock (ours, and the client's own where it has one),
    the previous content kept as ``NAME.bak``, the new content put in place by an atomic
    rename with the file's mode kept. Nothing is written when the text does not change; a
    read-only or immutable config is refused before anything is written."""
    target = real_path(path)
    if dry_run:
        before = read_text(target)
        return Change(path, before, transform(before))
    with lock_for(target), app_lock(path):
        raw = _read_bytes(target)
        before = None if raw is None else _decode(target, raw)
        change = Change(path, before, transform(before))
        if not change.changed:
            return change
        check_writable(target)
        mode = target.stat().st_mode & 0o7777 if raw is not None else 0o666 & ~_umask()
        bom = BOM.encode() if raw is not None and raw.startswith(BOM.encode()) else b""
        new = None if change.after is None else bom + change.after.encode("utf-8")
        _commit(target, raw, new, mode)
        return change


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
