"""GitHub Copilot CLI: ``~/.copilot/mcp-config.json`` (``$COPILOT_HOME/mcp-config.json``).

The entry is ``{"type": "http", "url": ..., "tools": ["*"], "timeout": ms}``; ``timeout`` is
the per-call limit in milliseconds. A fixed shape, so a table row (agents/generic/table.py).
"""

from __future__ import annotations

from ssebench.agents.base import Unit
from ssebench.agents.generic.table import URL, TableClient

CLIENT = TableClient(
    name="copilot",
    title="GitHub Copilot CLI",
    format="json",
    container=("mcpServers",),
    user_path=".copilot/mcp-config.json",
    home_var=("COPILOT_HOME", ".copilot"),
    shape=(("type", "http"), ("url", URL), ("tools", ["*"])),
    timeout_key="timeout",
    timeout_unit=Unit.MILLISECONDS,
    timeout_behaviour="Copilot CLI's own default outlasted a 90 s call without progress (measured with 1.0.102).",
    binaries=("copilot",),
    extra_notes=(
        "`copilot mcp get NAME` shows the timeout Copilot CLI read.",
        "Project scope: Copilot CLI also reads ./.mcp.json, the file `ssebench agents install claude "
        "--scope project` writes (one entry serves both), so ssebench writes no second one there.",
    ),
)
