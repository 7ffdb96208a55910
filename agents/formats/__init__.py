"""The config format editors, by the name a client's ``format`` gives (agents/base.py).

``json`` (JSON/JSONC/JSON5: ``jsonc``), ``toml`` (``toml``, via tomlkit), ``yaml``
(``yaml`` + ``yamltext``, via ruamel.yaml) and ``yaml-list`` (``yamllist``: servers as a list
of named items, Continue's; a new file starts with Continue's top-level keys) and ``toml-list``
(``tomllist``: an array of named tables, gptme's ``[[mcp.servers]]``; ``toml-array`` the
same without gptme's switches, Mistral Vibe's ``[[mcp_servers]]``). Each turns a text into a
text with one entry set or removed; reading, locking and writing files is ``agents/files.py``'s.
"""

from __future__ import annotations

from ssebench.agents.formats.base import Editor, FormatError
from ssebench.agents.formats.jsonc import JsonEditor
from ssebench.agents.formats.toml import TomlEditor
from ssebench.agents.formats.tomllist import NamedListTomlEditor
from ssebench.agents.formats.yaml import YamlEditor
from ssebench.agents.formats.yamllist import NamedListYamlEditor

#: the top-level keys Continue CLI writes into a config it creates, and requires
CONTINUE_SKELETON = {"name": "Main Config", "version": "1.0.0", "schema": "v1"}

EDITORS: dict[str, Editor] = {
    "json": JsonEditor(),
    "toml": TomlEditor(),
    "yaml": YamlEditor(),
    "yaml-list": NamedListYamlEditor(CONTINUE_SKELETON),
    # gptme reads [[mcp.servers]] only with [mcp] enabled = true, and connects at start only with auto_start
    "toml-list": NamedListTomlEditor({"enabled": True, "auto_start": True}),
    # the same array of named tables with nothing else to switch on (Mistral Vibe's [[mcp_servers]])
    "toml-array": NamedListTomlEditor(),
}

__all__ = [
    "EDITORS",
    "Editor",
    "FormatError",
    "JsonEditor",
    "NamedListTomlEditor",
    "NamedListYamlEditor",
    "TomlEditor",
    "YamlEditor",
]
