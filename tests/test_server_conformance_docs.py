"""docs/mcp.md lists every conformance scenario configs/conformance/exclusions.yml excuses,
with its reason word for word (the suite itself runs in tests/e2e/test_conformance.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def test_docs_list_every_excused_scenario_with_its_reason() -> None:
    doc = (REPO / "docs" / "mcp.md").read_text()
    for revision, scenarios in yaml.safe_load(
        (REPO / "configs" / "conformance" / "exclusions.yml").read_text()
    ).items():
        for scenario, excuse in scenarios.items():
            row = f"| {revision} | `{scenario}` | {' '.join(excuse['reason'].split())} |"
            assert row in doc, f"docs/mcp.md lacks the row: {row}"
