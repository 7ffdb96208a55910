"""Shared pieces of the server tests: a task whose outcome the tree controls, and a client.

The task's commands look for marker files in the tree under test, so one daemon and
server per level serve every scenario: the test changes the tree between calls,
exactly as an agent does. No tests here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from fastmcp import Client

from ssebench.server.stack import Stack, running_stack

# Markers: each one, present in the tree, breaks one check (or changes the log).
BREAK_BUILD = "BREAK_BUILD"
BREAK_FUNCTIONAL = "BREAK_FUNCTIONAL"
BREAK_INTENT = "BREAK_INTENT"
VULN_P2 = "vuln-p2"  # the second PoC still triggers the bug
LONG_BUILD = "LONG_BUILD"  # the build prints 30,000 numbered lines, then fails
SLOW_BUILD = "SLOW_BUILD"  # the build runs `sleep <content>` (tests find that process)
MARKERS = (BREAK_BUILD, BREAK_FUNCTIONAL, BREAK_INTENT, VULN_P2, LONG_BUILD, SLOW_BUILD)

BUILD = r"""
echo "building"
if [ -e SLOW_BUILD ]; then sleep "$(cat SLOW_BUILD)"; fi
if [ -e LONG_BUILD ]; then seq 1 30000 | sed 's/^/line /'; echo "the end" >&2; exit 1; fi
if [ -e BREAK_BUILD ]; then echo "build broke" >&2; exit 1; fi
exit 0
"""
POC = r"""
name=$(basename "$SSE_POC")
echo "running $name"
if [ -e "vuln-$name" ]; then echo "ERROR: AddressSanitizer: stack-buffer-overflow ($name)" >&2; exit 1; fi
"""
FUNCTIONAL = r"""
echo "functional tests"
if [ -e BREAK_FUNCTIONAL ]; then echo "functional test 3 failed" >&2; exit 1; fi
"""
INTENT_DIFF = """\
diff --git a/intent_test.sh b/intent_test.sh
new file mode 100644
--- /dev/null
+++ b/intent_test.sh
@@ -0,0 +1,3 @@
+echo "intent tests"
+if [ -e BREAK_INTENT ]; then echo "intent test failed" >&2; exit 1; fi
+exit 0
"""


def _toml_str(text: str) -> str:
    return "'''" + text + "'''"


def write_task(root: Path, *, pocs: bool = True, intent: bool = True, functional: bool = True) -> Path:
    """A task under ``root``; returns its task.toml. The tree is ``root/src``."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    lines = ['id = "server-test"', 'source = "src"', 'description = "A test task."', ""]
    lines += ["[build]", f"run = {_toml_str(BUILD)}", "timeout = 120", ""]
    if pocs:
        (root / "pocs").mkdir()
        for name in ("p1", "p2"):
            (root / "pocs" / name).write_text(f"poc {name}\n")
        lines += ["[pocs]", f"run = {_toml_str(POC)}", 'files = ["pocs/p1", "pocs/p2"]', ""]
    if functional:
        lines += ["[functional]", f"run = {_toml_str(FUNCTIONAL)}", ""]
    if intent:
        (root / "intent.diff").write_text(INTENT_DIFF)
        lines += ["[intent]", 'diff = "intent.diff"', 'run = "sh intent_test.sh"', ""]
    task = root / "task.toml"
    task.write_text("\n".join(lines))
    return task


def set_markers(tree: Path, **markers: str | bool) -> None:
    """Put exactly these markers in the tree (a string value becomes the file's content)."""
    for name in MARKERS:
        with contextlib.suppress(FileNotFoundError):
            (tree / name).unlink()
    for name, value in markers.items():
        if value is not False:
            (tree / name).write_text(value if isinstance(value, str) else "x\n")


@dataclass
class Served:
    """A running stack on a task the test owns."""

    stack: Stack
    task: Path
    tree: Path
    workdir: Path
    log_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_dir = self.workdir / "logs"


@contextlib.contextmanager
def serve_task(
    level: str | None,
    *,
    server_args: tuple[str, ...] = (),
    start_daemon: bool = True,
    log_dir: Path | None = None,
    **task_kw: bool,
) -> Iterator[Served]:
    with tempfile.TemporaryDirectory(prefix="ssebench-test-") as tmp:
        root = Path(tmp)
        os.chmod(root, 0o700)
        task = write_task(root / "task", **task_kw)
        work = root / "work"
        work.mkdir(mode=0o700)
        with running_stack(
            task,
            work,
            difficulty=level,
            server_args=server_args,
            start_daemon=start_daemon,
            log_dir=log_dir,
        ) as stack:
            served = Served(stack, task, root / "task" / "src", work)
            if log_dir is not None:
                served.log_dir = log_dir
            yield served


@dataclass
class Call:
    text: str
    is_error: bool
    progress: list[tuple[float, float | None, str | None]]
    received: list[float] = field(default_factory=list)  # time.monotonic() of each progress


async def call(url: str, *, timeout: float = 120) -> Call:
    progress: list[tuple[float, float | None, str | None]] = []
    received: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))
        received.append(time.monotonic())

    async with Client(url, timeout=timeout) as client:
        result = await client.call_tool("test_patch", {}, progress_handler=on_progress, raise_on_error=False)
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert result.structured_content is None
    return Call(result.content[0].text, result.is_error, progress, received)


def call_sync(url: str) -> Call:
    return asyncio.run(call(url))


def post_mcp(url: str, headers: dict[str, str]) -> httpx.Response:
    """A raw initialize request, to test the Host/Origin guard."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return httpx.post(url, json=body, headers={**base, **headers}, timeout=10)
