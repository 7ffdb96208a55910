#!/usr/bin/env python3
"""Screenshots of ``ssebench view``'s pages (docs/view-*.png), in headless Chromium.

    python scripts/view_screenshots.py [--out docs]

Makes a folder of synthetic runs and a job (ssebench.view.sample, .samplejob), starts a
real ``ssebench view`` on a free port of 127.0.0.1, and saves the runs list, the job page,
a failed run's page, the page of a run whose agent failed without calling test_patch, the
comparison and the list on a narrow window. Needs Debian's chromium and chromium-driver and PyPI's selenium
(the Makefile's test-deps and the test extra install them); tests/test_view_browser.py runs
this script too, into a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# As root Chromium needs --no-sandbox; without the background-networking flags it keeps
# trying Google's hosts, which this machine's closed network refuses.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
JOB_RUNS = "/run/0/demo-job/runs/"
PAGES = (
    ("view-list.png", "/", (1280, 900)),
    ("view-job.png", "/job/0/demo-job", (1280, 1300)),
    ("view-run.png", JOB_RUNS + "toy-overflow.claude.L2.a2", (1280, 1500)),
    ("view-run-agent-error.png", JOB_RUNS + "toy-overflow.codex.L2.a1", (1280, 1000)),
    ("view-compare.png", "/compare?run=0/runs/run-0000&run=0/runs/run-0004&run=0/runs/run-0008", (1280, 1000)),
    ("view-narrow.png", "/", (420, 900)),
)


def missing() -> str | None:
    """Why a browser cannot be started here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"{path} is missing (Debian's chromium and chromium-driver; make test-deps installs them)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@contextlib.contextmanager
def browser(size: tuple[int, int] = (1280, 900), javascript: bool = True) -> Iterator[Any]:
    """A headless Chromium driven by Selenium, with a fresh profile, quit on exit
    (*javascript* False: scripts off, as for a reader who turned them off)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="ssebench-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"):
        options.add_argument(flag)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@contextlib.contextmanager
def viewer(*folders: Path) -> Iterator[str]:
    """A real ``ssebench view`` of FOLDERS on a free port; its URL (no trailing slash)."""
    from ssebench.supervise import free_port, spawn, ssebench_argv, wait_for_http

    port = free_port()
    log = Path(tempfile.mkdtemp(prefix="ssebench-view-log-")) / "view.log"
    child = spawn("ssebench view", ssebench_argv("view", *map(str, folders), "--port", str(port)), env=_env(), log=log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(url + "/", what="ssebench view", timeout=60, gone=lambda: None if child.running() else "exited")
        yield url
    finally:
        child.stop(grace=5)
        shutil.rmtree(log.parent, ignore_errors=True)


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("SSE_")}


def shoot(out: Path) -> list[Path]:
    """Every page of :data:`PAGES` as a PNG in OUT."""
    from ssebench.view.sample import write_runs
    from ssebench.view.samplejob import write_job

    out.mkdir(parents=True, exist_ok=True)
    made = []
    with tempfile.TemporaryDirectory(prefix="ssebench-view-sample-") as tmp:
        write_runs(Path(tmp), 12)
        write_job(Path(tmp))
        with viewer(Path(tmp)) as url:
            for name, path, size in PAGES:
                with browser(size) as driver:
                    driver.get(url + path)
                    driver.save_screenshot(str(out / name))
                made.append(out / name)
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs")
    args = parser.parse_args(argv)
    reason = missing()
    if reason:
        print(f"view_screenshots: {reason}", file=sys.stderr)
        return 2
    for path in shoot(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
