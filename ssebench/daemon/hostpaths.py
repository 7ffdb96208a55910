"""What every daemon and ``grade`` hides from its checks (docs/security.md): the task
folder, MCP_LOG_DIR and ssebench's own files, split from sandbox.py."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ssebench import settings

if TYPE_CHECKING:
    from ssebench.daemon.sandbox import Sandbox

MCP_LOG_VAR = "MCP_LOG_DIR"
DEFAULT_MCP_LOG_DIR = "/tmp/mcp/logs"


def own_files() -> list[Path]:
    """ssebench's own files on this host: its installed packages (``ssebench``, whose
    ``examples/`` holds the demo task's PoCs and intent diff, ``server``, ``agents``, the
    dist-info) or, run from a checkout (an editable install), the whole checkout."""
    import ssebench

    package = Path(ssebench.__file__).resolve().parent
    site = package.parent
    if (site / "pyproject.toml").is_file():
        return [site]
    found = [package] + [site / n for n in ("server", "agents") if (site / n / "__init__.py").is_file()]
    return found + sorted(site.glob("ssebench-*.dist-info"))


def hide_host_paths(box: Sandbox, task_dir: Path, environ: Mapping[str, str] | None = None) -> None:
    """What every daemon and ``grade`` hides from its checks besides its own workspace
    and socket: the task folder, MCP_LOG_DIR, ssebench's own files. Raises ValueError."""
    box.hide("the task folder", task_dir)
    box.hide(MCP_LOG_VAR, settings.raw(MCP_LOG_VAR, environ) or DEFAULT_MCP_LOG_DIR)
    for path in own_files():
        box.hide("ssebench's own files", path, env=False)  # PATH may name the venv: it stays
