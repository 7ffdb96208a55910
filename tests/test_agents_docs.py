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


def test_every_client_has_its_mcp_modes_row() -> None:
    """docs/mcp.md says, per client, what of sync / progress / resume / tasks it uses and which
    timeout matters (issue 35); the bundled CLIs' rows are measured by
    tests/e2e/test_cli_mcp_modes.py, which reads the same table."""
    text = (DOC.parent / "mcp.md").read_text(encoding="utf-8")
    start, end = "<!-- client-modes:start -->", "<!-- client-modes:end -->"
    body = text[text.index(start) + len(start) : text.index(end)]
    rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in body.splitlines() if line.startswith("| ")]
    assert rows[0] == ["AGENT", "revision", "progress", "resume", "tasks", "timeout that matters", "source"]
    named = [name for row in rows[1:] for name in re.findall(r"`([a-z0-9-]+)`", row[0])]
    assert sorted(named) == sorted(CLIENTS)  # each once
    for row in rows[1:]:
        assert len(row) == 7 and row[5] and row[6], row
        if row[0].count("`") == 2 and row[0].strip("`") in names():  # a bundled CLI: measured
            assert row[6].startswith("measured (`tests/e2e/test_cli_mcp_modes.py`"), row
            assert row[2] in ("yes", "no") and row[3] in ("yes", "no", "—", "sometimes") and row[4] in ("yes", "no"), (
                row
            )
