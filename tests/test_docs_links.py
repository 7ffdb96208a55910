"""Every relative link in the README and docs/ names a file that exists (the architecture map
points a newcomer at each part's doc: a moved section must not leave a dead link)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_resolves() -> None:
    dead = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(page.read_text("utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                dead.append(f"{page.relative_to(ROOT)}: {target}")
    assert dead == []


def test_the_map_is_one_page() -> None:
    """docs/ARCHITECTURE.md is the map (issue 30): the parts' inner workings live in their docs."""
    assert len((ROOT / "docs" / "ARCHITECTURE.md").read_text("utf-8").splitlines()) <= 160
