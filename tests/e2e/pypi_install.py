"""The PyPI agents for the end-to-end tests: each in a venv of its own, from its hashed lock.

``install_pypi(pins_json, binary)`` creates ``CACHE/pypi-<hash of pins.json + lock>/venv``
with the Python running the tests (or a newer one the agent needs), installs ``requirements.txt`` there with
``--no-deps --require-hashes`` (exactly the lock, nothing resolved), and links the agent's
command into ``bin/`` beside it, which goes on the runs' PATH: only the command, never the
venv's ``python`` or ``pip`` (agents/pypi.py). Done once per lock hash, under a file lock,
like the npm pins (tests/e2e/conftest.py); ``make test-deps`` starts it in the background.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

INSTALL_TIMEOUT = 900


class NoPython(RuntimeError):
    """The agent needs a newer Python than this machine has (Debian's archive has none newer
    than its python3): its tests skip and say so, as they do without npm."""


def install_dir(cache: Path, pins_json: Path) -> Path:
    lock = pins_json.with_name("requirements.txt")
    digest = hashlib.sha256(pins_json.read_bytes() + lock.read_bytes()).hexdigest()[:16]
    return cache / f"pypi-{digest}"


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def install_pypi(
    cache: Path,
    pins_json: Path,
    binary: str,
    report: Callable[[str], None] = print,
    python_min: tuple[int, ...] = (),
) -> Path:
    """The ``bin`` folder holding ``binary``, a link into the agent's locked venv (made with a
    Python at least ``python_min``: agents/pypi.py's ``find_python``)."""
    from filelock import FileLock

    from ssebench.agents.pypi import find_python

    target = install_dir(cache, pins_json)
    bin_dir, stamp = target / "bin", target / "installed.json"
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / f"{target.name}.lock"), timeout=INSTALL_TIMEOUT + 60):
        if stamp.is_file() and (bin_dir / binary).exists():
            return bin_dir
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(mode=0o755)
        started = time.monotonic()
        base = find_python(python_min)
        if base is None:
            wanted = ".".join(map(str, python_min))
            raise NoPython(f"{pins_json.parent.name} needs Python {wanted} or newer: none found on PATH or in pyenv")
        steps = (
            [base, "-m", "venv", str(target / "venv")],
            [str(target / "venv" / "bin" / "pip"), "install", "--quiet", "--no-input", "--disable-pip-version-check",
             "--no-deps", "--require-hashes", "-r", str(pins_json.with_name("requirements.txt"))],
        )  # fmt: skip
        for argv in steps:
            proc = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=INSTALL_TIMEOUT
            )
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(argv[:4])} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
        bin_dir.mkdir()
        (bin_dir / binary).symlink_to(target / "venv" / "bin" / binary)
        seconds, size = time.monotonic() - started, _size(target)
        stamp.write_text(json.dumps({"seconds": round(seconds, 1), "bytes": size}))
        report(f"e2e: installed {pins_json.parent.name} into {target} in {seconds:.0f} s ({size / 2**20:.0f} MiB)")
    return bin_dir
