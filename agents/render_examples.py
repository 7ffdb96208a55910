"""Regenerate (or, with --check, verify) the checked-in examples: configs/examples/ and the
clients table in docs/adding-an-agent.md.

    python -m ssebench.agents.render_examples          # rewrite them from the code
    python -m ssebench.agents.render_examples --check  # exit 1 and name what drifted
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ssebench.agents import actions, render
from ssebench.agents.base import Settings
from ssebench.agents.registry import CLIENTS

TABLE_START = "<!-- clients-table:start (python -m ssebench.agents.render_examples) -->\n"
TABLE_END = "<!-- clients-table:end -->\n"
SUFFIX = {"json": "json", "toml": "toml", "yaml": "yaml"}


def expected(root: Path) -> dict[Path, str]:
    """Every generated file and its content, computed from the code."""
    settings = Settings()
    out: dict[Path, str] = {}
    examples = root / "configs" / "examples"
    for client in CLIENTS.values():
        out[examples / f"{client.name}.{SUFFIX[client.format]}"] = actions.snippet(client, settings)
        out[examples / f"{client.name}.show.txt"] = render.show(client, settings)
    doc = root / "docs" / "adding-an-agent.md"
    text = doc.read_text(encoding="utf-8")
    head, _, rest = text.partition(TABLE_START)
    _, _, tail = rest.partition(TABLE_END)
    table = render.clients_table(list(CLIENTS.values()), settings)
    out[doc] = head + TABLE_START + table + TABLE_END + tail
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ssebench.agents.render_examples")
    parser.add_argument("--check", action="store_true", help="report drift instead of rewriting")
    args = parser.parse_args(argv)
    root = render.configs_dir().parent
    drifted = []
    for path, content in expected(root).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == content:
            continue
        drifted.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
    for path in drifted:
        print(f"{'out of date' if args.check else 'rewrote'}: {path.relative_to(root)}")
    return 1 if args.check and drifted else 0


if __name__ == "__main__":
    sys.exit(main())
