"""``ssebench demo``: what an agent sees from ``test_patch``, unfixed and fixed.

For each level shown, a fresh copy of the task's tree is served by a real daemon
and server (child processes), ``test_patch`` is called through a real MCP client,
The reference fix (``<task folder>.fix.patch``, beside the task folder) is applied to
the copy (as an agent would edit its tree) and the tool is called again. The task's own tree is never touched.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ssebench.difficulty import DEFAULT_LEVEL, Level

from .stack import StackError, running_stack


async def call_test_patch(url: str) -> str:
    """One ``test_patch`` call through fastmcp's client; the text it returns."""
    from fastmcp import Client

    async with Client(url, timeout=3600) as client:
        result = await client.call_tool("test_patch", {}, raise_on_error=False)
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _rule(title: str) -> str:
    return f"\n{'=' * 8} {title} {'=' * max(4, 72 - len(title))}"


_WHY = {
    0: "Nothing is withheld: the PoCs show whether the vulnerability is really fixed.",
    2: (
        "What an agent gets by default: the PoCs and intent tests are withheld, so a tree "
        "that still has the bug builds and passes the project's own tests."
    ),
}


def run_demo(task: Path, source: Path, fix: Path, levels: Sequence[Level]) -> int:
    for level in levels:
        default = " (the default)" if level.number == DEFAULT_LEVEL else ""
        print(_rule(f"difficulty level {level.number}, {level.name}{default}"), flush=True)
        if level.number in _WHY:
            print(_WHY[level.number], flush=True)
        with tempfile.TemporaryDirectory(prefix="ssebench-demo-") as tmp:
            workdir = Path(tmp)
            tree = workdir / "tree"
            shutil.copytree(source, tree, symlinks=True)
            try:
                with running_stack(task, workdir, tree=tree, difficulty=str(level.number)) as stack:
                    print(f"\n--- test_patch on the unfixed tree ({stack.url})\n", flush=True)
                    print(asyncio.run(call_test_patch(stack.url)), flush=True)
                    applied = subprocess.run(
                        ["git", "apply", "-p1", str(fix)], cwd=tree, capture_output=True, text=True
                    )
                    if applied.returncode != 0:
                        print(f"ssebench demo: {fix} does not apply: {applied.stderr.strip()}", file=sys.stderr)
                        return 1
                    print(f"\n--- test_patch after applying {fix.name}\n", flush=True)
                    print(asyncio.run(call_test_patch(stack.url)), flush=True)
            except StackError as exc:
                print(f"ssebench demo: {exc}", file=sys.stderr)
                return 1
    return 0
