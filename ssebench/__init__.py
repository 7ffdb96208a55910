"""ssebench: let a coding agent check its own vulnerability fix while it works.

The distribution installs one import namespace. ``ssebench/`` holds the core (task
file, difficulty rule, daemon, grading, CLI); the top-level folders ``server/`` and
``agents/`` are installed as ``ssebench.server`` and ``ssebench.agents`` (hatchling
``sources`` mapping in pyproject.toml).
"""

from pathlib import Path as _Path

__version__ = "0.1.0"

# Editable installs put only this folder on the import path, so hatchling's
# ``sources`` remapping does not apply there; in a source checkout the sibling
# folders are added to this package's search path to give the same names a
# wheel gives. In an installed wheel they already sit inside this package.
_checkout = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).parent / "server").is_dir() and (_checkout / "server" / "__init__.py").is_file():
    __path__.append(str(_checkout))  # type: ignore[name-defined]
