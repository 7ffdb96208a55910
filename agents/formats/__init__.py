"""The config format editors, by the name a client's ``format`` gives (agents/base.py).

``json`` (JSON/JSONC/JSON5: ``jsonc``), ``toml`` (``toml``, via tomlkit) and ``yaml``
(``yaml`` + ``yamltext``, via ruamel.yaml). Each turns a text into a text with one entry set
or removed; reading, locking and writing files is ``agents/files.py``'s.
"""

from __future__ import annotations

from ssebench.agents.formats.base import Editor, FormatError
from ssebench.agents.formats.jsonc import JsonEditor
from ssebench.agents.formats.toml import TomlEditor
from ssebench.agents.formats.yaml import YamlEditor

EDITORS: dict[str, Editor] = {"json": JsonEditor(), "toml": TomlEditor(), "yaml": YamlEditor()}

__all__ = ["EDITORS", "Editor", "FormatError", "JsonEditor", "TomlEditor", "YamlEditor"]
