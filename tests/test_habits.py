"""Size habits (issue 19): no source file over 400 lines, no function over 60.

Measured on the files as they are in the checkout (ssebench/, server/, agents/; the
ssebench/server and ssebench/agents symlinks are not walked twice). A file or function
may only be over its limit if it is in an allow-list below, with its size when measured
and why it is not split yet; an entry that is no longer over the limit fails too, so
the lists only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("ssebench", "server", "agents")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60

# file -> (lines when measured, why it is not split yet)
LONG_FILES: dict[str, tuple[int, str]] = {}

# "file:qualified name" -> (lines when measured, why it is not split yet)
LONG_FUNCTIONS: dict[str, tuple[int, str]] = {}


def _sources() -> list[Path]:
    found: list[Path] = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if not any((ROOT / parent).is_symlink() for parent in path.relative_to(ROOT).parents):
                found.append(path)
    return found


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """Every function and method (nested ones too) with its length in lines, by qualified name."""
    out: list[tuple[str, int]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            out.append((prefix + node.name, node.end_lineno - node.lineno + 1))
            out += _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            out += _functions(node, f"{prefix}{node.name}.")
        else:
            out += _functions(node, prefix)
    return out


def test_the_walk_sees_each_file_once() -> None:
    names = [_name(p) for p in _sources()]
    assert "server/longlog.py" in names and "agents/base.py" in names and "ssebench/task.py" in names
    assert not [n for n in names if n.startswith(("ssebench/server/", "ssebench/agents/"))]


def test_no_file_over_400_lines() -> None:
    sizes = {_name(p): len(p.read_text("utf-8").splitlines()) for p in _sources()}
    over = {name: n for name, n in sizes.items() if n > MAX_FILE_LINES and name not in LONG_FILES}
    assert over == {}, f"files over {MAX_FILE_LINES} lines: split them by job"
    stale = sorted(name for name in LONG_FILES if sizes.get(name, 0) <= MAX_FILE_LINES)
    assert stale == [], "no longer over the limit: remove them from LONG_FILES"


def test_no_function_over_60_lines() -> None:
    lengths = {f"{_name(p)}:{name}": n for p in _sources() for name, n in _functions(ast.parse(p.read_text("utf-8")))}
    over = {name: n for name, n in lengths.items() if n > MAX_FUNCTION_LINES and name not in LONG_FUNCTIONS}
    assert over == {}, f"functions over {MAX_FUNCTION_LINES} lines: split them"
    stale = sorted(name for name in LONG_FUNCTIONS if lengths.get(name, 0) <= MAX_FUNCTION_LINES)
    assert stale == [], "no longer over the limit: remove them from LONG_FUNCTIONS"


def _classes() -> dict[str, list[tuple[str, list[str]]]]:
    """Every class by name: where it is defined and the names of its bases."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
                found.setdefault(node.name, []).append((_name(path), bases))
    return found


def test_no_two_classes_share_a_name() -> None:
    """A name means one thing (issue 30: four Outcome, three Run, three Entry classes hid that
    the stages read different things); private helper classes included."""
    shared = {name: [where for where, _ in places] for name, places in _classes().items() if len(places) > 1}
    assert shared == {}


def test_no_inheritance_towers() -> None:
    """Parts are composed: a class has at most one project class above it (issue 30: the
    daemon was Runner(BuildEngine(CheckProcesses(Housekeeping))), three deep)."""
    classes = {name: places[0][1] for name, places in _classes().items()}

    def depth(name: str) -> int:
        return 1 + max((depth(base) for base in classes.get(name, []) if base in classes and base != name), default=0)

    towers = sorted(name for name in classes if depth(name) > 2)
    assert towers == []
