"""Soak: many test_patch calls through the real server with faults, then count what is left.

    .venv/bin/python benchmarks/bench_soak.py [--calls 500] [--seed 1] [--workers 2] [--restart-every 100]

A real daemon and ``ssebench serve`` (level 2) on a small task whose build takes a
random moment and leaves processes behind (a background child and a ``setsid`` one).
Calls come from ``--workers`` concurrent clients; each call is, at random:

- normal (real MCP client, fastmcp) — the answer must be the spec's level-2 text
  exactly, or the internal-failure sentence (a call that met a daemon restart);
- a client killed with SIGKILL mid-call (the client is its own process);
- a call cancelled mid-call (the client's task is cancelled, closing its stream).

Every 100 calls (``--restart-every``) the daemon is restarted, alternately with SIGTERM and with SIGKILL
(the latter leaves its workspace for the next daemon to sweep). At the end:

- answers: each normal call's text, counted; any other text is a failure;
- leaked processes: live processes carrying the run's marker variable, besides the
  daemon and the server (checks inherit it, so any leftover of any check counts);
- disk: bytes under the daemon's temp folder and MCP_LOG_DIR, after the warm-up call
  and at the end (after one last normal call), with the daemon's log budget of 1 MiB;
- RSS of the server after the warm-up and at the end.

Measured 2026-12-01 (2 shared cores, bwrap sandbox on, seed 1, 2 workers): 500 calls in
187 s (60 client kills, 82 cancels, 358 normal calls; 4 daemon restarts, 2 by SIGKILL):
356 exact answers, 2 internal failures (calls that met a restart), final call exact;
0 leaked processes; disk 1764 -> 2768 KiB (the 1 MiB log budget of old runs); one
workspace left; server RSS 86.2 -> 87.8 MiB (+1.6 MiB).

Exit status 0 when every criterion holds (answers exact or internal, 0 leaked
processes, disk back to its baseline within the log budget, server RSS growth
<= 20 MiB), else 1. Prints the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import psutil
from fastmcp import Client

from ssebench.server.report import INTERNAL_FAILURE
from ssebench.server.stack import Stack, free_port, stop

MiB = 1 << 20
LEVEL_2_PASSED = """test_patch result: every check that ran passed.

Checks:
- build: passed
- functional tests: passed

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them. Without the PoCs, this result does not show whether the vulnerability is fixed."""

BUILD = r"""
sleep "0.$(( RANDOM % 4 ))"
sleep 300 &
setsid sleep 301 &
echo built
"""

CLIENT = r"""
import asyncio, sys
from fastmcp import Client
async def main():
    async with Client(sys.argv[1], timeout=300) as c:
        await c.call_tool("test_patch", {}, raise_on_error=False)
asyncio.run(main())
"""


def write_task(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    task = root / "task.toml"
    task.write_text(
        'id = "soak"\nsource = "src"\ndescription = "Soak."\n\n'
        f"[build]\nrun = '''{BUILD}'''\ntimeout = 60\n\n[functional]\nrun = \"echo functional\"\n"
    )
    return task


def disk_use(folder: Path) -> int:
    total = 0
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def marked(mark: str, exclude: set[int]) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter():
        if p.pid in exclude or p.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error):
            if p.environ().get("SSE_SOAK_MARK") == mark and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
    return found


async def normal_call(url: str) -> str:
    async with Client(url, timeout=300) as client:
        result = await client.call_tool("test_patch", {}, raise_on_error=False)
    return result.content[0].text


async def killed_call(url: str, rng: random.Random) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLIENT, url, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    await asyncio.sleep(rng.uniform(0.3, 1.5))  # python start-up, then somewhere in the call
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    await proc.wait()


async def cancelled_call(url: str, rng: random.Random) -> None:
    task = asyncio.create_task(normal_call(url))
    await asyncio.sleep(rng.uniform(0.05, 0.6))
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


class Soak:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.work = work
        self.mark = uuid.uuid4().hex
        self.task = write_task(work / "task")
        self.tmp = work / "tmp"  # the daemon's temp folder: its workspaces
        self.logs = work / "logs"
        self.tmp.mkdir()
        self.env = {
            **os.environ,
            "SSE_DIFFICULTY": "2",
            "SSE_SOAK_MARK": self.mark,
            "TMPDIR": str(self.tmp),
            "SSE_DAEMON_LOG_BUDGET": "1M",
            "SSE_DAEMON_HEARTBEAT": "0.5",
        }
        if args.no_sandbox:
            self.env["SSE_NO_SANDBOX"] = "1"
        self.stack = Stack(socket=work / "d.sock", port=free_port(), env=self.env)
        self.outputs = []
        self.answers: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.other_texts: list[str] = []
        self.restarts = 0

    def _out(self, name: str):
        f = open(self.work / f"{name}-{len(self.outputs)}.out", "wb")
        self.outputs.append(f)
        return f

    def start_daemon(self) -> None:
        self.stack.start_daemon(self.task, stdout=self._out("daemon"), stderr=subprocess.STDOUT)

    def restart_daemon(self) -> None:
        assert self.stack.daemon is not None
        self.restarts += 1
        if self.restarts % 2:
            stop(self.stack.daemon)
        else:
            self.stack.daemon.kill()  # SIGKILL: checks must die with it, the workspace is swept later
            self.stack.daemon.wait()
        self.start_daemon()

    def start(self) -> None:
        self.start_daemon()
        self.stack.start_server(log_dir=self.logs, stdout=self._out("server"), stderr=subprocess.STDOUT)

    def close(self) -> None:
        self.stack.stop()
        for f in self.outputs:
            f.close()

    async def one(self, index: int) -> None:
        roll = self.rng.random()
        url = self.stack.url
        if roll < self.args.kill_rate:
            self.kinds["client killed"] += 1
            await killed_call(url, self.rng)
        elif roll < self.args.kill_rate + self.args.cancel_rate:
            self.kinds["cancelled"] += 1
            await cancelled_call(url, self.rng)
        else:
            self.kinds["normal"] += 1
            text = await normal_call(url)
            if text == LEVEL_2_PASSED:
                self.answers["exact"] += 1
            elif text == INTERNAL_FAILURE:
                self.answers["internal failure"] += 1
            else:
                self.answers["OTHER"] += 1
                self.other_texts.append(text)

    async def calls(self) -> None:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(1, self.args.calls + 1):
            queue.put_nowait(i)
        done = 0
        restart_lock = asyncio.Lock()

        async def worker() -> None:
            nonlocal done
            while not queue.empty():
                index = queue.get_nowait()
                async with restart_lock:
                    pass
                await self.one(index)
                done += 1
                if done % self.args.restart_every == 0 and done < self.args.calls:
                    async with restart_lock:
                        # In this (the main) thread: the daemon dies with the thread that
                        # started it (PR_SET_PDEATHSIG), and executor threads come and go.
                        self.restart_daemon()
                if done % 50 == 0:
                    print(f"  {done} calls, {dict(self.kinds)}, answers {dict(self.answers)}", flush=True)

        await asyncio.gather(*(worker() for _ in range(self.args.workers)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--restart-every",
        type=int,
        default=100,
        metavar="N",
        help="restart the daemon after every N calls (default 100)",
    )
    parser.add_argument("--kill-rate", type=float, default=0.15)
    parser.add_argument("--cancel-rate", type=float, default=0.15)
    parser.add_argument("--keep", action="store_true", help="keep the work folder when a criterion fails")
    parser.add_argument("--no-sandbox", action="store_true", help="run the daemon with SSE_NO_SANDBOX=1")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="sse-soak-", dir="/tmp"))
    soak = Soak(args, work)
    started = time.monotonic()
    ok = False
    try:
        soak.start()
        assert soak.stack.server is not None
        server = psutil.Process(soak.stack.server.pid)
        warm = asyncio.run(normal_call(soak.stack.url))
        assert warm == LEVEL_2_PASSED, warm
        time.sleep(1)
        base_rss = server.memory_info().rss
        base_disk = disk_use(soak.tmp) + disk_use(soak.logs)

        asyncio.run(soak.calls())

        final = asyncio.run(normal_call(soak.stack.url))  # the daemon serves after it all
        time.sleep(3)  # post-run sweeps and background removals settle
        end_rss = server.memory_info().rss
        end_disk = disk_use(soak.tmp) + disk_use(soak.logs)
        exclude = {soak.stack.server.pid, soak.stack.daemon.pid if soak.stack.daemon else 0}
        leaked = marked(soak.mark, exclude)
        workspaces = sorted(p.name for p in soak.tmp.iterdir() if p.name.startswith("ssebench-daemon-"))
        elapsed = time.monotonic() - started

        budget = 1 * MiB
        checks = {
            "answers exact or internal": soak.answers["OTHER"] == 0 and final == LEVEL_2_PASSED,
            "0 leaked processes": not leaked,
            "disk back to baseline (within the 1 MiB log budget)": end_disk - base_disk <= budget,
            "one workspace (dead daemons' swept)": len(workspaces) == 1,
            "server RSS growth <= 20 MiB": end_rss - base_rss <= 20 * MiB,
        }
        print(
            f"\nsoak: {args.calls} calls in {elapsed:.0f} s, seed {args.seed}, {args.workers} workers, "
            f"{soak.restarts} daemon restarts (alternately SIGTERM and SIGKILL)"
        )
        print(f"  calls: {dict(soak.kinds)}")
        print(f"  normal answers: {dict(soak.answers)}; final call exact: {final == LEVEL_2_PASSED}")
        print(f"  leaked processes: {len(leaked)} {[(p.pid, p.name()) for p in leaked][:10]}")
        print(
            f"  disk (daemon temp + MCP_LOG_DIR): baseline {base_disk / 1024:.0f} KiB, "
            f"end {end_disk / 1024:.0f} KiB, growth {(end_disk - base_disk) / 1024:.0f} KiB"
        )
        print(f"  workspaces at the end: {len(workspaces)}")
        print(
            f"  server RSS: baseline {base_rss / MiB:.1f} MiB, end {end_rss / MiB:.1f} MiB, "
            f"growth {(end_rss - base_rss) / MiB:.1f} MiB"
        )
        for text in soak.other_texts[:3]:
            print("  unexpected answer:\n" + text[:500])
        for name, passed in checks.items():
            print(f"  [{'ok' if passed else 'FAILED'}] {name}")
        ok = all(checks.values())
        for p in leaked:
            with contextlib.suppress(psutil.Error):
                p.kill()
    finally:
        soak.close()
        if ok or not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"  kept {work} (daemon and server output)")
    return 0 if ok else 1


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
