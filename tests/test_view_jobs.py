"""``ssebench view``'s jobs over HTTP (a real server on 127.0.0.1): the job list, the job page
(``ssebench jobs report``'s model rendered: every figure links to exactly the runs it
counts), the runs without a record, the live version, two jobs compared."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import httpx
import markupsafe
import pytest

from ssebench.jobs.report import load, summarize
from ssebench.view import jobpage
from ssebench.view.sample import write_run, write_runs
from ssebench.view.samplejob import write_job
from tests.helpers.view import screenshots_script

JOB_ID = "demo-job-5f2c9a01"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One folder holding a job (16 runs of every outcome), a second job and loose runs."""
    root = tmp_path_factory.mktemp("jobs")
    write_job(root)
    write_job(root, "other-job")
    write_runs(root / "loose", 2)
    with screenshots_script().viewer(root) as url:
        yield url, root


def get(url: str, path: str) -> httpx.Response:
    return httpx.get(url + path, timeout=30)


def rows(page: str) -> list[str]:
    return re.findall(r'<tr class="[^"]*" data-run="([^"]+)"', page)


def links(page: str, prefix: str) -> list[tuple[str, str]]:
    """(href, text) of every link to PREFIX..., unescaped."""
    found = re.findall(r'<a (?:class="[^"]*" )?href="(' + re.escape(prefix) + r'[^"]*)">([^<]*)</a>', page)
    return [(markupsafe.Markup(h).unescape(), markupsafe.Markup(t).unescape()) for h, t in found]


def test_the_list_has_a_job_column_and_filter(site: tuple[str, Path]) -> None:
    url, _ = site
    page = get(url, "/").text
    assert len(rows(page)) == 16 + 16 + 2
    mine = rows(get(url, f"/?job={JOB_ID}").text)
    assert mine == sorted(mine) and len(mine) == 16 and all(r.startswith("0/demo-job/runs/") for r in mine)
    row = page.split('data-run="0/demo-job/runs/toy-leak.claude.L2.a2"', 1)[1].split("</tr>", 1)[0]
    assert f'<td><a href="/job/0/demo-job">{JOB_ID}</a></td>' in row
    assert '<span class="badge infrastructure">infrastructure</span>' in row
    assert '<li><a href="/job/0/demo-job">demo-job-5f2c9a01</a> <small>16 runs' in page  # the jobs box
    loose = page.split('data-run="0/loose/runs/run-0000"', 1)[1].split("</tr>", 1)[0]
    assert loose.split("</td>", 2)[1] == "\n  <td>"  # no job


def test_the_job_page_renders_the_report(site: tuple[str, Path]) -> None:
    url, root = site
    report = summarize(load(root / "demo-job"))
    page = get(url, "/job/0/demo-job").text
    assert f"<h1>Job {JOB_ID} <small>" in page
    table = page.split('id="matrix-table">', 1)[1].split("</table>", 1)[0]
    heads = re.findall(r"<th>(\w+)(?: <small>[^<]*</small>)?<br><small>level (\d)</small></th>", table)
    assert heads == [("claude", "0"), ("claude", "2"), ("codex", "0"), ("codex", "2")]
    for group in report.groups:  # each cell: the group's rate, passed/graded, coloured by the rate
        rate, passed = jobpage.percent(group.pass_rate), f">{group.passed}</a>/{group.graded}"
        cell = f'<td class="cell {jobpage.heat(group.pass_rate)}"><a class="rate" href="'
        href = jobpage.runs_url("/job-runs/0/demo-job", group)
        assert f'{cell}{markupsafe.escape(href)}">{rate}</a><br><small><a href=' in table, group
        assert passed in table
    passk = page.split('id="passk-table">', 1)[1].split("</table>", 1)[0]
    claude0 = passk.split("<td>claude <small>claude-sonnet-4-5</small></td><td>0</td>", 1)[1].split("</tr>", 1)[0]
    assert [t for _, t in links(claude0, "/job-runs/")] == ["4", "75%", "75%", "100%", "0"]
    failures = page.split('id="failures-table">', 1)[1].split("</table>", 1)[0]
    assert [t for _, t in links(failures, "/job-runs/")] == [str(b.count) for b in report.totals.failures]
    assert "the daemon did not come up: the sandbox cannot start" in failures


def test_every_figure_links_to_exactly_the_runs_it_counts(site: tuple[str, Path]) -> None:
    """Every link to the runs behind a number, on the job page and the job list, lists exactly
    the run ids the report gives for that number; a count's text is that many runs."""
    url, root = site
    report = summarize(load(root / "demo-job"))
    page = get(url, "/job/0/demo-job").text + get(url, "/jobs").text
    found = [(h, t) for h, t in links(page, "/job-runs/0/demo-job")]
    assert len(found) > 60
    for href, text in dict(found).items():
        query = dict(parse_qsl(urlsplit(href).query))
        picked = jobpage.pick(report, query)
        assert picked is not None, href
        listed = rows(get(url, href).text)
        assert listed == [f"0/demo-job/runs/{rid}" for rid in picked[1]], href
        if text.isdigit():
            assert int(text) == len(listed), (href, text)


def test_runs_without_a_record_and_every_outcome_have_a_page(site: tuple[str, Path]) -> None:
    url, _ = site
    base = "/run/0/demo-job/runs/"
    running = get(url, base + "toy-leak.codex.L2.a1").text
    pending = get(url, base + "toy-leak.codex.L2.a2").text
    assert '<span class="badge running" id="outcome">running</span>' in running and 'data-follow="1"' in running
    assert '<span class="badge pending" id="outcome">pending</span>' in pending and "(not made yet)" in pending
    infra = get(url, base + "toy-leak.claude.L2.a2").text
    assert '<dd id="reason">the daemon did not come up: the sandbox cannot start: bwrap: setting up uid map' in infra
    assert "Last lines of its log:" in infra and "grading did not run or reached no verdict" in infra
    quiet = get(url, base + "toy-overflow.codex.L2.a1").text
    assert '<dd id="reason">Error: 401 invalid x-api-key</dd>' in quiet
    assert "The agent never called test_patch: it ended without checking its change." in quiet
    called = get(url, base + "toy-overflow.claude.L2.a2").text
    assert "The agent called test_patch 1 time (last: FAILED [build: passed])." in called
    timed_out = get(url, base + "toy-leak.claude.L0.a2").text
    assert "(signal SIGTERM) (timed out after 3600 s)" in timed_out
    stages = timed_out.split('<table class="stages">', 1)[1].split("</table>", 1)[0]
    assert re.findall(r"<tr><td>(\w+)</td><td>(\w+)</td>", stages) == [
        ("daemon", "done"), ("server", "done"), ("agent", "done"), ("grading", "done")
    ]  # fmt: skip


def test_the_version_changes_when_a_run_ends(tmp_path: Path) -> None:
    """What the live pages poll: the same while nothing changed, new once a run has a record."""
    job = write_job(tmp_path)
    running = job / "runs" / "toy-leak.codex.L2.a1"
    with screenshots_script().viewer(job) as url:
        first, run_first = get(url, "/api/version").json(), get(url, "/api/version?run=0/runs/toy-leak.codex.L2.a1")
        assert get(url, "/api/version").json() == first
        assert get(url, "/api/version?run=0/runs/toy-leak.codex.L2.a1").json() == run_first.json()
        assert run_first.headers["cache-control"] == "no-store"
        (running / "dialog.jsonl").unlink()
        running.rmdir()
        write_run(running, tmp_path / "tasks" / "toy-leak" / "task.toml", agent="codex", level=2, passed=True)
        deadline = time.monotonic() + 10
        while get(url, "/api/version").json() == first:
            assert time.monotonic() < deadline, "the version never changed"
            time.sleep(0.1)
        assert get(url, "/api/version?run=0/runs/toy-leak.codex.L2.a1").json() != run_first.json()
        page = get(url, "/job/0/").text
    assert '<a href="/job-runs/0/?of=not_run">1 not run yet</a>' in page


def test_a_missing_run_or_number_is_a_404_page(site: tuple[str, Path]) -> None:
    url, _ = site
    for path in ("/api/version?run=0/nope", "/job/0/loose", "/job-runs/0/demo-job?agent=nobody&level=0"):
        response = get(url, path)
        assert response.status_code == 404, path
    assert "the report of job demo-job-5f2c9a01 has no such number" in get(url, "/job-runs/0/demo-job?of=x").text


def test_two_jobs_compared(site: tuple[str, Path]) -> None:
    url, _ = site
    page = get(url, "/compare-jobs?job=0/demo-job&job=0/other-job").text
    table = page.split('id="compare-jobs">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr><td>") == 4 and "+0 points" in table
    for href, text in links(table, "/job-runs/"):
        listed = rows(get(url, href).text)
        if text.isdigit():
            assert len(listed) == int(text), href
        else:
            assert listed and text.endswith("%"), href  # a rate: the cell's runs
    one = get(url, "/compare-jobs?job=0/demo-job")
    assert one.status_code == 400 and "pick two jobs to compare" in one.text
