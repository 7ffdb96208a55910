"""``ssebench view --export DIR``: the pages as a static site. Every link of every page
resolves to a file of the site; nothing the run folder keeps private (the agent's HOME, its
keys, install.log, the tree) is in it; a folder that is not empty is refused whole.
(tests/test_view_browser.py opens the site from file:// in Chromium and follows the links.)"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

from ssebench.supervise import ssebench_argv
from ssebench.view.sample import write_run, write_runs, write_task
from ssebench.view.samplejob import write_job
from tests.helpers.view import HOSTILE_SCRIPT, write_hostile_dialog

SECRETS = ("sk-ant-SECRET-in-home", "TOKEN-in-install-log", "http://user:pass@gateway-in-job-json")


def results(root: Path) -> Path:
    """A job whose job.json holds an environment, loose runs, and a run whose HOME,
    install.log and tree hold secrets."""
    job = write_job(root)
    stored = json.loads((job / "job.json").read_text())
    stored["spec"] = {"agents": [{"name": "claude", "env": {"ANTHROPIC_BASE_URL": SECRETS[2]}}]}
    (job / "job.json").write_text(json.dumps(stored))
    write_runs(root / "loose", 3)
    run = root / "loose" / "runs" / "run-0001"
    (run / "home" / ".claude").mkdir(parents=True)
    (run / "home" / ".claude" / ".credentials.json").write_text(SECRETS[0])
    (run / "install.log").write_text(f"wrote ~/.claude.json: Authorization: Bearer {SECRETS[1]}\n")
    (run / "tree" / "notes.txt").write_text("the agent's own file: its change shows it, the tree is not copied\n")
    (run / "page.html").write_text("<script>window.pwned = 1</script>")
    return root


def export(out: Path, *folders: Path) -> subprocess.CompletedProcess[str]:
    argv = ssebench_argv("view", "--export", str(out), *map(str, folders))
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = results(tmp_path_factory.mktemp("results"))
    write_hostile_dialog(write_run(root / "odd" / "hostile", write_task(root / "odd" / "task")) / "dialog.jsonl")
    out = tmp_path_factory.mktemp("site") / "site"
    done = export(out, root)
    assert done.returncode == 0, done.stderr
    pages = len(list(out.rglob("*.html")))
    copied = len([p for p in out.rglob("*.txt")])
    assert done.stdout == f"ssebench view: wrote {pages} pages and {copied} files to {out}; open {out / 'index.html'}\n"
    return out


def test_every_link_of_every_page_resolves_to_a_file_of_the_site(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 100
    for page in pages:
        text = page.read_text()
        assert "<script" not in text and "<form" not in text and 'href="/' not in text, page
        for link in re.findall(r'(?<![\w-])(?:href|src)="([^"#]*)', text):
            if not link:
                continue
            assert not re.match(r"[a-z]+:", link), (page, link)  # relative: the folder can move
            target = (page.parent / unquote(html.unescape(link))).resolve()
            assert target.is_file() and site.resolve() in target.parents, (page, link)


def test_the_pages_are_the_served_ones(site: Path) -> None:
    job = (site / "job" / "0" / "demo-job.html").read_text()
    assert "<h1>Job demo-job-5f2c9a01 <small>" in job and 'class="cell heat-10"' in job
    cell = re.search(r'<a class="rate" href="(\.\./\.\./job-runs/0/demo-job~[^"]+\.html)">100%</a>', job)
    assert cell is not None
    behind = (site / "job" / "0" / unquote(cell.group(1))).resolve().read_text()
    assert "2 runs <small>behind:" in behind
    run = (site / "run" / "0" / "loose" / "runs" / "run-0001.html").read_text()
    assert '<a href="../../../../files/0/loose/runs/run-0001/calls/2.txt.txt">calls/2.txt</a>' in run
    served = (site / "files" / "0" / "loose" / "runs" / "run-0001" / "calls" / "2.txt.txt").read_text()
    assert served.startswith("test_patch result: every check that ran passed.")


def test_nothing_private_is_exported(site: Path) -> None:
    for path in site.rglob("*"):
        parts = path.relative_to(site).parts
        assert not {"home", "tree", "tries"} & set(parts) and not any(p.startswith(".") for p in parts), path
        assert path.name not in ("install.log.txt", "page.html.txt", "job.json.txt", "journal.jsonl.txt"), path
        if path.is_file():
            data = path.read_bytes()
            assert not any(s.encode() in data for s in SECRETS), path
            assert HOSTILE_SCRIPT.encode() not in data or path.suffix == ".txt", path
    listing = (site / "files" / "0" / "loose" / "runs" / "run-0001.html").read_text()
    assert "install.log" not in listing and "home/" not in listing and ">tree/<" not in listing
    assert ">results.json</a>" in listing and ">calls/</a>" in listing
    assert oct(site.stat().st_mode & 0o777) == "0o755"


def test_a_folder_that_is_not_empty_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    write_runs(root, 1)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    done = export(out, root)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"ssebench view: --export {out}: {out}: not an empty folder (the export makes a new one)\n"
    assert os.listdir(out) == ["keep.txt"] and sorted(os.listdir(tmp_path)) == ["out", "runs"]  # no staging left
