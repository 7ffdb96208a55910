"""``ssebench view``'s jobs in a real browser (Debian's Chromium through Selenium): a job page's
cell leads to its runs; a real job running (``ssebench jobs run``, custom-command agents on
the demo task) shows each finished run on the open pages within 5 s, without a reload;
the exported site opens from file:// and every link of every page leads to a page or file.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from ssebench.supervise import ssebench_argv
from ssebench.view.sample import write_runs
from ssebench.view.samplejob import write_job
from tests.helpers.view import need_browser, screenshots_script

pytestmark = pytest.mark.e2e
SHOTS = screenshots_script()
REPO = Path(__file__).resolve().parent.parent
#: the issue's bar: a run that ended is on the open page this soon
SHOWN_WITHIN = 5.0
VERSION = "return document.getElementById('main').dataset.version"


def wait(predicate: Any, timeout: float = 20.0, what: str = "the browser") -> Any:
    """*predicate*'s first true answer; a read of an element the live page replaced
    meanwhile (selenium's stale element: CI saw it on the totals and on a badge) is
    read again, as a person looking again would."""
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            answer = predicate()
        except StaleElementReferenceException:
            answer = None
        if answer:
            return answer
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    need_browser()
    with SHOTS.browser((1280, 1000)) as driver:
        yield driver


def test_a_job_page_cell_leads_to_the_runs_it_counts(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    write_job(tmp_path)
    with SHOTS.viewer(tmp_path) as url:
        browser.get(url + "/jobs")
        browser.find_element(By.LINK_TEXT, "demo-job-5f2c9a01").click()
        wait(lambda: "/job/0/demo-job" in browser.current_url)
        rows = browser.find_elements(By.CSS_SELECTOR, "#matrix-table tbody tr")
        assert [r.find_element(By.TAG_NAME, "th").text for r in rows] == ["toy-overflow", "toy-leak"]
        cell = rows[0].find_elements(By.CSS_SELECTOR, "td.cell")[1]  # toy-overflow × claude × level 2
        assert cell.text.splitlines() == ["50%", "1/2"] and "heat-5" in cell.get_attribute("class")
        cell.find_element(By.CSS_SELECTOR, "a.rate").click()
        wait(lambda: "/job-runs/" in browser.current_url)
        assert browser.find_element(By.TAG_NAME, "h1").text.startswith("2 runs behind: task toy-overflow")
        badges = [b.text for b in browser.find_elements(By.CSS_SELECTOR, "#runs tbody .badge")]
        assert badges == ["passed", "failed"]


def job_file(folder: Path) -> Path:
    """A real job: the demo task, an agent that applies the fix and one that calls test_patch."""
    caller = [sys.executable, str(REPO / "tests" / "fixtures" / "agents" / "call_test_patch.py")]
    text = (
        f"tasks = [{str(REPO / 'examples' / 'tasks' / 'demo-overflow')!r}]\nlevels = [2]\nattempts = 2\n"
        'concurrency = 2\n\n[[agents]]\nname = "fixer"\n'
        f"command = [{str(REPO / 'examples' / 'jobs' / 'apply-fix.sh')!r}]\n\n"
        f'[[agents]]\nname = "caller"\ncommand = {caller!r}\n'
    ).replace("'", '"')
    path = folder / "job.toml"
    path.write_text(text)
    return path


def ended_runs(job: Path) -> dict[str, float]:
    """run id -> when its record was written (its mtime), for every run that has one."""
    return {p.parent.name: p.stat().st_mtime for p in (job / "runs").glob("*/results.json")}


@pytest.mark.slow
def test_a_finished_run_appears_on_the_open_pages_within_5_s(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    need_browser()
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    argv = ssebench_argv("jobs", "run", str(job_file(tmp_path)), "--results", str(jobs / "live"))
    with SHOTS.viewer(jobs) as url, SHOTS.browser((1280, 1000)) as second:
        runner = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait(lambda: (jobs / "live" / "job.json").exists(), 60, "the job folder")
            browser.get(url + "/")
            wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr[data-run]")) == 4, 10, "4 rows")
            second.get(url + "/job/0/live")
            for driver in (browser, second):
                driver.execute_script("window.sameDocument = 'yes'")
            seen: dict[str, float] = {}
            while len(seen) < 4:
                assert runner.poll() is None or len(ended_runs(jobs / "live")) == 4, runner.stdout
                for rid, written in ended_runs(jobs / "live").items():
                    if rid in seen:
                        continue
                    row = f'#runs tbody tr[data-run="0/live/runs/{rid}"] .badge'
                    shown = wait(lambda row=row: _ended_badge(browser, row), 30, f"run {rid} on the page")
                    seen[rid] = time.time() - written
                    assert seen[rid] <= SHOWN_WITHIN, (rid, seen[rid], shown)
                time.sleep(0.1)
            assert runner.wait(timeout=120) == 0, runner.stdout
            print("shown after (s):", {rid: round(after, 2) for rid, after in sorted(seen.items())})
        finally:
            if runner.poll() is None:
                runner.terminate()
                runner.wait(timeout=30)
        total = "#matrix-table tfoot td:last-child"
        shown = lambda: second.find_element(By.CSS_SELECTOR, total).text.splitlines()  # noqa: E731
        try:
            wait(lambda: shown() == ["50%", "2/4"], 10, "the job page's totals")
        except AssertionError:
            raise AssertionError(f"the job page shows {shown()} (version {second.execute_script(VERSION)})") from None
        for driver in (browser, second):
            assert driver.execute_script("return window.sameDocument") == "yes"  # no reload
    badges = lambda: sorted(badge.text for badge in browser.find_elements(By.CSS_SELECTOR, "#runs tbody .badge"))  # noqa: E731
    wait(lambda: badges() == ["failed", "failed", "passed", "passed"], 10, "the four badges")


def _ended_badge(driver: Any, css: str) -> str | None:
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.CSS_SELECTOR, css)
    text = found[0].text if found else None
    return text if text in ("passed", "failed") else None


def test_the_exported_site_opens_from_file_and_every_link_leads_somewhere(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    write_job(tmp_path / "results")
    write_runs(tmp_path / "results" / "loose", 2)
    site = tmp_path / "site"
    done = subprocess.run(ssebench_argv("view", "--export", str(site), str(tmp_path / "results")), timeout=300)
    assert done.returncode == 0
    todo, seen = [(site / "index.html").as_uri()], set()
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        browser.get(page)
        assert browser.find_elements(By.ID, "main"), page  # a page of the site, not the browser's error
        assert browser.execute_script("return getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
        for link in browser.find_elements(By.CSS_SELECTOR, "a[href]"):
            href = link.get_attribute("href").split("#", 1)[0]
            assert href.startswith("file://"), (page, href)
            path = Path(unquote(href[len("file://") :]))
            assert path.is_file(), (page, href)
            if path.suffix == ".html":
                todo.append(href)
    assert len(seen) > 100
