"""``ssebench dataset import FORMAT SRC DEST``: one module per public benchmark format."""

from __future__ import annotations

from pathlib import Path


def run_import(fmt: str, src: Path, dest: Path, ids: list[str] | None) -> int:
    from ssebench.dataset.adapters import arvo

    return arvo.run(src, dest, ids)
