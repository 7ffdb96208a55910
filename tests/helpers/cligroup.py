"""A CLI run in a process group of its own, and the one error for a CLI that overstays.

Here, not in tests/e2e/conftest.py: pytest imports a conftest as the module ``conftest``, and a
test that imports it as ``tests.e2e.conftest`` gets a second copy with its own classes, so an
``except CliTimedOut`` there never catches what the first copy raised (seen in CI).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path


class CliTimedOut(AssertionError):
    """A CLI did not finish within its limit (a test that expects this may catch it)."""


def run_group(
    argv: list[str], *, env: Mapping[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run a CLI in its own process group with empty stdin; whatever it started is killed
    when it ends or times out (a CLI may leave helpers behind), so no test leaks processes."""
    proc = subprocess.Popen(
        argv,
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        raise CliTimedOut(f"{argv[0]} did not finish in {timeout} s:\n{out[-3000:]}\n{err[-3000:]}") from None
    finally:
        _kill_group(proc.pid)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
