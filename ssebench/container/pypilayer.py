"""A PyPI agent's Docker layer (``Agent.registry == "pypi"``): its build context, made on the host.

The layer (configs/docker/agent-pypi.Dockerfile.j2) installs the CLI into a venv of its own from
the hashed lock beside its pins, offline, from wheels built here by ``pip wheel`` with the
Python the layer will run it with (so compiled wheels match it), cached per agent, version and
Python. An agent that needs a newer Python than the task image's (Debian bookworm's 3.11) gets
this machine's interpreter of that version copied in (found as agents/pypi.py finds one for a
host install: python3.N on PATH, else pyenv's), as the npm agents get the host's Node: no
registry but PyPI is reachable, and Debian bookworm has no newer Python.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from ssebench.container.engine import DockerRunError, cache_dir, fill_cache

LOCK = "requirements.txt"


def build_python(minimum: tuple[int, ...]) -> str:
    """The interpreter that builds the wheels (and, for a newer Python, is copied into the layer)."""
    from ssebench.agents.pypi import find_python
    from ssebench.container.dockerfile import own_python

    if not own_python(minimum):
        return sys.executable  # the image's Python version, and pip is in our venv
    found = find_python(minimum)
    if found is None:
        wanted = own_python(minimum)
        raise DockerRunError(f"the layer needs Python {wanted}: no python{wanted} on PATH or in ~/.pyenv/versions")
    return found


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise DockerRunError(f"{what} failed (exit {done.returncode}):\n{tail}")
    return done.stdout


def cli_dir(agent: str) -> Path:
    """AGENT's lock and its wheels (built with its Python), cached; made when missing."""
    from ssebench.agents import pypi
    from ssebench.agents.registry import AGENTS

    record = AGENTS[agent]
    python = build_python(record.python_min)
    version = _run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], f"{python} --version").strip()
    target = cache_dir() / "agent-cli" / f"{agent}-{record.pin()}-py{version}"
    if (target / "wheels").is_dir():
        return target

    def fill(staging: Path) -> None:
        shutil.copyfile(pypi.lock_file(record), staging / LOCK)
        argv = [python, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps"]
        _run([*argv, "--require-hashes", "-r", str(staging / LOCK), "-w", str(staging / "wheels")], "pip wheel")

    return fill_cache(target, f"{agent}-", fill)


def python_prefix(minimum: tuple[int, ...]) -> Path | None:
    """The installation of the Python the layer carries (None: it uses the image's)."""
    from ssebench.container.dockerfile import own_python

    if not own_python(minimum):
        return None
    python = build_python(minimum)
    return Path(_run([python, "-c", "import sys; print(sys.base_prefix)"], f"{python} -c sys.base_prefix").strip())


def copy_python(prefix: Path, target: Path) -> None:
    """PREFIX into TARGET without its test suite and its site-packages (the venv brings its own)."""

    def skipped(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        if here.parent == prefix / "lib" and here.name.startswith("python3"):
            return {n for n in names if n in ("test", "site-packages", "idlelib", "tkinter", "turtledemo")}
        return set()

    shutil.copytree(prefix, target, symlinks=True, ignore=skipped)
