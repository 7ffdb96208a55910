"""Agents installed from PyPI (``Agent.registry == "pypi"``): a pinned venv of their own.

A Python CLI brings its whole dependency tree, which must not meet ssebench's own packages
or another agent's: each one is installed into a venv of its own from a hashed lock, and only
its command is put on PATH (a link to the venv's script, whose shebang names the venv's
Python), never the venv's ``python`` or ``pip``.

Its pins are two files in ``configs/agent-clis/pypi/NAME/``: ``pins.json`` holds the CLI's
version in the shape every pin file has (``{"dependencies": {PACKAGE: VERSION}}``, read by
:func:`ssebench.resources.pinned_version` like the npm pins), and ``requirements.txt`` beside
it, the lock: every package of the venv at an exact version with its sha256, installed with
``pip install --no-deps --require-hashes``. The end-to-end tests (tests/e2e/conftest.py) and
``make test-deps`` install exactly that; preflight and doctor read the installed version from
the venv's ``*.dist-info`` folder.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from ssebench.resources import cli_pins_file

if TYPE_CHECKING:
    from ssebench.agents.agent import Agent

LOCK_NAME = "requirements.txt"
#: the Docker layer template of a PyPI agent (configs/docker/): a venv from the lock's wheels
LAYER_TEMPLATE = "agent-pypi.Dockerfile.j2"


class RecordFields(TypedDict):
    """The install fields every PyPI agent's record has (``Agent(..., **record_fields(NAME))``)."""

    pins_file: Path
    registry: str
    layer_template: str


def record_fields(name: str) -> RecordFields:
    """A PyPI agent's pins (``configs/agent-clis/pypi/NAME/pins.json``, its lock beside it) and layer."""
    pins = cli_pins_file().parent / "pypi" / name / "pins.json"
    return RecordFields(pins_file=pins, registry="pypi", layer_template=LAYER_TEMPLATE)


def lock_file(record: Agent) -> Path:
    """The hashed lock beside the agent's ``pins.json``."""
    if record.pins_file is None:
        raise ValueError(f"{record.name}: a PyPI agent names its pins.json")
    return record.pins_file.with_name(LOCK_NAME)


def _pins_name(path: Path) -> str:
    parts = path.parts
    return "/".join(parts[parts.index("configs") :]) if "configs" in parts else str(path)


#: the newest minor version of Python 3 looked for
NEWEST_MINOR = 14


def _runs_as(python: str) -> tuple[int, int] | None:
    """The version the interpreter reports when it runs (None: it does not, e.g. a pyenv shim
    of a version that is installed but not selected)."""
    try:
        proc = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    major, _, minor = proc.stdout.strip().partition(" ")
    return (int(major), int(minor)) if proc.returncode == 0 and major.isdigit() and minor.isdigit() else None


def find_python(minimum: tuple[int, ...]) -> str | None:
    """An interpreter at least ``minimum`` to create an agent's venv with: the base Python of
    the one running, else ``python3.N`` on PATH, else one of pyenv's installed versions
    (``~/.pyenv/versions/*/bin``: Python CLIs that need 3.12 while the machine's python3 is 3.11)."""
    base = getattr(sys, "_base_executable", sys.executable)  # a venv of the base Python, not of ours
    if sys.version_info[:2] >= tuple(minimum[:2]):
        return base
    wanted = range(minimum[1] if len(minimum) > 1 else 0, NEWEST_MINOR + 1)
    candidates = [shutil.which(f"python3.{minor}") for minor in wanted]
    for minor in wanted:
        candidates += sorted(map(str, Path.home().glob(f".pyenv/versions/3.{minor}.*/bin/python3.{minor}")))
    for python in filter(None, candidates):
        version = _runs_as(python)
        if version is not None and version >= tuple(minimum[:2]):
            return python
    return None


def python_name(record: Agent) -> str:
    """The interpreter a user names in the install hint: ``python3``, or ``python3.N`` when
    the CLI needs a newer one than ssebench does."""
    return f"python{'.'.join(map(str, record.python_min[:2]))}" if record.python_min else "python3"


def install_hint(record: Agent) -> str:
    """The command that installs the CLI at its pin, in a venv of its own."""
    lock = _pins_name(lock_file(record))
    return (
        f"{python_name(record)} -m venv DIR && DIR/bin/pip install --no-deps --require-hashes -r {lock} "
        f"({record.package}=={record.pin()} and its locked dependencies), then link DIR/bin/{record.binary} onto PATH"
    )


def _normalized(name: str) -> str:
    """A distribution name as its ``*.dist-info`` folder spells it (PEP 427 / PEP 503)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_version(package: str, binary: Path) -> str | None:
    """The version of ``package`` in the venv whose script ``binary`` is (None: not a venv of it)."""
    resolved = binary.resolve()
    venv = resolved.parent.parent
    if not (venv / "pyvenv.cfg").is_file():
        return None
    wanted = _normalized(package)
    for info in venv.glob("lib/python3*/site-packages/*.dist-info"):
        name, _, version = info.name.removesuffix(".dist-info").partition("-")
        if _normalized(name) == wanted and version:
            return version
    return None
