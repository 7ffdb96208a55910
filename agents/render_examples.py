"""Regenerate (or, with --check, verify) the checked-in examples: configs/examples/, the
clients table in docs/adding-an-agent.md and the agents table in README.md.

    python -m ssebench.agents.render_examples          # rewrite them from the code
    python -m ssebench.agents.render_examples --check  # exit 1 and name what drifted
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ssebench.agents import actions, render
from ssebench.agents.base import ServerSettings
from ssebench.agents.registry import AGENTS, CLIENTS

TABLE_START = "<!-- clients-table:start (python -m ssebench.agents.render_examples) -->\n"
TABLE_END = "<!-- clients-table:end -->\n"
AGENTS_START = "<!-- agents-table:start (python -m ssebench.agents.render_examples) -->\n"
AGENTS_END = "<!-- agents-table:end -->\n"
SUFFIX = {
    "json": "json",
    "toml": "toml",
    "yaml": "yaml",
    "yaml-list": "yaml",
    "toml-list": "toml",
    "toml-array": "toml",
}


def expected(root: Path) -> dict[Path, str]:
    """Every generated file and its content, computed from the code."""
    settings = ServerSettings()
    out: dict[Path, str] = {}
    examples = root / "configs" / "examples"
    for client in CLIENTS.values():
        out[examples / f"{client.name}.{SUFFIX[client.format]}"] = actions.snippet(client, settings)
        out[examples / f"{client.name}.show.txt"] = render.show(client, settings)
    doc = root / "docs" / "adding-an-agent.md"
    out[doc] = _spliced(doc, TABLE_START, TABLE_END, render.clients_table(list(CLIENTS.values()), settings))
    readme = root / "README.md"
    text = _spliced(readme, AGENTS_START, AGENTS_END, render.agents_table(list(AGENTS.values())))
    clients = render.clients_table(list(CLIENTS.values()), settings, readme=True)
    out[readme] = _splice_text(text, TABLE_START, TABLE_END, clients)
    return out


def _spliced(path: Path, start: str, end: str, body: str) -> str:
    """The text of *path* with *body* between its *start* and *end* marker lines."""
    return _splice_text(path.read_text(encoding="utf-8"), start, end, body)


def _splice_text(text: str, start: str, end: str, body: str) -> str:
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    return head + start + body + end + tail


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
