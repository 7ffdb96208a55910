"""How long ``ssebench view`` takes to list a folder of many runs: the first index, then the listing.

The issue's bar: 1,000 runs list in under 1 s after the first index. Measured against the
real server (``ssebench view`` on a free port of 127.0.0.1) over HTTP, with synthetic runs
in the real formats (ssebench.view.sample), plus a 50 MB dialog's first page, the version a
live page polls every 2 s, a job's page (its report made from the records, then cached),
and ``--export`` of the whole folder.

    .venv/bin/python benchmarks/bench_view.py [RUNS]   # default: 1000
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ssebench.supervise import ssebench_argv
from ssebench.view.sample import write_run, write_runs, write_task
from ssebench.view.samplejob import write_job
from tests.helpers.view import screenshots_script


def timed(client: httpx.Client, url: str) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = client.get(url)
    return time.perf_counter() - started, response


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory(prefix="bench-view-") as tmp:
        root = Path(tmp)
        (root / "runs").mkdir()
        # The server starts on the empty folder (its start-up check asks for the list once),
        # so the first timed listing is the one that reads every run and builds the index.
        with screenshots_script().viewer(root / "runs") as url, httpx.Client(timeout=120) as client:
            started = time.perf_counter()
            write_runs(root, count, tree=False)
            task = write_task(root / "big-task")
            big = write_run(root / "runs" / "zz-big", task)
            line = json.dumps({"seq": 1, "ts": "t", "type": "message", "role": "assistant", "text": "x" * 1000}) + "\n"
            (big / "dialog.jsonl").write_text(line * ((50 << 20) // len(line)))
            print(f"made {count} runs and a 50 MB dialog in {time.perf_counter() - started:.1f} s")
            first, response = timed(client, url + "/")
            assert response.text.count('data-run="') == count + 1, "every run is listed"
            print(f"first listing (builds the index): {first:.3f} s")
            again = [timed(client, url + "/")[0] for _ in range(5)]
            print(f"listing after the index: median {statistics.median(again):.3f} s, max {max(again):.3f} s (5 runs)")
            sorted_ = [timed(client, url + "/?sort=duration&order=desc&agent=codex")[0] for _ in range(5)]
            print(f"sorted + filtered: median {statistics.median(sorted_):.3f} s")
            page = [timed(client, url + "/run/0/zz-big")[0] for _ in range(3)]
            print(f"run page of the 50 MB dialog (first page): median {statistics.median(page):.3f} s")
            polls = [timed(client, url + "/api/version")[0] for _ in range(10)]
            print(f"/api/version (what a live page polls every 2 s): median {statistics.median(polls):.3f} s")
            write_job(root / "runs")
            first, response = timed(client, url + "/job/0/demo-job")
            assert response.status_code == 200 and "Job demo-job-5f2c9a01" in response.text
            again = [timed(client, url + "/job/0/demo-job")[0] for _ in range(5)]
            print(f"job page (16 runs): first {first:.3f} s, then median {statistics.median(again):.3f} s")
        started = time.perf_counter()
        argv = ssebench_argv("view", "--export", str(root / "site"), str(root / "runs"))
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        print(f"--export of {count + 17} runs: {time.perf_counter() - started:.1f} s ({done.stdout.strip()})")


if __name__ == "__main__":
    main()
