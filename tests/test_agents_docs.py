"""docs/adding-an-agent.md names, for every client `agents install` knows, the timeout field it
honours and the source that was checked (issue 32): a client added without a row fails here."""

from __future__ import annotations

import re
from pathlib import Path

from ssebench.agents.registry import CLIENTS, names

DOC = Path(__file__).resolve().parent.parent / "docs" / "adding-an-agent.md"


def _table(start: str, end: str) -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    body = text[text.index(start) + len(start) : text.index(end)]
    rows = [line for line in body.splitlines() if line.startswith("| ")][1:]  # past the header
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_every_client_has_its_timeout_source() -> None:
    rows = _table("<!-- timeout-sources:start -->", "<!-- timeout-sources:end -->")
    named = [name for row in rows for name in re.findall(r"`([a-z0-9-]+)`", row[0])]
    assert sorted(named) == sorted(CLIENTS)  # each once
    assert all(len(row) == 4 and row[1] and row[3] for row in rows)  # a field (or "none") and a source


def test_every_bundled_agent_has_a_pin_row() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("### The pinned versions (one table)") : text.index("### Left out, and why (issue 32)")]
    rows = [line.split(" | ")[0].strip("| ") for line in table.splitlines() if line.startswith("| ")][1:]
    assert [row for row in rows if row in names()] == list(names())
