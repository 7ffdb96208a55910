"""``ssebench view`` over HTTP: a real server on 127.0.0.1, httpx (and raw sockets where a
client would normalise the path). The browser tests are in tests/test_view_browser.py."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import markupsafe
import pytest

from ssebench import runrecord
from ssebench.supervise import ssebench_argv
from ssebench.view import dialog
from ssebench.view.index import INDEX_FILE, index_path
from ssebench.view.sample import PASSED_TEXT, write_dialog, write_run, write_runs, write_task
from tests.helpers.view import HOSTILE_SCRIPT, raw_get, screenshots_script, write_hostile_dialog


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Folder 0: twelve sample runs. Folder 1: the odd ones (hostile, half-written, job, symlink out)."""
    runs = tmp_path_factory.mktemp("runs")
    write_runs(runs, 12)
    odd = tmp_path_factory.mktemp("odd")
    task = write_task(odd / "task")
    hostile = write_run(odd / "hostile", task, agent="claude")
    write_hostile_dialog(hostile / "dialog.jsonl")
    half = write_run(odd / "half", task, agent="codex")
    (half / "results.json").write_text('{"version": 1, "status": "pass')
    (odd / "half" / "out-link").symlink_to("/etc/passwd")
    (odd / "half" / "page.html").write_text("<script>window.pwned = 1</script>")
    linked = write_run(odd / "linked", task, agent="gemini")
    secret = tmp_path_factory.mktemp("outside") / "secret.jsonl"
    write_dialog(secret, [{"seq": 1, "type": "init", "agent": "LEAKED-AGENT", "model": "LEAKED-MODEL"}])
    (linked / "dialog.jsonl").unlink()
    (linked / "dialog.jsonl").symlink_to(secret)
    return runs, odd


@pytest.fixture(scope="module")
def url(folders: tuple[Path, Path]) -> Iterator[str]:
    with screenshots_script().viewer(*folders) as address:
        yield address


def esc(text: str) -> str:
    """TEXT as jinja2's autoescape writes it."""
    return str(markupsafe.escape(text))


def get(url: str, path: str) -> httpx.Response:
    return httpx.get(url + path, timeout=30)


def rows(page: str) -> list[str]:
    return re.findall(r'<tr class="[^"]*" data-run="([^"]+)"', page)


def test_the_list_shows_every_run_with_its_columns(url: str) -> None:
    page = get(url, "/").text
    assert "Runs <small>(15 shown of 15)</small>" in page
    assert rows(page)[:3] == ["0/runs/run-0000", "0/runs/run-0001", "0/runs/run-0002"]
    first = page.split('data-run="0/runs/run-0001"', 1)[1].split("</tr>", 1)[0]
    assert '<a href="/run/0/runs/run-0001">toy-leak</a>' in first
    assert "<td>codex</td>" in first and "<td>1</td>" in first and "<td>11.0 s</td>" in first
    assert '<span class="badge passed">passed</span>' in first
    assert 'title="pocs: passed">pocs: passed</span>' in first
    assert (
        '<td>2: <span class="call">FAILED</span>, <span class="call">every check that ran passed</span></td>' in first
    )


def test_sorting_and_filters_come_from_the_query(url: str) -> None:
    by_duration = rows(get(url, "/?sort=duration&order=desc").text)
    assert by_duration[:4] == ["1/hostile", "1/linked", "0/runs/run-0011", "0/runs/run-0010"]
    assert by_duration[-1] == "1/half"  # no duration: last either way
    assert rows(get(url, "/?sort=duration").text)[:2] == ["0/runs/run-0000", "0/runs/run-0001"]
    codex = get(url, "/?agent=codex").text
    assert rows(codex) == ["0/runs/run-0001", "0/runs/run-0005", "0/runs/run-0009", "1/half"]
    assert "Runs <small>(4 shown of 15)</small>" in codex
    assert rows(get(url, "/?agent=codex&level=1").text) == ["0/runs/run-0001"]
    assert rows(get(url, "/?outcome=failed&task=toy-overflow").text) == ["0/runs/run-0000", "0/runs/run-0006"]
    assert "No runs match these filters." in get(url, "/?agent=nobody").text


def test_the_list_counts_its_rows_by_outcome_and_each_count_links_to_them(url: str) -> None:
    """No pass rate pooled across jobs on the list (a job's page has its report): only a tally
    of the rows shown, each count a link to the filter that lists exactly those rows."""
    page = get(url, "/?task=toy-overflow").text
    assert '<table id="summary">' not in page and "Pass rate by agent" not in page
    tally = page.split('<p class="tally" id="tally">', 1)[1].split("</p>", 1)[0]
    links = re.findall(r'<a href="([^"]+)"><span class="badge ([^"]+)">[^<]+</span> (\d+)</a>', tally)
    assert [(outcome, int(n)) for _, outcome, n in links] == [("passed", 4), ("failed", 2)]
    for href, outcome, n in links:
        listed = rows(get(url, markupsafe.Markup(href).unescape()).text)
        assert len(listed) == int(n), (outcome, listed)


def test_the_run_page_shows_every_event_kind_grade_calls_and_diff(url: str) -> None:
    page = get(url, "/run/0/runs/run-0001").text
    for kind in ("init", "prompt", "thinking", "tool", "message", "complete"):
        assert f'<li class="event {kind}"' in page, kind
    assert f'<pre class="body output test-patch">{esc(PASSED_TEXT)}</pre>' in page
    assert "tool · Bash · error" in page and "make: *** Error 2" in page
    assert "success · 4 turns · 8.3 s · exit 0 · tokens in 5120, out 210, cached 0" in page
    call = page.split('<li id="call-2">', 1)[1].split("</li>", 1)[0]
    assert 'call 2 · level 1 · <span class="call passed">every check that ran passed [build: passed]</span>' in call
    assert f'<pre class="body test-patch call-text">{esc(PASSED_TEXT)}</pre>' in call
    assert 'the text the agent was shown, <a href="/files/0/runs/run-0001/calls/2.txt">calls/2.txt</a>' in call
    assert '<a href="/files/0/runs/run-0001/agent-stdout.log">whole file</a>' in page
    assert "1 file(s) differ." in page
    assert '<span class="add">+  strncpy(name, s, sizeof name - 1);\n</span>' in page
    assert '<span class="del">-  strcpy(name, s);\n</span>' in page
    failed = get(url, "/run/0/runs/run-0000").text
    assert "<summary>log tail (pocs)</summary><pre>==3==ERROR: AddressSanitizer: stack-buffer-overflow</pre>" in failed
    assert "0 file(s) differ." in failed


def test_a_hostile_dialog_is_shown_escaped(url: str, folders: tuple[Path, Path]) -> None:
    lines = (folders[1] / "hostile" / "dialog.jsonl").read_bytes().splitlines(keepends=True)
    response = get(url, "/run/1/hostile")
    page = response.text
    assert response.status_code == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert "<script>window.pwned" not in page and "<img src=x" not in page
    escaped = esc(HOSTILE_SCRIPT)
    assert f'<pre class="body">&lt;/pre&gt;{escaped}</pre>' in page
    assert "caf\ufffd\ufffd &lt;b&gt;bold&lt;/b&gt;" in page
    assert "not valid UTF-8 (shown with replacement characters)" in page
    assert f"unknown type {esc(repr(HOSTILE_SCRIPT))}" in page
    assert f"a line of {len(lines[6]):,} bytes, over the 1 MiB a page reads; its start:" in page
    assert len(page) < 400_000  # the huge line is cut, not sent whole
    after = sum(map(len, lines[:7]))  # the page ends after the huge line: the next one is on the next page
    assert f'<a href="?offset={after}#dialog" id="next-page">' in page and "after the huge line" not in page
    assert "after the huge line" in get(url, f"/run/1/hostile?offset={after}").text


def test_a_half_written_results_file_is_named_not_a_traceback(url: str, folders: tuple[Path, Path]) -> None:
    line = f"{folders[1] / 'half' / 'results.json'}: not JSON (Unterminated string starting at: line 1 column 26 (char 25))"
    response = get(url, "/run/1/half")
    assert response.status_code == 200
    assert f"<li>{esc(line)}</li>" in response.text
    assert '<span class="badge unreadable" id="outcome">unreadable</span>' in response.text
    assert '<li class="event complete"' in response.text  # the dialog is still shown
    listing = get(url, "/?agent=codex").text
    row = listing.split('data-run="1/half"', 1)[1].split("</tr>", 1)[0]
    assert '<span class="badge unreadable">unreadable</span>' in row and esc(line) in row


def test_a_record_of_another_version_is_its_one_line_never_a_crash(tmp_path: Path) -> None:
    """A results.json an older ssebench wrote (version 1): listed, its page answers, the
    RecordError's line names the file and its version."""
    task = write_task(tmp_path / "task")
    old = write_run(tmp_path / "runs" / "old", task)
    (old / "results.json").write_text(json.dumps({"version": 1, "status": "passed", "passed": True}))
    line = (
        f"{old / 'results.json'}: run record schema version 1, this ssebench reads version 2 "
        "(written by another ssebench; run it again with this one)"
    )
    with screenshots_script().viewer(tmp_path / "runs") as address:
        listing, page = get(address, "/"), get(address, "/run/0/old")
    assert (listing.status_code, page.status_code) == (200, 200)
    assert esc(line) in listing.text.split('data-run="0/old"', 1)[1].split("</tr>", 1)[0]
    assert f"<li>{esc(line)}</li>" in page.text
    assert '<span class="badge unreadable" id="outcome">unreadable</span>' in page.text


def test_outcome_reason_and_never_called_are_shown_for_every_run(tmp_path: Path) -> None:
    """An agent that exited 3 without calling test_patch: outcome agent_error, the record's
    reason, "never called test_patch" beside it, in the list, the run page and the comparison."""
    task = write_task(tmp_path / "task")
    write_run(tmp_path / "runs" / "fine", task, calls=1)
    quiet = write_run(tmp_path / "runs" / "quiet", task, passed=False, calls=0)
    base = runrecord.read(quiet)
    assert base.agent is not None
    changed = {
        "outcome": runrecord.Outcome.AGENT_ERROR,
        "status": "agent_failed",
        "reason": "the agent exited 3: model refused",
        "exit_code": 6,
        "agent": base.agent.model_copy(update={"exit_code": 3, "calls": 0}),
    }
    runrecord.write(quiet, base.model_copy(update=changed))
    with screenshots_script().viewer(tmp_path / "runs") as address:
        listing = get(address, "/").text
        page = get(address, "/run/0/quiet").text
        compared = get(address, "/compare?run=0/quiet&run=0/fine").text
    row = listing.split('data-run="0/quiet"', 1)[1].split("</tr>", 1)[0]
    assert (
        '<span class="badge agent_error">agent_error</span> <span class="never-called">never called test_patch</span>'
        in row
    )
    assert '<div class="reason">the agent exited 3: model refused</div>' in row
    assert "never called" not in listing.split('data-run="0/fine"', 1)[1].split("</tr>", 1)[0]
    assert '<span class="never-called" id="never-called">never called test_patch</span>' in page
    assert '<dd id="reason">the agent exited 3: model refused</dd>' in page
    assert "<p>None: the agent never called test_patch.</p>" in page
    assert "<dt>Reason</dt><dd>the agent exited 3: model refused</dd>" in compared


@pytest.mark.parametrize(
    "path",
    [
        "/files/1/../../etc/passwd",
        "/files/1/half/../../../etc/passwd",
        "/files/1/half/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/files/1/half%2f..%2f..%2f..%2fetc%2fpasswd",
        "/files/1/half/out-link",
        "/files/1//etc/passwd",
        "/files/9/x",
        "/run/1/..%2f..",
        "/dialog/1/%2e%2e",
        "/static/../app.py",
        "/static/%2e%2e/app.py",
    ],
)
def test_path_traversal_is_a_404_page(url: str, path: str) -> None:
    status, headers, body = raw_get(url, path)
    assert status == 404, body[:300]
    assert b"root:" not in body and b"import" not in body
    if path.startswith(("/files", "/run", "/dialog")):
        assert b'<p class="error" id="message">' in body


def test_a_dialog_symlinked_out_of_the_folder_is_not_read(url: str) -> None:
    listing, page = get(url, "/").text, get(url, "/run/1/linked").text
    assert "LEAKED" not in listing and "LEAKED" not in page
    assert "dialog.jsonl: cannot be read" in page


def test_files_are_listed_and_served_as_text_or_downloads(url: str) -> None:
    listing = get(url, "/files/1/half").text
    assert '<a href="/files/1/half/page.html">page.html</a>' in listing
    assert "out-link" not in listing  # a symlink is not offered
    page = get(url, "/files/1/half/page.html")
    assert page.headers["content-type"] == "text/plain; charset=utf-8"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.text == "<script>window.pwned = 1</script>"
    download = get(url, "/files/1/half/page.html?download=1")
    assert download.headers["content-disposition"] == "attachment; filename*=UTF-8''page.html"


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:80", "127.0.0.1.evil.example", "[::1].evil.example", ""]
)
def test_a_foreign_host_header_is_refused(url: str, host: str) -> None:
    status, _, body = raw_get(url, "/", host=host)
    assert (status, body) == (400, b"Invalid host header")


def test_localhost_names_are_accepted(url: str) -> None:
    port = url.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
        assert raw_get(url, "/", host=host)[0] == 200


def test_the_comparison_shows_runs_side_by_side(url: str) -> None:
    page = get(url, "/compare?run=0/runs/run-0000&run=0/runs/run-0004&run=0/runs/run-0008").text
    assert page.count('<article class="column">') == 3
    assert "<h1>Comparison <small>toy-overflow</small></h1>" in page
    assert page.count("1 file(s) differ.") == 2 and page.count("0 file(s) differ.") == 1
    mixed = get(url, "/compare?run=0/runs/run-0000&run=0/runs/run-0001").text
    assert "These runs are of different tasks." in mixed
    one = get(url, "/compare?run=0/runs/run-0000")
    assert one.status_code == 400 and "pick two or more runs to compare (tick them in the list)" in one.text
    bad = get(url, "/compare?run=0/runs/run-0000&run=0/../..")
    assert bad.status_code == 404 and "0/../.. is not a run folder of the folders being viewed" in bad.text


def test_the_live_endpoint_pages_by_byte_offset(url: str, folders: tuple[Path, Path]) -> None:
    size = (folders[0] / "runs" / "run-0001" / "dialog.jsonl").stat().st_size
    first = get(url, "/dialog/0/runs/run-0001?offset=0")
    assert first.headers["x-next-offset"] == str(size) and first.headers["x-complete"] == "1"
    rest = get(url, f"/dialog/0/runs/run-0001?offset={size}")
    assert (rest.text.strip(), rest.headers["x-next-offset"], rest.headers["x-complete"]) == ("", str(size), "0")


@pytest.mark.slow
def test_a_50_mb_dialog_opens_paged(tmp_path: Path) -> None:
    task = write_task(tmp_path / "task")
    run = write_run(tmp_path / "big", task)
    line = json.dumps({"seq": 1, "ts": "t", "type": "message", "role": "assistant", "text": "x" * 1000}) + "\n"
    count = (50 << 20) // len(line)
    (run / "dialog.jsonl").write_text(line * count)
    size = len(line) * count
    with screenshots_script().viewer(tmp_path) as address:
        page = get(address, "/run/0/big").text
        next_offset = dialog.PAGE_EVENTS * len(line)
        assert f"bytes 0–{next_offset} of {size}" in page
        assert page.count('<li class="event message"') == dialog.PAGE_EVENTS
        assert f'<a href="?offset={next_offset}#dialog" id="next-page">' in page
        assert f'<a href="?offset={size - dialog.PAGE_BYTES}#dialog" id="last-page">' in page
        inside = get(address, f"/run/0/big?offset={next_offset + 5}").text  # inside a line: the next one
        assert f"bytes {next_offset + len(line)}–{next_offset + len(line) * 201} of {size}" in inside


def test_read_page_never_reads_past_its_budget(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    write_dialog(path, [{"seq": n, "type": "message", "text": "y" * 500} for n in range(10, 20)])
    line, size = len(path.read_bytes()) // 10, path.stat().st_size
    page = dialog.read_page(path, 0, events=100, budget=3 * line)
    assert (page.offset, page.next_offset, len(page.events)) == (0, 3 * line, 3)
    assert [e.offset for e in dialog.read_page(path, line + 1, events=2).events] == [2 * line, 3 * line]
    with path.open("ab") as stream:
        stream.write(b'{"seq": 20, "type": "mess')  # being written: not an event yet
    tail = dialog.read_page(path, size)
    assert (tail.offset, tail.next_offset, tail.events) == (size, size, [])


def test_a_job_folder_lists_the_runs_of_job_json(tmp_path: Path) -> None:
    """A run is running only while its job says so and it has no record: one with a record
    shows the record's outcome even when its row still says running (a killed scheduler)."""
    task = write_task(tmp_path / "task")
    job = tmp_path / "job"
    write_run(job / "r1", task, agent="gemini", passed=False, level=3)
    (job / "r3").mkdir(parents=True)  # started: its folder is there, nothing written yet
    rows_ = [
        {"run_id": "r1", "folder": "r1", "task_id": "toy", "agent": "gemini", "level": 3, "state": "running"},
        {"run_id": "r2", "folder": "r2", "task_id": "toy", "agent": "codex", "level": 1, "state": "pending"},
        {"run_id": "r3", "folder": "r3", "task_id": "toy", "agent": "codex", "level": 1, "state": "running"},
        {"run_id": "r4", "folder": "../outside", "task_id": "toy", "agent": "codex", "level": 1, "state": "pending"},
    ]
    (job / "job.json").write_text(json.dumps({"job_id": "j1", "created": "now", "job_file": "j.toml", "runs": rows_}))
    with screenshots_script().viewer(job) as address:
        page = get(address, "/").text
        pending, running = get(address, "/run/0/r2"), get(address, "/run/0/r3")
        live = get(address, "/dialog/0/r3?offset=0")
    assert rows(page) == ["0/r1", "0/r2", "0/r3"]
    row = {rid: page.split(f'data-run="0/{rid}"', 1)[1].split("</tr>", 1)[0] for rid in ("r1", "r2", "r3")}
    assert '<span class="badge failed">failed</span>' in row["r1"]  # its record, not its row
    assert "<td>codex</td>" in row["r2"] and '<span class="badge pending">pending</span>' in row["r2"]
    assert '<span class="badge running">running</span>' in row["r3"]
    assert (pending.status_code, running.status_code, live.status_code) == (200, 200, 200)
    assert "(not made yet)" in pending.text and "/files/0/r2" not in pending.text
    assert 'data-follow="1"' in running.text and "Not known until the run has a record." in running.text


def test_every_link_answers_200(url: str) -> None:
    """Every link of the list and of each page it links to (runs, comparisons, dialog pages,
    files) answers 200, the odd folders' included: half-written, hostile, symlinked."""
    seen: set[str] = set()
    todo = ["/", "/compare?run=0/runs/run-0000&run=1/half&run=1/linked&run=1/hostile"]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        response = get(url, path)
        assert response.status_code == 200, (path, response.text[:300])
        if path.startswith("/files/") and "text/plain" in response.headers["content-type"]:
            continue  # a file's text: its "links" are not links
        for href in re.findall(r'href="([^"#]*)', response.text):
            link = markupsafe.Markup(href).unescape()
            if link.startswith("?"):
                link = path.split("?", 1)[0] + link
            if link.startswith("/") and link not in seen and (link.startswith("/run/") or not path.startswith("/?")):
                todo.append(link)
    assert {"/run/1/half", "/run/1/linked", "/files/1/half", "/static/view.css"} <= seen
    assert len(seen) > 60


def test_the_index_is_kept_next_to_the_runs_and_follows_changes(tmp_path: Path) -> None:
    task = write_task(tmp_path / "task")
    run = write_run(tmp_path / "runs" / "a", task, passed=True)
    with screenshots_script().viewer(tmp_path / "runs") as address:
        assert '<span class="badge passed">passed</span>' in get(address, "/").text
        assert (tmp_path / "runs" / INDEX_FILE).is_file()
        record = runrecord.read(run)
        runrecord.write(run, record.model_copy(update={"passed": False, "outcome": runrecord.Outcome.FAILED}))
        assert '<span class="badge failed">failed</span>' in get(address, "/").text


def test_a_read_only_folder_keeps_its_index_in_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(os, "access", lambda *_a, **_k: False)
    where = index_path(tmp_path / "runs")
    assert where.parent == tmp_path / "cache" / "ssebench" / "view" and where.suffix == ".sqlite"


def test_the_command_names_a_missing_folder_in_one_line(tmp_path: Path) -> None:
    result = subprocess.run(ssebench_argv("view", str(tmp_path / "nope")), capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        f"ssebench view: {tmp_path / 'nope'}: no such folder\n",
    )


@pytest.mark.slow
def test_a_thousand_runs_are_listed_and_counted(tmp_path: Path) -> None:
    """Correctness only; benchmarks/bench_view.py times it (first index, then < 1 s)."""
    write_runs(tmp_path, 1000, tree=False)
    with screenshots_script().viewer(tmp_path / "runs") as address:
        first = get(address, "/").text
        again = get(address, "/").text
        sorted_ = rows(get(address, "/?sort=calls&order=desc&agent=claude").text)
    assert "Runs <small>(1000 shown of 1000)</small>" in first and first == again
    assert rows(first) == [f"0/run-{n:04d}" for n in range(1000)]
    passed = sum(1 for n in range(1000) if n % 3)
    assert f'<span class="badge passed">passed</span> {passed}</a>' in first
    assert len(sorted_) == 250 and sorted_[:2] == [
        "0/run-0000",
        "0/run-0004",
    ]  # calls 1 + n % 4: claude's (n % 4 == 0) all 1


@pytest.mark.slow
def test_a_real_run_folder_viewed_on_its_own(task_factory, tmp_path: Path) -> None:
    """What ``ssebench run`` leaves (a real daemon, server and MCP client agent), as one DIR."""
    task = task_factory(build="true", functional="test -f fixed")
    results = tmp_path / "run"
    agent = Path(__file__).parent / "fixtures" / "agents" / "call_test_patch.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SSE_")}
    argv = ["run", "--task", str(task.file), "--results", str(results), "--difficulty", "1"]
    done = subprocess.run(
        ssebench_argv(*argv, "--", sys.executable, str(agent), "--write", "fixed", "yes"),
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with screenshots_script().viewer(results) as address:
        listing = get(address, "/").text
        page = get(address, "/run/0/").text
        files = get(address, "/files/0/").text
    assert rows(listing) == ["0/"]
    row = listing.split('data-run="0/"', 1)[1].split("</tr>", 1)[0]
    assert '<a href="/run/0/">test-task</a>' in row and '<span class="badge passed">passed</span>' in row
    assert '<td>1: <span class="call">every check that ran passed</span></td>' in row
    ended = "every check that ran passed [build: passed, PoCs: passed, functional tests: passed]"
    assert f'call 1 · level 1 · <span class="call passed">{ended}</span> <small>in ' in page
    shown = (results / "agent-stdout.log").read_text()  # the agent prints the text it got
    assert (results / "calls" / "1.txt").read_text() + "\n" == shown
    assert f'<pre class="body test-patch call-text">{esc(shown.rstrip(chr(10)))}</pre>' in page
    assert 'the text the agent was shown, <a href="/files/0/calls/1.txt">calls/1.txt</a>' in page
    assert "1 file(s) differ." in page and '<code>fixed</code> <span class="status">added</span>' in page
    assert '<span class="add">+yes\n</span>' in page
    assert '<a href="/files/0/calls">calls/</a>' in files
    for name in ("results.json", "server.log", "daemon.log", "grading.json"):
        assert f'<a href="/files/0/{name}">{name}</a>' in files


def test_a_busy_port_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            ssebench_argv("view", str(tmp_path), "--port", str(port)), capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"ssebench view: port {port} is in use") and result.stderr.count("\n") == 1


def test_sigterm_ends_the_view_with_status_0(tmp_path: Path) -> None:
    from ssebench.supervise import free_port, spawn, wait_for_http

    port = free_port()
    child = spawn(
        "view", ssebench_argv("view", str(tmp_path), "--port", str(port)), env=dict(os.environ), log=tmp_path / "log"
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/", what="ssebench view", timeout=60)
        assert "No runs found in these folders" in get(f"http://127.0.0.1:{port}", "/").text
    finally:
        code = child.stop(grace=10)
    assert code == 0
    assert (tmp_path / "log").read_text() == f"ssebench view: http://localhost:{port}/ (1 folder); Ctrl-C stops it\n"


def test_a_damaged_index_is_rebuilt(tmp_path: Path) -> None:
    from ssebench.view.index import Index

    write_runs(tmp_path, 3, tree=False)
    (tmp_path / "runs" / INDEX_FILE).write_bytes(b"not a database\0" * 100)
    runs = Index(tmp_path / "runs", 0).runs()
    assert [r.rel for r in runs] == ["run-0000", "run-0001", "run-0002"]
    assert [r.rel for r in Index(tmp_path / "runs", 0).runs()] == [
        "run-0000",
        "run-0001",
        "run-0002",
    ]  # from the new index
