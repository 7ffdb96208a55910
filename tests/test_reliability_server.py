"""Reliability of the MCP server (issue 11): idle sessions expire, MCP_LOG_DIR is bounded
and survives a full disk, ``serve`` claims the daemon's socket folder as the daemon does.
Real server and daemon processes, real MCP clients over HTTP, a real small tmpfs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from fastmcp import Client

from ssebench.daemon.paths import SocketError, resolve_client_socket
from ssebench.difficulty import Check
from ssebench.server.limits import ServerLimits, parse_duration
from ssebench.server.logdir import LogDir
from ssebench.server.longlog import capture
from ssebench.server.report import INTERNAL_FAILURE, SAVE_FAILED_LINE
from ssebench.server.stack import Stack, free_port, running_stack
from tests.helpers.daemon import run_ssebench
from tests.helpers.tmpfs import small_tmpfs, used_bytes

pytestmark = pytest.mark.timeout(240)

MiB = 1 << 20

# BIG: print that many MiB of words, then fail. SLOW: sleep that many seconds first.
BUILD = r"""
if [ -e SLOW ]; then sleep "$(cat SLOW)"; fi
if [ -e BIG ]; then yes "word word word word word word word" | head -c "$(( $(cat BIG) * 1048576 ))"; echo; echo "the end" >&2; exit 1; fi
exit 0
"""

LEVEL_2_PASSED = """test_patch result: every check that ran passed.

Checks:
- build: passed
- functional tests: passed

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them. Without the PoCs, this result does not show whether the vulnerability is fixed."""

LEVEL_2_BUILD_FAILED_HEAD = """test_patch result: FAILED. The project failed to build. Please reassess the correctness of your patch.

Checks:
- build: FAILED
- functional tests: not run (the build failed)

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them.

Truncated log (build):
"""


def write_task(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "README").write_text("tree\n")
    task = root / "task.toml"
    task.write_text(
        'id = "reliability"\nsource = "src"\ndescription = "A test task."\n\n'
        f"[build]\nrun = '''{BUILD}'''\ntimeout = 120\n\n[functional]\nrun = \"true\"\n"
    )
    return task


@contextlib.contextmanager
def stack(tmp_path: Path, *, log_dir: Path | None = None, env: dict[str, str] | None = None) -> Iterator[Stack]:
    task = write_task(tmp_path / "task")
    work = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))  # short: the socket path
    environ = {**os.environ, **(env or {})}
    try:
        with running_stack(task, work, difficulty="2", env=environ, log_dir=log_dir or work / "logs") as s:
            yield s
    finally:
        shutil.rmtree(work, ignore_errors=True)


def tree(tmp_path: Path) -> Path:
    return tmp_path / "task" / "src"


def set_markers(tmp_path: Path, **markers: str) -> None:
    for name in ("BIG", "SLOW"):
        with contextlib.suppress(FileNotFoundError):
            (tree(tmp_path) / name).unlink()
    for name, value in markers.items():
        (tree(tmp_path) / name).write_text(value)


async def call(url: str) -> str:
    async with Client(url, timeout=180) as client:
        result = await client.call_tool("test_patch", {}, raise_on_error=False)
    return result.content[0].text


def call_sync(url: str) -> str:
    return asyncio.run(call(url))


def saved_logs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix == ".txt")


# -- item 1: MCP_LOG_DIR on a full disk, and its retention --------------------------------------


@pytest.mark.slow
def test_a_log_bigger_than_the_log_disk_is_reported_and_the_next_log_is_saved(tmp_path):
    with small_tmpfs(tmp_path / "disk", "20m") as disk, stack(tmp_path, log_dir=disk) as s:
        set_markers(tmp_path, BIG="4")
        first = call_sync(s.url)
        assert first.startswith(LEVEL_2_BUILD_FAILED_HEAD)
        (saved,) = saved_logs(disk)
        assert first.endswith(f"\n\nFull log available at {saved}")

        set_markers(tmp_path, BIG="30")  # 30 MiB of log, 20 MiB of disk
        second = call_sync(s.url)
        assert second.startswith(LEVEL_2_BUILD_FAILED_HEAD)
        assert second.endswith("\nthe end\n\n" + SAVE_FAILED_LINE)  # the spec's line; the tail is still shown
        assert saved_logs(disk) == []  # the old log made room, the partial file is gone
        assert used_bytes(disk) < MiB

        set_markers(tmp_path, BIG="4")
        third = call_sync(s.url)
        (saved,) = saved_logs(disk)
        assert third.endswith(f"\n\nFull log available at {saved}")
        assert saved.stat().st_size > 4 * MiB
        set_markers(tmp_path)
        assert call_sync(s.url) == LEVEL_2_PASSED


@pytest.mark.slow
def test_a_build_that_fills_the_daemons_disk_is_an_internal_failure_and_the_next_call_works(tmp_path):
    with small_tmpfs(tmp_path / "disk", "20m") as disk, stack(tmp_path, env={"TMPDIR": str(disk)}) as s:
        assert call_sync(s.url) == LEVEL_2_PASSED
        set_markers(tmp_path, BIG="30")  # 30 MiB of build log in the daemon's 20 MiB workspace
        assert call_sync(s.url) == INTERNAL_FAILURE  # never "FAILED. The project failed to build"
        set_markers(tmp_path)
        assert call_sync(s.url) == LEVEL_2_PASSED
        assert used_bytes(disk) < 8 * MiB


def _capture(folder: LogDir, size: int) -> Path:
    line = b"word " * 20 + b"\n"
    data = line * (size // len(line) + 1)
    section = capture(lambda feed: feed(data[:size]), folder, Check.BUILD)
    assert section.saved_path is not None
    return Path(section.saved_path)


def test_saved_logs_are_kept_by_total_size_and_age_oldest_first(tmp_path):
    folder = LogDir.prepare(tmp_path / "logs", ServerLimits(log_max_bytes=3 * MiB, log_max_age=86400))
    try:
        foreign = tmp_path / "logs" / "notes.txt"
        foreign.write_text("not ours\n")
        linked = tmp_path / "logs" / f"{uuid.uuid4()}.txt"
        linked.symlink_to(foreign)
        first = _capture(folder, MiB)
        os.utime(first, (time.time() - 30, time.time() - 30))
        second = _capture(folder, MiB)
        os.utime(second, (time.time() - 20, time.time() - 20))
        third = _capture(folder, MiB)
        assert {first, second, third} <= set(saved_logs(tmp_path / "logs"))
        fourth = _capture(folder, 2 * MiB)  # over 3 MiB: the two oldest go
        assert not first.exists() and not second.exists()
        assert third.exists() and fourth.exists()
        big = _capture(folder, 4 * MiB)  # alone over the limit: kept, all others go
        assert big.exists() and not third.exists() and not fourth.exists()
        # Age: a log older than the limit goes at the next save, whatever the size.
        os.utime(big, (time.time() - 2 * 86400, time.time() - 2 * 86400))
        small = _capture(folder, MiB // 4)
        assert not big.exists() and small.exists()
        assert foreign.read_text() == "not ours\n" and linked.is_symlink()
    finally:
        folder.close()


def test_an_old_log_is_removed_at_start_up(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    old = logs / f"{uuid.uuid4()}.txt"
    old.write_text("old\n")
    os.utime(old, (time.time() - 8 * 86400, time.time() - 8 * 86400))
    recent = logs / f"{uuid.uuid4()}.txt"
    recent.write_text("recent\n")
    folder = LogDir.prepare(logs, ServerLimits())  # default age: 7 days
    folder.close()
    assert not old.exists() and recent.exists()


def test_limits_from_the_environment():
    assert ServerLimits.from_env({}) == ServerLimits(600.0, 1 << 30, 7 * 86400.0)
    limits = ServerLimits.from_env(
        {"SSE_MCP_SESSION_IDLE": "90s", "SSE_MCP_LOG_MAX_SIZE": "256M", "SSE_MCP_LOG_MAX_AGE": "2d"}
    )
    assert limits == ServerLimits(90.0, 256 << 20, 2 * 86400.0)
    assert parse_duration("X", "1.5") == 1.5 and parse_duration("X", "10m") == 600
    for bad in ("0", "-1", "ten", "5w", "inf", "nan"):
        with pytest.raises(ValueError, match=f"X must be a positive duration .*got '{re.escape(bad)}'"):
            parse_duration("X", bad)


@pytest.mark.parametrize(
    "var, value, message",
    [
        (
            "SSE_MCP_SESSION_IDLE",
            "soon",
            "ssebench: SSE_MCP_SESSION_IDLE must be a positive duration (e.g. 600, 10m, 2h, 7d), got 'soon'",
        ),
        (
            "SSE_MCP_LOG_MAX_SIZE",
            "lots",
            "ssebench: SSE_MCP_LOG_MAX_SIZE must be a size in bytes (e.g. 1073741824, 512M, 1G), got 'lots'",
        ),
        (
            "SSE_MCP_LOG_MAX_AGE",
            "-3d",
            "ssebench: SSE_MCP_LOG_MAX_AGE must be a positive duration (e.g. 600, 10m, 2h, 7d), got '-3d'",
        ),
    ],
)
def test_a_bad_limit_stops_serve_before_anything_starts(var, value, message):
    port = free_port()
    done = run_ssebench("serve", "--port", str(port), env={var: value}, timeout=60)
    assert (done.returncode, done.stderr, done.stdout) == (2, message + "\n", "")


# -- item 6: serve claims the daemon's default socket folder as the daemon does ----------------


@pytest.mark.parametrize("problem", ["other uid", "symlink", "open to others"])
def test_serve_refuses_a_default_socket_folder_the_daemon_refuses(tmp_path, problem):
    runtime = tmp_path / "run"
    runtime.mkdir()
    folder = runtime / "ssebench"
    if problem == "other uid":
        if os.geteuid() != 0:
            pytest.skip("chown to another uid needs root")
        folder.mkdir(mode=0o700)
        os.chown(folder, 65534, 65534)
        detail = f"{folder}: is owned by uid 65534, not by us (uid {os.getuid()})"
    elif problem == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
        detail = f"{folder}: is a symlink; refusing to put the daemon socket there"
    else:
        folder.mkdir()
        os.chmod(folder, 0o777)
        detail = f"{folder}: is accessible by other users (mode 777); expected 0700"
    env = {"XDG_RUNTIME_DIR": str(runtime), "SSE_DAEMON_SOCKET": "", "SSE_DIFFICULTY": "2"}
    served = run_ssebench("serve", "--port", str(free_port()), env=env, timeout=60)
    assert (served.returncode, served.stderr, served.stdout) == (1, f"ssebench serve: {detail}\n", "")
    task = write_task(tmp_path / "task")
    daemon = run_ssebench("daemon", "--task", str(task), env=env, timeout=60)
    assert (daemon.returncode, daemon.stderr) == (1, f"ssebench daemon: {detail}\n")


def test_serve_creates_a_missing_default_socket_folder_0700(tmp_path):
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    path = resolve_client_socket(None, env)
    assert path == tmp_path / "ssebench" / "daemon.sock"
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    os.chmod(path.parent, 0o755)
    with pytest.raises(SocketError, match="is accessible by other users"):
        resolve_client_socket(None, env)
    # An explicit socket (flag or SSE_DAEMON_SOCKET) is the operator's choice, as for the daemon.
    assert resolve_client_socket(None, {**env, "SSE_DAEMON_SOCKET": "/x/d.sock"}) == Path("/x/d.sock")
    assert resolve_client_socket("/y/d.sock", env) == Path("/y/d.sock")


# -- item 9: idle MCP sessions expire ------------------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "many", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def open_sessions(url: str, count: int, concurrency: int = 16) -> list[str]:
    """Open *count* sessions (initialize), never closing them: abandoned clients."""
    ids: list[str] = []
    limit = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=60) as http:

        async def one() -> None:
            async with limit:
                r = await http.post(url, json=INITIALIZE, headers=HEADERS)
                assert r.status_code == 200, r.text
                ids.append(r.headers["mcp-session-id"])

        await asyncio.gather(*(one() for _ in range(count)))
    return ids


async def statuses(url: str, ids: list[str], concurrency: int = 16) -> set[int]:
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    limit = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=60) as http:

        async def one(sid: str) -> int:
            async with limit:
                r = await http.post(
                    url, json=ping, headers={**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
                )
            return r.status_code

        return set(await asyncio.gather(*(one(sid) for sid in ids)))


@pytest.mark.slow
def test_idle_sessions_expire_and_their_memory_is_reused(tmp_path):
    idle = 4.0
    per_round = 600  # ~14 MiB of server memory while they live (~24 KiB each)
    with stack(tmp_path, env={"SSE_MCP_SESSION_IDLE": str(idle)}) as s:
        server = psutil.Process(s.server.pid)
        after_round: list[int] = []
        for _ in range(3):
            ids = asyncio.run(open_sessions(s.url, per_round))
            assert asyncio.run(statuses(s.url, ids[-3:])) == {200}  # the last ones live (a ping resets them)
            time.sleep(idle + 1)  # nobody touches them any more
            assert asyncio.run(statuses(s.url, ids[::10])) == {404}  # gone: a client must initialize anew
            after_round.append(server.memory_info().rss)
        # Sessions kept forever would add ~14 MiB a round; expired ones leave memory for the next.
        growth = after_round[2] - after_round[0]
        assert growth < 8 * MiB, [f"{r / MiB:.1f} MiB" for r in after_round]


@pytest.mark.slow
def test_a_call_longer_than_the_idle_timeout_keeps_its_session(tmp_path):
    with stack(tmp_path, env={"SSE_MCP_SESSION_IDLE": "1"}) as s:
        set_markers(tmp_path, SLOW="4")

        async def scenario() -> tuple[str, list[str]]:
            async with Client(s.url, timeout=180) as client:
                result = await client.call_tool("test_patch", {}, raise_on_error=False)
                tools = await client.list_tools()  # the same session, right after the long call
            return result.content[0].text, [t.name for t in tools]

        text, tools = asyncio.run(scenario())
        assert text == LEVEL_2_PASSED
        assert tools == ["test_patch"]


def test_internal_failure_text_is_the_spec_sentence():
    assert INTERNAL_FAILURE == ("An internal testing failure occurred. Your patch is not responsible for this failure.")
