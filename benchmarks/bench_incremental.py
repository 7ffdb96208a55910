"""Benchmark of incremental checks (issue 10): a repeat test_patch vs building in place.

Run by hand (not a test; ~10 min on 2 cores, ~1 GB of disk in the cache and a temp dir):

    .venv/bin/python benchmarks/bench_incremental.py [--runs 3] [--skip-curl] [--skip-example]
        [--project cjson] [--project giflib] [--zstd [--calls 6]]

The tree: curl 7.88.1, the upstream tarball of Debian bookworm's source package, fetched
with ``apt-get source --download-only`` through a private sources list (``deb-src`` for
bookworm from the machine's Debian mirror; apt's lists and the download live in
``~/.cache/ssebench/bench-curl``, never in /etc/apt), unpacked once. Build:
``./configure`` (only when ``config.status`` is missing, i.e. in the first build of a tree;
``--disable-shared``, no TLS and no optional libraries, so it needs only gcc, make and
perl), then ``make -j2 && make -j2 -C tests/server``; functional = 8 of curl's own
tests (``runtests.pl -a 1 2 3 200 201 202 203 204``: 3 HTTP tests on a local server and
5 file:// tests).

Measured side by side in one run, medians of ``--runs``, in-place work interleaved with
the daemon's so that load drifts hit both:
- first call on an unbuilt, unconfigured tree: ``test_patch`` (level 2: build + functional) vs a full
  build + the functional command in place;
- repeat call after a one-line change: ``test_patch`` (level 2) vs an incremental build
  + the functional command in place (target <= 1.2x);
- level 3 repeat (build only): ``test_patch`` at level 3 vs the incremental build in
  place (target <= that + 0.3 s);
- peak extra disk: the daemon's whole workspace (``du``, sampled every 0.25 s) vs the
  tree (target <= 1.5x);
and the same for the bundled example task. ``--project cjson`` / ``--project giflib``
add a real task of tests/realtasks (cJSON 1.7.15, giflib 5.2.1: the upstream tarball of
Debian bookworm's source package, cached by tests/helpers/realtasks.py): the task's own
build and functional commands, i.e. its support scripts ``build.sh`` and
``functional.sh`` (AddressSanitizer builds; in place they run with SSE_TASK_DIR and
SSE_TREE set as the daemon sets them), after a one-line change to the file the upstream
fix changes (``cJSON.c``, ``gif2rgb.c``). Every call goes through the real stack
(``ssebench daemon`` + ``ssebench serve``) and the MCP client, as an agent's would.
Every table gives the *fallback rate*: repeat calls whose build was clean / repeat calls
(the daemon's ``/health``, ``builds.last``, after each call), with why; the goal on
one-line source changes is 0.

``--zstd`` (issue 34): the loop that collapsed. zstd 1.5.4 (bookworm's ``libzstd``
1.5.4+dfsg2 upstream tarball, cached in ``~/.cache/ssebench/bench-zstd``), build
``make -j2 && make -j2 -C tests datagen`` (each library source compiled twice, static
and shared, with .d files; ``ar``; a shared library; the zstd program; datagen). The
first call, then ``--calls`` times: one line of ``lib/common/entropy_common.c`` changed
in both trees, ``make`` in place and ``test_patch`` at level 3 (build only), each timed,
with the daemon's decision; prints each call, the fallback rate and the repeat ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from fastmcp import Client

from ssebench.resources import data_dir
from ssebench.server.stack import Stack, running_stack
from ssebench.supervise import wait_for_daemon

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.helpers.debsrc import FetchError, orig_tarball
from tests.helpers.realtasks import REAL_TASKS, task_folder

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ssebench" / "bench-curl"
CURL_VERSION = "7.88.1"
CONFIGURE = [
    "./configure",
    "-q",
    "--disable-shared",
    "--without-ssl",
    "--without-libpsl",
    "--disable-ldap",
    "--without-brotli",
    "--without-zstd",
    "--without-nghttp2",
    "--without-libidn2",
    "--without-librtmp",
]
# configure runs in the first build of each tree (in place, and in the daemon's mirror at
# its own path): a tree configured elsewhere carries absolute paths the sandbox cannot see.
CURL_BUILD = "{ test -f config.status || " + " ".join(CONFIGURE) + "; } && make -j2 && make -j2 -C tests/server"
CURL_FUNCTIONAL = "cd tests && perl runtests.pl -a 1 2 3 200 201 202 203 204"
CURL_CHANGED = "lib/escape.c"
# The real tasks of tests/realtasks (--project cjson / giflib): the task's own build and
# functional commands (its support scripts), a one-line change in the file the fix changes.
SUPPORT_SCRIPTS = ("build.sh", "functional.sh")
REAL_BUILD = 'bash "$SSE_TASK_DIR/build.sh"'
REAL_FUNCTIONAL = 'bash "$SSE_TASK_DIR/functional.sh"'
REAL_CHANGED = {"cjson": "cJSON.c", "giflib": "gif2rgb.c"}
ZSTD_CACHE = CACHE.parent / "bench-zstd"
ZSTD_VERSION = "1.5.4+dfsg2"  # bookworm's libzstd; the tarball unpacks to zstd-1.5.4
ZSTD_BUILD = "make -j2 && make -j2 -C tests datagen"
ZSTD_CHANGED = "lib/common/entropy_common.c"


# -- the tree -------------------------------------------------------------------------------


def curl_tree() -> Path:
    """The unpacked curl tree (cached; configured by the first build of each copy)."""
    done = CACHE / "unpacked" / ".unpacked"
    tree = CACHE / "unpacked" / "curl"
    if done.exists():
        return tree
    print("fetching curl's Debian source package (apt-get source, private sources list) ...", flush=True)
    try:
        tarball = orig_tarball("curl", CURL_VERSION, CACHE)
    except FetchError as exc:
        sys.exit(str(exc))
    shutil.rmtree(CACHE / "unpacked", ignore_errors=True)
    (CACHE / "unpacked").mkdir(parents=True)
    subprocess.run(["tar", "xzf", str(tarball)], cwd=CACHE / "unpacked", check=True)
    (CACHE / "unpacked" / f"curl-{CURL_VERSION}").rename(tree)
    done.touch()
    return tree


def zstd_tree() -> Path:
    """The unpacked zstd tree (cached)."""
    done = ZSTD_CACHE / "unpacked" / ".unpacked"
    tree = ZSTD_CACHE / "unpacked" / "zstd"
    if done.exists():
        return tree
    print("fetching zstd's Debian source package (apt-get source, private sources list) ...", flush=True)
    try:
        tarball = orig_tarball("libzstd", ZSTD_VERSION, ZSTD_CACHE)
    except FetchError as exc:
        sys.exit(str(exc))
    shutil.rmtree(ZSTD_CACHE / "unpacked", ignore_errors=True)
    (ZSTD_CACHE / "unpacked").mkdir(parents=True)
    subprocess.run(["tar", "xf", str(tarball)], cwd=ZSTD_CACHE / "unpacked", check=True)
    (ZSTD_CACHE / "unpacked" / "zstd-1.5.4").rename(tree)
    done.touch()
    return tree


# -- measuring ------------------------------------------------------------------------------


def du(path: Path) -> int:
    out = subprocess.run(["du", "-s", "-B1", str(path)], capture_output=True, text=True, check=False).stdout
    return int(out.split()[0]) if out.strip() else 0


class PeakDisk:
    """The largest ``du`` of a folder, sampled in a thread."""

    def __init__(self, path: Path) -> None:
        self.path, self.peak = path, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, du(self.path))
            self._stop.wait(0.25)

    def __enter__(self) -> PeakDisk:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, du(self.path))


def timed(command: str, cwd: Path, support: Path | None = None) -> float:
    """Run *command* in place in *cwd* (with a task's support scripts: SSE_TASK_DIR, SSE_TREE)."""
    env = None if support is None else {**os.environ, "SSE_TASK_DIR": str(support), "SSE_TREE": str(cwd)}
    t0 = time.perf_counter()
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(
            f"in place: {command!r} failed in {cwd} (exit {done.returncode}):\n"
            + done.stderr.decode(errors="replace")[-2000:]
        )
    return time.perf_counter() - t0


async def _call(url: str) -> tuple[float, str]:
    async with Client(url, timeout=3600) as client:
        t0 = time.perf_counter()
        result = await client.call_tool("test_patch", {}, raise_on_error=False)
        elapsed = time.perf_counter() - t0
    return elapsed, result.content[0].text  # type: ignore[union-attr]


def test_patch(url: str) -> float:
    elapsed, text = asyncio.run(_call(url))
    if "FAILED" in text or "passed" not in text:
        sys.exit(f"test_patch did not pass:\n{text}")
    return elapsed


def last_build(stack: Stack) -> str:
    """The daemon's decision for its last build (``/health``: "incremental", "clean: why")."""
    answer, _ = wait_for_daemon(stack.socket, what="the daemon", timeout=30)
    return str(answer["builds"]["last"])


def fallback(decisions: list[str]) -> str:
    """Clean builds / calls, and why (issue 34: goal 0 on one-line source changes)."""
    clean = [d.removeprefix("clean: ") for d in decisions if d.startswith("clean")]
    whys = "; ".join(f"{n}x {why}" for why, n in collections.Counter(clean).most_common())
    return f"{len(clean)}/{len(decisions)} = {len(clean) / max(1, len(decisions)):.2f}" + (f" ({whys})" if whys else "")


def one_line_change(tree: Path, rel: str, n: int, *, code: bool = False) -> None:
    """Change one line of *rel*: its last line, a comment the benchmark owns (*code*: a
    function after the comment, so the object's bytes change too)."""
    path = tree / rel
    text = path.read_text().split("/* bench change")[0]
    line = f"int ssebench_bench_code_{n}(void) {{ return {n}; }}" if code else ""
    path.write_text(text + f"/* bench change {n} */ {line}".rstrip() + "\n")


def write_task(root: Path, tree: Path, build: str, functional: str, support: Path | None = None) -> Path:
    root.mkdir(parents=True)
    for script in SUPPORT_SCRIPTS if support else ():
        shutil.copy2(support / script, root / script)
    task = root / "task.toml"
    q = json.dumps  # a JSON string is a TOML basic string (the commands have quotes)
    task.write_text(
        f'id = "bench"\nsource = {q(str(tree))}\n[build]\nrun = {q(build)}\ntimeout = 3600\n'
        f"[functional]\nrun = {q(functional)}\ntimeout = 3600\n"
    )
    return task


def fmt(x: float) -> str:
    return f"{x:.2f} s"


def bench(
    name: str,
    pristine: Path,
    build: str,
    functional: str,
    changed: str,
    runs: int,
    tmp: Path,
    copy_tree: Callable[[Path, Path], None],
    support: Path | None = None,
) -> list[str]:
    """Measure one tree; return the table rows. *support*: the folder of a real task's
    support scripts (its build and functional commands run them from SSE_TASK_DIR)."""
    med = statistics.median
    inplace_first, inplace_make, inplace_func, inplace_repeat = [], [], [], []
    ours_first, ours_repeat, ours_l3, inplace_make3 = [], [], [], []
    decisions: list[str] = []
    peak_disk = 0
    tree_size = du(pristine)
    built_size = 0
    for r in range(runs):
        base = tmp / f"{name.split()[0]}-{r}"
        ip, agent = base / "inplace", base / "agent"
        base.mkdir()
        copy_tree(pristine, ip)
        copy_tree(pristine, agent)
        # first call, in place vs the daemon (a fresh daemon: nothing built)
        inplace_first.append(timed(build, ip, support) + timed(functional, ip, support))
        built_size = du(ip)
        task = write_task(base / "task", agent, build, functional, support)
        daemon_tmp = base / "daemon-tmp"
        daemon_tmp.mkdir()
        levels = ("2", "3") if r == 0 else ("2",)
        for level in levels:
            work = Path(tempfile.mkdtemp(dir=base, prefix=f"stack-{level}-"))
            env = {**os.environ, "TMPDIR": str(daemon_tmp)}
            with running_stack(task, work, difficulty=level, env=env) as stack, PeakDisk(daemon_tmp) as disk:
                first = test_patch(stack.url)
                if level == "2":
                    ours_first.append(first)
                if r == 0:  # repeat calls after a one-line change, side by side
                    for i in range(runs):
                        n = i + 1 + (100 if level == "3" else 0)
                        one_line_change(ip, changed, n)
                        one_line_change(agent, changed, n)
                        make = timed(build, ip, support)
                        if level == "2":
                            inplace_make.append(make)
                            func = timed(functional, ip, support)
                            inplace_func.append(func)
                            inplace_repeat.append(make + func)
                            ours_repeat.append(test_patch(stack.url))
                        else:
                            inplace_make3.append(make)
                            ours_l3.append(test_patch(stack.url))
                        decisions.append(last_build(stack))
            peak_disk = max(peak_disk, disk.peak)
        shutil.rmtree(base, ignore_errors=True)
    rows = [f"{name}: tree {tree_size / 2**20:.1f} MiB unbuilt, {built_size / 2**20:.1f} MiB built in place"]
    r_first = med(ours_first) / med(inplace_first)
    r_rep = med(ours_repeat) / med(inplace_repeat)
    make_med = med(inplace_make3)
    rows.append(
        f"  first call (level 2)       test_patch {fmt(med(ours_first))}  in place (full build + functional) "
        f"{fmt(med(inplace_first))}  ratio {r_first:.2f} (target <= 1.20)"
    )
    rows.append(
        f"  repeat after 1-line change test_patch {fmt(med(ours_repeat))}  in place (incremental build + "
        f"functional) {fmt(med(inplace_repeat))}  ratio {r_rep:.2f} (target <= 1.20)"
    )
    rows.append(
        f"  level 3 repeat             test_patch {fmt(med(ours_l3))}  in place incremental build "
        f"{fmt(make_med)}  extra {med(ours_l3) - make_med:+.2f} s (target <= +0.30 s)"
    )
    rows.append(f"  fallback rate (clean builds / repeat calls) {fallback(decisions)} (goal 0)")
    rows.append(
        f"  peak extra disk            {peak_disk / 2**20:.1f} MiB = {peak_disk / tree_size:.2f}x the "
        f"unbuilt tree, {peak_disk / max(built_size, 1):.2f}x the built tree (target <= 1.50x)"
    )
    rows.append(
        f"  raw: first ours {[round(x, 2) for x in ours_first]} in place {[round(x, 2) for x in inplace_first]}; "
        f"repeat ours {[round(x, 2) for x in ours_repeat]} in place {[round(x, 2) for x in inplace_repeat]}; "
        f"level 3 ours {[round(x, 2) for x in ours_l3]}; incremental builds in place "
        f"{[round(x, 2) for x in inplace_make + inplace_make3]}"
    )
    return rows


def cp_tree(src: Path, dst: Path) -> None:
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)


def bench_real(name: str, runs: int, tmp: Path) -> list[str]:
    """Measure a real task's upstream tree (fetched and cached by tests/helpers/realtasks.py)."""
    try:
        folder = task_folder(name)
    except FetchError as exc:
        sys.exit(str(exc))
    task = REAL_TASKS[name]
    return bench(
        f"{task.package} {task.version} (tests/realtasks/{name})",
        folder / "src",
        REAL_BUILD,
        REAL_FUNCTIONAL,
        REAL_CHANGED[name],
        runs,
        tmp,
        cp_tree,
        support=folder,
    )


def bench_loop(name: str, pristine: Path, build: str, changed: str, calls: int, tmp: Path) -> list[str]:
    """The zstd loop (issue 34): a first call, then *calls* one-line changes, each built in
    place and by a daemon at level 3 (build only), side by side; the daemon's decisions."""
    med = statistics.median
    base = tmp / name.split()[0]
    ip, agent = base / "inplace", base / "agent"
    base.mkdir()
    cp_tree(pristine, ip)
    cp_tree(pristine, agent)
    first_ip = timed(build, ip)
    task = write_task(base / "task", agent, build, "true")
    (base / "daemon-tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(base / "daemon-tmp")}
    make, ours, decisions = [], [], []
    with running_stack(task, Path(tempfile.mkdtemp(dir=base)), difficulty="3", env=env) as stack:
        first = test_patch(stack.url)
        first_decision = last_build(stack)
        for i in range(calls):
            one_line_change(ip, changed, i + 1)
            one_line_change(agent, changed, i + 1)
            make.append(timed(build, ip))
            ours.append(test_patch(stack.url))
            decisions.append(last_build(stack))
            print(f"  call {i + 1}: {fmt(ours[-1])} ({decisions[-1]}), make in place {fmt(make[-1])}", flush=True)
    shutil.rmtree(base, ignore_errors=True)
    return [
        f"{name}: build {build!r}, {calls} calls after a one-line change of {changed}",
        f"  first call (level 3)       test_patch {fmt(first)} ({first_decision})  in place {fmt(first_ip)}",
        f"  repeat (level 3)           test_patch {fmt(med(ours))}  make in place {fmt(med(make))}  ratio "
        f"{med(ours) / med(make):.2f}  extra {med(ours) - med(make):+.2f} s (medians)",
        f"  fallback rate (clean builds / calls) {fallback(decisions)} (goal 0)",
        f"  raw: test_patch {[round(x, 2) for x in ours]}; make in place {[round(x, 2) for x in make]}",
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-curl", action="store_true")
    ap.add_argument("--skip-example", action="store_true")
    ap.add_argument(
        "--project",
        action="append",
        choices=sorted(REAL_CHANGED),
        default=[],
        help="also measure this real task of tests/realtasks (repeatable)",
    )
    ap.add_argument("--zstd", action="store_true", help="also run the zstd loop (issue 34)")
    ap.add_argument("--calls", type=int, default=6, help="one-line changes in the zstd loop")
    args = ap.parse_args()
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-incr-") as tmp:
        os.chmod(tmp, 0o711)  # a root daemon's checks (uid 65534) must traverse to their trees
        tmpd = Path(tmp)
        if not args.skip_example:
            src = data_dir("examples") / "tasks" / "demo-overflow" / "src"
            rows += bench(
                "bundled example (demo-overflow)", src, "make", "make test", "greet.c", args.runs, tmpd, cp_tree
            )
        if not args.skip_curl:
            rows += bench(
                f"curl {CURL_VERSION}", curl_tree(), CURL_BUILD, CURL_FUNCTIONAL, CURL_CHANGED, args.runs, tmpd, cp_tree
            )
        for name in args.project:
            rows += bench_real(name, args.runs, tmpd)
        if args.zstd:
            rows += bench_loop("zstd 1.5.4", zstd_tree(), ZSTD_BUILD, ZSTD_CHANGED, args.calls, tmpd)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
