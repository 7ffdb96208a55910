"""A small real tmpfs, for tests of a full disk (needs root: ``mount -t tmpfs``).

with small_tmpfs(tmp_path / "disk", "20m") as disk:
    ...  # disk is a 20 MiB filesystem; unmounted (lazily if busy) on exit
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def can_mount() -> str | None:
    """None when a tmpfs can be mounted here, else why not."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("mount") is None:
        return "no mount command"
    return None


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str = "20m") -> Iterator[Path]:
    reason = can_mount()
    if reason:
        pytest.skip(reason)
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def used_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize
