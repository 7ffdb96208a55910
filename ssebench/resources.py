"""Where the data files the commands read at run time live, in a wheel or a checkout.

A wheel carries ``configs/`` (templates and the agent CLI pins), ``examples/`` (the demo
task and the demo job) and ``scripts/`` (the private Docker engine and the offline base image) inside the
package; a source checkout reaches the same names through the committed symlinks
``ssebench/configs`` etc. (docs/layout.md), and has the real folders beside
it. One lookup serves both so no command guesses at paths of its own.

The example task's PoCs and intent diff must never reach a task image, where an agent
could read them: the wheel installed there is made by :mod:`ssebench.container.selfwheel`,
which leaves out :data:`IMAGE_EXCLUDED` (tests/e2e/test_docker.py probes for them).
"""

from __future__ import annotations

import json
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent

#: folders of the wheel left out of the copy installed into task images
IMAGE_EXCLUDED = ("examples",)


def data_dir(name: str) -> Path:
    """``configs``, ``examples`` or ``scripts``: the folder inside the wheel, else the checkout's."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate.resolve()  # a checkout's link ssebench/NAME: the folder it names
    raise FileNotFoundError(f"ssebench's {name}/ folder was not found beside {_PACKAGE}")


def demo_job() -> Path:
    """The bundled demo job (``examples/jobs/demo.toml``: the demo task, a fixer and a do-nothing
    agent). In a wheel it sits inside the package, where ``ssebench doctor`` shows it (the
    README's ``ssebench jobs run examples/jobs/demo.toml`` assumes a checkout)."""
    try:
        return data_dir("examples") / "jobs" / "demo.toml"
    except FileNotFoundError:
        return _PACKAGE / "examples" / "jobs" / "demo.toml"  # missing: doctor says so


def checkout() -> Path | None:
    """The source checkout ssebench runs from (editable install), or None for a wheel."""
    root = _PACKAGE.parent
    project = root / "pyproject.toml"
    if (
        project.is_file()
        and (root / "server" / "__init__.py").is_file()
        and 'name = "ssebench"' in project.read_text(encoding="utf-8", errors="replace")
    ):
        return root
    return None


def cli_pins_file() -> Path:
    """The one file pinning the agent CLIs (npm package.json; its lock sits beside it).

    The Docker agent layers install these versions, ``ssebench run``'s preflight and
    ``ssebench doctor`` compare the installed CLIs with them, and the end-to-end tests
    (tests/e2e/conftest.py) install exactly this file with its lock.
    """
    return data_dir("configs") / "agent-clis" / "package.json"


class PinError(Exception):
    """The pin file is missing or does not pin the package; says which and where."""


def pinned_version(package: str, pins_file: Path | None = None) -> str:
    """The exact version of the npm PACKAGE in *pins_file* (default :func:`cli_pins_file`)."""
    path = pins_file or cli_pins_file()
    try:
        pins = json.loads(path.read_text(encoding="utf-8"))["dependencies"]
    except FileNotFoundError:
        raise PinError(f"the CLI pins are missing: {path} does not exist") from None
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise PinError(f'{path}: no readable "dependencies" object ({error})') from None
    version = pins.get(package) if isinstance(pins, dict) else None
    if not isinstance(version, str) or not version[:1].isdigit():
        raise PinError(f'{path}: "dependencies" has no exact version for {package}')
    return version


def script(name: str) -> Path:
    """A shipped helper script (``docker-engine.sh``, ``docker-base-image.sh``)."""
    return data_dir("scripts") / name
