"""One import name per module: ``ssebench.server.report``, never also ``server.report``.

The check runs in a fresh interpreter of this venv, outside the checkout and with
PYTHONPATH unset (pytest itself puts the checkout on sys.path for ``tests.helpers``), so
it sees what the editable install exposes; tests/test_wheel_install.py runs the same
check in a plain wheel install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Imports every module under ssebench, then prints what a second name would show.
PROBE = r"""
import importlib, importlib.util, json, os, pkgutil, sys
import ssebench
SECOND = ("server", "agents", "tests", "configs", "examples", "scripts", "ssebench.ssebench", "ssebench.tests")
failed, seen = {}, []
def walk(package):
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.name in SECOND:
            seen.append(info.name)  # reported below; never walked (it would recurse for ever)
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception as exc:
            failed[info.name] = repr(exc)
            continue
        if info.ispkg:
            walk(module)
walk(ssebench)
files = {}
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if path and (name == "ssebench" or name.startswith("ssebench.")):
        files.setdefault(os.path.realpath(path), []).append(name)
stray = {}
for name in SECOND:
    try:
        spec = importlib.util.find_spec(name)
    except ImportError:
        spec = None
    if spec is not None or name in sys.modules or name in seen:
        stray[name] = str(spec and (spec.origin or list(spec.submodule_search_locations or ())))
import ssebench.server.report as report
print(json.dumps({"failed": failed, "twice": {f: n for f, n in files.items() if len(n) > 1}, "stray": stray,
                  "report": os.path.realpath(report.__file__), "modules": sum(map(len, files.values()))}))
"""


def probe(python: str, cwd: Path, env: dict[str, str] | None = None) -> dict:
    """Run :data:`PROBE` with *python* in *cwd*, PYTHONPATH unset; its findings."""
    clean = {k: v for k, v in (env or os.environ).items() if not k.startswith("PYTHON")}
    done = subprocess.run([python, "-c", PROBE], cwd=cwd, env=clean, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_every_module_has_one_name_in_the_editable_install(tmp_path: Path) -> None:
    found = probe(sys.executable, tmp_path)
    assert found["failed"] == {}
    assert found["twice"] == {}
    assert found["stray"] == {}
    assert found["report"] == str(REPO / "server" / "report.py")
    assert found["modules"] > 60  # the walk reached server/ and agents/ through the symlinks


def test_the_linked_folders_are_symlinks_into_the_checkout() -> None:
    for name in ("server", "agents", "configs", "examples", "scripts"):
        link = REPO / "ssebench" / name
        assert link.is_symlink() and os.readlink(link) == f"../{name}", name
