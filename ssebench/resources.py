"""Where the data files the commands read at run time live.

A wheel carries ``configs/`` inside the package (pyproject's force-include); a source
checkout or editable install has ``configs/`` and ``examples/`` beside it (the example
task stays out of the wheel: its PoCs must not ship into task images). One lookup
serves both so no command guesses at paths of its own.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """``configs`` or ``examples``: the folder inside the wheel, else the checkout's."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"ssebench's {name}/ folder was not found beside {_PACKAGE}")
