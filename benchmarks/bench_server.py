"""Benchmark of the test_patch server, side by side with a bare FastMCP server.

Run by hand:  .venv/bin/python benchmarks/bench_server.py [--runs N] [--gib 1]

Measures, in one run:
- start: process start -> first successful MCP ``initialize`` (median of N), for
  ``ssebench serve`` and for a bare FastMCP server with one no-op tool;
- overhead: ``test_patch`` round trip on a task whose checks are ``true`` (level 0,
  every check) minus the same run asked of the daemon directly; the bare server's
  no-op round trip is shown for scale;
- a functional test printing 1 GiB and failing (level 2): ``test_patch`` time minus
  the time the same command takes to print into a file, and the peak RSS growth of
  the server and of the daemon during the call;
- idle RSS of both servers.
Targets (issue 3): start <= 1.3x bare; overhead <= 50 ms median; 1 GiB log <= 2 s
extra and <= 50 MB RSS growth.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil
from fastmcp import Client

from ssebench.server.stack import free_port, running_stack, ssebench_argv, start, stop

BARE_SERVER = """
import sys
from fastmcp import FastMCP
mcp = FastMCP("bare")
@mcp.tool
def noop() -> str:
    return "ok"
mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), path="/mcp",
        show_banner=False, log_level="warning")
"""

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def time_to_initialize(argv: list[str], port: int, env: dict[str, str]) -> tuple[float, subprocess.Popen[bytes]]:
    url = f"http://127.0.0.1:{port}/mcp"
    t0 = time.perf_counter()
    proc = start(argv, env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with httpx.Client(timeout=5) as client:
        while True:
            try:
                if client.post(url, json=INIT, headers=HEADERS).status_code == 200:
                    return time.perf_counter() - t0, proc
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"{argv} exited with {proc.returncode}")
            time.sleep(0.005)


def write_task(root: Path, functional: str) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "pocs").mkdir()
    (root / "pocs" / "p1").write_text("x")
    (root / "intent.diff").write_text("")
    toml = (
        'id = "bench"\nsource = "src"\n[build]\nrun = "true"\n'
        '[pocs]\nrun = "true"\nfiles = ["pocs/p1"]\n'
        f"[functional]\nrun = '''{functional}'''\ntimeout = 3600\n"
    )
    task = root / "task.toml"
    task.write_text(toml)
    return task


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


class PeakRss:
    """Samples RSS of some processes every 20 ms in a thread."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.peak = {name: rss_mb(pid) for name, pid in pids.items()}
        self.base = dict(self.peak)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, pid in self.pids.items():
                self.peak[name] = max(self.peak[name], rss_mb(pid))
            time.sleep(0.02)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def round_trips(url: str, tool: str, n: int) -> list[float]:
    times = []
    async with Client(url, timeout=3600) as client:
        await client.call_tool(tool, {}, raise_on_error=False)  # warm-up
        for _ in range(n):
            t0 = time.perf_counter()
            await client.call_tool(tool, {}, raise_on_error=False)
            times.append(time.perf_counter() - t0)
    return times


async def interleaved(url: str, sock: Path, n: int) -> tuple[list[float], list[float]]:
    """test_patch round trips and direct daemon runs, alternated so load drifts hit both."""
    ours, direct = [], []
    body = {"checks": ["build", "pocs", "intent", "functional"]}
    transport = httpx.AsyncHTTPTransport(uds=str(sock))
    async with (
        Client(url, timeout=3600) as client,
        httpx.AsyncClient(transport=transport, base_url="http://daemon", timeout=600) as daemon,
    ):
        for i in range(n + 1):
            t0 = time.perf_counter()
            await client.call_tool("test_patch", {}, raise_on_error=False)
            t1 = time.perf_counter()
            async with daemon.stream("POST", "/runs", json=body) as r:
                async for _line in r.aiter_lines():
                    pass
            t2 = time.perf_counter()
            if i:  # the first of each is a warm-up
                ours.append(t1 - t0)
                direct.append(t2 - t1)
    return ours, direct


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--gib", type=float, default=1.0)
    args = ap.parse_args()
    env = {**os.environ, "SSE_DIFFICULTY": "0", "SSE_DAEMON_SOCKET": "/nonexistent/daemon.sock"}

    with tempfile.TemporaryDirectory(prefix="ssebench-bench-") as tmp:
        tmpd = Path(tmp)
        bare_py = tmpd / "bare.py"
        bare_py.write_text(BARE_SERVER)

        # --- start -> first initialize, and idle RSS
        starts: dict[str, list[float]] = {"bare": [], "ssebench": []}
        idle: dict[str, float] = {}
        for _ in range(args.starts):
            for name in ("bare", "ssebench"):
                port = free_port()
                argv = (
                    [sys.executable, str(bare_py), str(port)]
                    if name == "bare"
                    else ssebench_argv("serve", "--port", str(port), "--log-dir", str(tmpd / "logs"))
                )
                elapsed, proc = time_to_initialize(argv, port, env)
                starts[name].append(elapsed)
                time.sleep(0.3)
                idle[name] = rss_mb(proc.pid)
                stop(proc)
        s_bare, s_ours = statistics.median(starts["bare"]), statistics.median(starts["ssebench"])
        print(
            f"start -> initialize (median of {args.starts}): bare {ms(s_bare)}, ssebench {ms(s_ours)}, "
            f"ratio {s_ours / s_bare:.2f} (target <= 1.30)"
        )
        print(f"idle RSS: bare {idle['bare']:.1f} MB, ssebench serve {idle['ssebench']:.1f} MB")

        # --- round trip overhead, checks are `true`
        task = write_task(tmpd / "true-task", "true")
        work = tmpd / "work-true"
        work.mkdir(mode=0o700)
        with running_stack(task, work, difficulty="0") as stack:
            ours, direct = asyncio.run(interleaved(stack.url, stack.socket, args.runs))
            assert stack.daemon is not None
            daemon_idle = rss_mb(stack.daemon.pid)
        port = free_port()
        _, bare = time_to_initialize([sys.executable, str(bare_py), str(port)], port, env)
        try:
            noop = asyncio.run(round_trips(f"http://127.0.0.1:{port}/mcp", "noop", args.runs))
        finally:
            stop(bare)
        m_ours, m_direct, m_noop = map(statistics.median, (ours, direct, noop))
        print(
            f"round trip, checks `true` (median of {args.runs}): test_patch {ms(m_ours)}, "
            f"daemon directly {ms(m_direct)}, bare no-op tool {ms(m_noop)}"
        )
        diffs = [a - b for a, b in zip(ours, direct, strict=True)]
        print(
            f"  overhead of the server: {ms(m_ours - m_direct)} (median of pairwise differences "
            f"{ms(statistics.median(diffs))}; target <= 50 ms)"
        )
        print(f"idle RSS: daemon {daemon_idle:.1f} MB")

        # --- a functional test printing N GiB, then failing
        size = int(args.gib * 2**30)
        printer = f"yes 'some words of a very long functional test log' | head -c {size}; exit 1"
        t0 = time.perf_counter()
        subprocess.run(["bash", "-c", printer], stdout=open(tmpd / "bare.log", "wb"), check=False)
        bare_print = time.perf_counter() - t0
        os.unlink(tmpd / "bare.log")
        task = write_task(tmpd / "big-task", printer)
        work = tmpd / "work-big"
        work.mkdir(mode=0o700)
        with running_stack(task, work, difficulty="2") as stack:
            assert stack.server is not None and stack.daemon is not None
            with PeakRss({"server": stack.server.pid, "daemon": stack.daemon.pid}) as rss:
                t0 = time.perf_counter()
                text = asyncio.run(round_trips_once(stack.url))
                big = time.perf_counter() - t0
            assert "Truncated log (functional tests):" in text, text[:500]
        print(
            f"{args.gib:g} GiB log: printing into a file {bare_print:.2f} s, test_patch {big:.2f} s, "
            f"extra {big - bare_print:.2f} s (target <= 2 s)"
        )
        for name in ("server", "daemon"):
            print(
                f"  {name} RSS: {rss.base[name]:.1f} MB before, peak {rss.peak[name]:.1f} MB, "
                f"growth {rss.peak[name] - rss.base[name]:.1f} MB (target <= 50 MB)"
            )
    return 0


async def round_trips_once(url: str) -> str:
    async with Client(url, timeout=3600) as client:
        result = await client.call_tool("test_patch", {}, raise_on_error=False)
    return result.content[0].text  # type: ignore[union-attr]


if __name__ == "__main__":
    sys.exit(main())
