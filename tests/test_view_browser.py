"""``ssebench view`` in a real browser: Debian's Chromium driven by Selenium, against the
real server on 127.0.0.1. Skipped (failed in CI) with the reason when no browser is here;
``make test-deps`` installs chromium and chromium-driver, the test extra selenium."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssebench.view.sample import PASSED_TEXT, dialog_lines, write_run, write_runs, write_task
from tests.helpers.view import HOSTILE_SCRIPT, need_browser, screenshots_script, write_hostile_dialog

pytestmark = pytest.mark.e2e
SHOTS = screenshots_script()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    need_browser()
    root = tmp_path_factory.mktemp("browser")
    write_runs(root, 12)
    task = write_task(root / "odd" / "task")
    write_hostile_dialog(write_run(root / "odd" / "hostile", task) / "dialog.jsonl")
    live = root / "odd" / "live"
    live.mkdir(parents=True)
    with SHOTS.viewer(root) as url:
        yield url, root


@pytest.fixture(scope="module")
def driver(site: tuple[str, Path]) -> Iterator[Any]:
    with SHOTS.browser() as browser:
        yield browser


def texts(driver: Any, css: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]


def wait(predicate: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = predicate()
        if answer:
            return answer
        time.sleep(0.2)
    raise AssertionError("timed out waiting in the browser")


def test_the_list_filters_and_sorts_in_the_browser(site: tuple[str, Path], driver: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url, _ = site
    driver.get(url + "/")
    assert driver.find_element(By.TAG_NAME, "h1").text == "Runs (13 shown of 13)"
    Select(driver.find_element(By.ID, "filter-agent")).select_by_visible_text("gemini")
    driver.find_element(By.CSS_SELECTOR, ".filters button").click()
    wait(lambda: "agent=gemini" in driver.current_url)
    assert texts(driver, "#runs tbody td:nth-child(4)") == ["gemini", "gemini", "gemini"]
    driver.find_element(By.CSS_SELECTOR, 'a[data-sort="duration"]').click()
    driver.find_element(By.CSS_SELECTOR, 'a[data-sort="duration"]').click()  # again: descending
    wait(lambda: "order=desc" in driver.current_url)
    assert texts(driver, "#runs tbody td:nth-child(8)") == ["20.0 s", "16.0 s", "12.0 s"]
    assert driver.find_element(By.CSS_SELECTOR, 'a[data-sort="duration"]').text == "Duration ▼"
    assert texts(driver, "#tally a") == ["passed 2", "failed 1"]
    driver.find_element(By.CSS_SELECTOR, "#tally a").click()  # a count leads to its runs
    wait(lambda: "outcome=passed" in driver.current_url)
    assert texts(driver, "#runs tbody .badge") == ["passed", "passed"]


def test_a_run_page_shows_every_event_kind(site: tuple[str, Path], driver: Any) -> None:
    url, _ = site
    driver.get(url + "/run/0/runs/run-0001")
    kinds = texts(driver, "#timeline .event .kind")
    assert kinds[:4] == ["init", "prompt", "thinking", "tool · Edit · running"]
    assert "tool · ssebench.test_patch · success" in kinds and kinds[-2:] == ["message", "complete"]
    assert texts(driver, "pre.test-patch")[-1] == PASSED_TEXT.rstrip("\n")
    assert texts(driver, "#outcome") == ["passed"]


def test_a_hostile_dialog_runs_no_script(site: tuple[str, Path], driver: Any) -> None:
    from selenium.webdriver.common.by import By

    url, _ = site
    driver.get(url + "/run/0/odd/hostile")
    assert driver.execute_script("return typeof window.pwned") == "undefined"
    prompt = driver.find_element(By.CSS_SELECTOR, ".event.prompt pre").text
    assert prompt == "</pre>" + HOSTILE_SCRIPT
    assert driver.find_elements(By.CSS_SELECTOR, "main img") == []
    assert "caf\ufffd\ufffd <b>bold</b>" in texts(driver, ".event.message pre")


def test_the_dialog_updates_live_while_the_run_writes_it(site: tuple[str, Path], driver: Any) -> None:
    from selenium.webdriver.common.by import By

    url, root = site
    path = root / "odd" / "live" / "dialog.jsonl"
    events = dialog_lines("claude", "claude-sonnet-4-5", passed=True)
    stop = threading.Event()

    path.touch()  # the run has started: its folder has a dialog, no results yet

    def writer() -> None:
        with path.open("a", encoding="utf-8") as stream:
            for event in events:
                if stop.wait(0.4):
                    return
                stream.write(json.dumps(event) + "\n")
                stream.flush()

    driver.get(url + "/run/0/odd/live")
    driver.execute_script("window.sameDocument = 'yes'")
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#timeline .event")) == len(events))
    finally:
        stop.set()
        thread.join()
    assert driver.execute_script("return window.sameDocument") == "yes"  # no reload
    assert texts(driver, "#timeline .event .kind")[-1] == "complete"
    wait(lambda: "has ended" in driver.find_element(By.ID, "live-status").text)


def test_the_comparison_page(site: tuple[str, Path], driver: Any) -> None:
    from selenium.webdriver.common.by import By

    url, _ = site
    driver.get(url + "/")
    for rid in ("0/runs/run-0000", "0/runs/run-0004"):
        driver.find_element(By.CSS_SELECTOR, f'input[value="{rid}"]').click()
    driver.find_element(By.CSS_SELECTOR, "#runs thead button").click()
    wait(lambda: "/compare" in driver.current_url)
    columns = driver.find_elements(By.CSS_SELECTOR, "#compare .column")
    assert [c.find_element(By.CSS_SELECTOR, ".badge").text for c in columns] == ["failed", "passed"]
    assert driver.find_element(By.TAG_NAME, "h1").text == "Comparison toy-overflow"


def test_the_screenshot_script_writes_every_page(tmp_path: Path) -> None:
    need_browser()
    made = SHOTS.shoot(tmp_path)
    assert [p.name for p in made] == [name for name, _, _ in SHOTS.PAGES]
    for path in made:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_dark_and_light_follow_the_system_setting(site: tuple[str, Path], driver: Any) -> None:
    url, _ = site
    driver.get(url + "/")
    background = "return getComputedStyle(document.body).backgroundColor"
    colors = {}
    for scheme in ("light", "dark"):
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
        )
        colors[scheme] = driver.execute_script(background)
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert colors == {"light": "rgb(255, 255, 255)", "dark": "rgb(21, 24, 28)"}


def test_a_narrow_window_needs_no_sideways_scrolling(site: tuple[str, Path]) -> None:
    url, _ = site
    with SHOTS.browser((420, 900)) as narrow:
        for path in ("/", "/run/0/runs/run-0001", "/compare?run=0/runs/run-0000&run=0/runs/run-0004"):
            narrow.get(url + path)
            width = narrow.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
            )
            assert width[0] <= width[1], (path, width)


def test_everything_but_the_live_update_works_with_javascript_off(site: tuple[str, Path]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url, _ = site
    with SHOTS.browser(javascript=False) as plain:
        plain.get(url + "/")
        Select(plain.find_element(By.ID, "filter-level")).select_by_visible_text("4")
        plain.find_element(By.CSS_SELECTOR, ".filters button").click()
        wait(lambda: "level=4" in plain.current_url)
        plain.find_element(By.CSS_SELECTOR, 'a[data-sort="agent"]').click()
        wait(lambda: "sort=agent" in plain.current_url)
        assert texts(plain, "#runs tbody td:nth-child(4)") == ["claude", "codex"]
        for box in plain.find_elements(By.CSS_SELECTOR, 'input[name="run"]'):
            box.click()
        plain.find_element(By.CSS_SELECTOR, "#runs thead button").click()
        wait(lambda: "/compare" in plain.current_url)
        assert len(plain.find_elements(By.CSS_SELECTOR, "#compare .column")) == 2
        plain.get(url + "/run/0/runs/run-0001")
        assert texts(plain, "#timeline .event .kind")[-1] == "complete"
        assert plain.find_element(By.ID, "live-status").is_displayed() is False
