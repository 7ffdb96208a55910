"""The settings table (ssebench/settings.py) is the one place SSE_* variables are read
from os.environ, and docs/container.md names every variable in it."""

from __future__ import annotations

import re
from pathlib import Path

from ssebench import settings

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("ssebench", "server", "agents")
# A direct read: os.environ.get(X), os.environ[X], os.getenv(X), "X" in os.environ.
_READ = re.compile(
    r"os\.environ\.get\(\s*([^,)]+)|os\.environ\[\s*([^\]]+)\]|os\.getenv\(\s*([^,)]+)"
    r"|([\"'][A-Z_]+[\"']|[A-Z_]+)\s+(?:not\s+)?in\s+os\.environ"
)
# Every named variable, ours (SSE_*, SSEBENCH_*) or the system's (PATH, XDG_CACHE_HOME...), is
# read through the table: none is exempt.
_NOT_OURS: set[str] = set()
# Explicit exceptions (file, argument): none today. Add one only with a comment saying why.
ALLOWED: set[tuple[str, str]] = set()


def _direct_reads() -> list[str]:
    found = []
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "ssebench/settings.py":
                continue
            for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for match in _READ.finditer(line):
                    arg = next(g for g in match.groups() if g).strip()
                    if arg in _NOT_OURS or (rel, arg) in ALLOWED:
                        continue
                    found.append(f"{rel}:{lineno}: {line.strip()}")
    return found


def test_no_module_reads_an_sse_variable_from_os_environ_directly() -> None:
    assert _direct_reads() == []


def test_every_variable_in_the_table_is_in_the_container_doc() -> None:
    doc = (ROOT / "docs" / "container.md").read_text(encoding="utf-8")
    missing = [v.name for v in settings.VARIABLES if not re.search(rf"\b{v.name}\b", doc)]
    assert missing == []


def test_every_variable_named_in_the_sources_is_in_the_table() -> None:
    names: set[str] = set()
    for top in SOURCES:
        for path in (ROOT / top).rglob("*.py"):
            names |= set(
                re.findall(
                    r"[\"'](SSE_[A-Z0-9_]+|SSEBENCH_[A-Z0-9_]+|MCP_LOG_DIR)[\"']", path.read_text(encoding="utf-8")
                )
            )
    assert sorted(names - set(settings.BY_NAME)) == []


def test_the_shared_mcp_defaults() -> None:
    assert settings.DEFAULT_MCP_URL == "http://127.0.0.1:3000/mcp"
    assert settings.BY_NAME["SSE_MCP_PORT"].default == "3000"


def test_the_docs_other_variables_table_is_the_one_generated_from_the_module() -> None:
    doc = (ROOT / "docs" / "container.md").read_text(encoding="utf-8").splitlines()
    missing = [row for row in settings.doc_rows() if row not in doc]
    assert missing == []


def test_raw_refuses_a_name_outside_the_table() -> None:
    import pytest

    with pytest.raises(KeyError, match="SSE_NOPE is not in ssebench.settings.VARIABLES"):
        settings.raw("SSE_NOPE", {})
    assert settings.raw("SSE_BWRAP", {"SSE_BWRAP": "/x"}) == "/x"
