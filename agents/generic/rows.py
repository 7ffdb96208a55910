"""The HTTP clients of the installers (add-mcp 2.4.0, install-mcp 1.10.2, @smithery/cli 4.11.1)
beyond the ones in table.py: one fixed-shape row each, checked against each client's docs.

Left to the bundled agents (their own folders): Cline CLI, Kilo Code, Copilot CLI, Qwen Code and
Continue CLI; Grok CLI and Crush are left out (docs/adding-an-agent.md says why).
Clients that start stdio servers only are in bridged.py.
"""

from __future__ import annotations

from ssebench.agents.base import Unit
from ssebench.agents.generic.table import URL, TableClient

NO_KEY = "Its own default limit applies to every call."
_VSCODE_STORAGE = "{app}/Code/User/globalStorage"

CLIENTS = (
    TableClient(
        name="antigravity",
        title="Antigravity",
        format="json",
        container=("mcpServers",),
        user_path=".gemini/config/mcp_config.json",
        shape=(("serverUrl", URL),),
        timeout_behaviour=NO_KEY,
        binaries=("antigravity",),
        extra_notes=(
            "Antigravity reads a remote server's address from serverUrl. Builds before 2026 read "
            "~/.gemini/antigravity/mcp_config.json: give it with --file.",
        ),
    ),
    TableClient(
        name="antigravity-cli",
        title="Antigravity CLI",
        format="json",
        container=("mcpServers",),
        user_path=".gemini/antigravity-cli/mcp_config.json",
        shape=(("serverUrl", URL),),
        timeout_behaviour=NO_KEY,
        binaries=("agy",),
        extra_notes=("Antigravity CLI reads a remote server's address from serverUrl.",),
    ),
    TableClient(
        name="vscode-insiders",
        title="VS Code Insiders",
        format="json",
        container=("servers",),
        user_path="{app}/Code - Insiders/User/mcp.json",
        shape=(("type", "http"), ("url", URL)),
        timeout_behaviour=NO_KEY,
        binaries=("code-insiders",),
        extra_notes=(
            "Project scope: Insiders reads ./.vscode/mcp.json, which `ssebench agents install vscode` writes.",
        ),
    ),
    TableClient(
        name="cline-vscode",
        title="Cline (VS Code extension)",
        format="json",
        container=("mcpServers",),
        user_path=f"{_VSCODE_STORAGE}/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        shape=(("type", "streamableHttp"), ("url", URL), ("disabled", False)),
        timeout_key="timeout",
        timeout_unit=Unit.SECONDS,
        timeout_behaviour="Cline's default is 60 s.",
    ),
    TableClient(
        name="roo-code",
        title="Roo Code",
        format="json",
        container=("mcpServers",),
        user_path=f"{_VSCODE_STORAGE}/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
        project_path=".roo/mcp.json",
        shape=(("type", "streamable-http"), ("url", URL)),
        timeout_key="timeout",
        timeout_unit=Unit.SECONDS,
        max_timeout=3600,
        timeout_behaviour="Roo Code's default is 60 s, its maximum 3600 s.",
    ),
    TableClient(
        name="kiro",
        title="Kiro CLI / Kiro IDE",
        format="json",
        container=("mcpServers",),
        user_path=".kiro/settings/mcp.json",
        project_path=".kiro/settings/mcp.json",
        shape=(("url", URL),),
        timeout_key="timeout",
        timeout_unit=Unit.MILLISECONDS,
        timeout_behaviour="Kiro's default for a request is 120 s.",
        binaries=("kiro-cli", "kiro"),
    ),
    TableClient(
        name="grok-build",
        title="Grok Build",
        format="toml",
        container=("mcp_servers",),
        user_path=".grok/config.toml",
        project_path=".grok/config.toml",
        home_var=("GROK_HOME", ".grok"),
        shape=(("url", URL),),
        timeout_key="tool_timeout_sec",
        timeout_unit=Unit.SECONDS,
        timeout_behaviour="Grok Build applies it to each tool call.",
        extra_notes=("Grok Build is xAI's CLI; the Grok CLI of @vibe-kit/grok-cli is another client.",),
    ),
    TableClient(
        name="mcporter",
        title="MCPorter",
        format="json",
        container=("mcpServers",),
        user_path=".mcporter/mcporter.json",
        project_path="config/mcporter.json",
        shape=(("url", URL),),
        timeout_behaviour=(
            "MCPorter ends a call after 60 s unless MCPORTER_CALL_TIMEOUT (ms) or `mcporter call --timeout MS` "
            "says otherwise: set MCPORTER_CALL_TIMEOUT=3600000 for test_patch."
        ),
        binaries=("mcporter",),
    ),
    TableClient(
        name="fx",
        title="fx",
        format="json",
        container=("mcp",),
        user_path=".fx/mcp.json",
        shape=(("type", "http"), ("url", URL), ("enabled", True)),
        timeout_key="operation_timeout_ms",
        timeout_unit=Unit.MILLISECONDS,
        # fx reads it as a u32 and refuses the whole ~/.fx/mcp.json when a value is larger
        max_timeout=4_294_967,
        timeout_behaviour="fx's default is 60 s, counted from the start of the call.",
        extra_notes=("fx reads MCP servers only from ~/.fx/mcp.json (/mcp reload applies a change).",),
        # no binaries: `fx` is also a common JSON viewer's name, so ~/.fx alone says it is here
    ),
    TableClient(
        name="librechat",
        title="LibreChat",
        format="yaml",
        container=("mcpServers",),
        user_path="LibreChat/librechat.yaml",
        home_var=("LIBRECHAT_CONFIG_DIR", ""),
        shape=(("type", "streamable-http"), ("url", URL)),
        timeout_key="timeout",
        timeout_unit=Unit.MILLISECONDS,
        timeout_behaviour="LibreChat applies it to each tool call; initTimeout (connecting) keeps its default.",
        extra_notes=("LibreChat runs on a server: its URL must reach the ssebench server (--url).",),
    ),
    TableClient(
        name="warp",
        title="Warp",
        format="json",
        container=("mcpServers",),
        user_path=None,
        shape=(("url", URL),),
        timeout_behaviour=NO_KEY,
        binaries=("warp-terminal", "warp"),
        extra_notes=(
            "Warp keeps MCP servers in its cloud-synced settings: paste this in Settings > AI > MCP servers.",
        ),
    ),
)
