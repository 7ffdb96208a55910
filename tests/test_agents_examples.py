"""The checked-in examples (configs/examples/, the clients table in docs/adding-an-agent.md)
are what the code produces; regenerate with `python -m ssebench.agents.render_examples`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ssebench.agents import render_examples
from ssebench.agents.registry import CLIENTS

REPO = Path(__file__).resolve().parent.parent


def test_examples_match_the_code() -> None:
    expected = render_examples.expected(REPO)
    stale = [
        str(path.relative_to(REPO))
        for path, content in expected.items()
        if not path.exists() or path.read_text(encoding="utf-8") != content
    ]
    assert stale == [], "run: python -m ssebench.agents.render_examples"


def test_every_client_has_both_examples() -> None:
    names = {p.name for p in (REPO / "configs" / "examples").iterdir() if p.is_file()}
    for client in CLIENTS.values():
        assert f"{client.name}.show.txt" in names
        assert f"{client.name}.{render_examples.SUFFIX[client.format]}" in names


def test_check_mode_reports_drift(tmp_path: Path) -> None:
    # A copy of the checkout's generated files with one example edited: --check names it, exit 1.
    import shutil

    (tmp_path / "docs").mkdir()
    shutil.copytree(REPO / "configs", tmp_path / "configs", ignore=shutil.ignore_patterns("docker"))
    shutil.copy(REPO / "docs" / "adding-an-agent.md", tmp_path / "docs")
    shutil.copy(REPO / "README.md", tmp_path)
    example = tmp_path / "configs" / "examples" / "codex.toml"
    example.write_text(example.read_text().replace("3600", "60"))
    code = (
        "import sys; from pathlib import Path; from ssebench.agents import render, render_examples;"
        f"render.configs_dir = lambda: Path({str(tmp_path / 'configs')!r});"
        "sys.exit(render_examples.main(['--check']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (1, "out of date: configs/examples/codex.toml\n")
