"""What the support view (/sse/task, ssebench/daemon/taskview.py) costs: the copy made
when the daemon starts, for a task folder of FILES files of SIZE bytes each, and one
check's sandbox start (bwrap running ``true``) with the view as one read-only bind, with
a PoC added (the tmpfs form), and with no view (an empty /sse/task, as before).

    .venv/bin/python benchmarks/bench_support_view.py [FILES] [SIZE] [ROUNDS]
    # defaults: 2000 files of 25000 bytes (50 MB), 50 sandbox starts each (median)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ssebench.daemon import taskview
from ssebench.daemon.sandbox import TASK_PATH, TreeView
from ssebench.daemon.sandbox_setup import detect
from ssebench.task import load_task


def _task(root: Path, files: int, size: int) -> Path:
    task = root / "task"
    (task / "src").mkdir(parents=True)
    (task / "pocs").mkdir()
    (task / "pocs" / "crash-1").write_text("x")
    for i in range(files):
        path = task / "data" / f"d{i // 100}" / f"f{i}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    for i in range(10):
        (task / f"helper{i}.sh").write_text("true\n")
    (task / "task.toml").write_text(
        'id = "bench"\nsource = "src"\n[build]\nrun = "true"\n[pocs]\nrun = "true"\nfiles = ["pocs/crash-1"]\n'
    )
    return task / "task.toml"


def _median_ms(argv: list[str], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main(files: int, size: int, rounds: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-support-view-"))
    try:
        task = load_task(_task(root, files, size))
        (root / "ws").mkdir()
        start = time.perf_counter()
        view = taskview.build(task, root / "ws" / "task", TASK_PATH)
        print(f"copy at start: {files} files, {files * size / 1e6:.0f} MB: {time.perf_counter() - start:.2f} s")
        box = detect()
        tree = TreeView.bind(root / "ws")
        poc = {f"{TASK_PATH}/pocs/crash-1": task.dir / "pocs" / "crash-1"}
        for name, argv in (
            ("no view (empty /sse/task)", box.wrap(["true"], tree)),
            ("support view, one bind", box.wrap(["true"], tree, task=view.root)),
            ("support view + a PoC (tmpfs)", box.wrap(["true"], tree, task=view.root, files=poc)),
        ):
            print(f"sandbox start, {name}: {_median_ms(argv, rounds):.1f} ms (median of {rounds})")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [2000, 25000, 50][len(args) :]))
