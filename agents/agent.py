"""One record per agent ssebench can launch: everything about it that is not code.

An :class:`Agent` gathers what used to be spread over eight places: its client (the config
writer), its run recipe, its dialog converter, the stream format the CLI prints, the npm
package and command (the version stays in the one pin file, configs/agent-clis/package.json),
the Docker layer template, the model API variables as the docs list them, and the variables
that would point the CLI at the user's own config. Every table, choice list, help text and
Dockerfile that lists agents is derived from the records in ``agents/registry.py``.

Why the recipe and the converter are named by ``"module:attribute"`` paths rather than held
as objects: a record is read by every command at start-up (argparse choices, ``agents list``),
while a recipe imports the file layer and format editors and a converter the dialog package.
Holding the client itself is fine, as clients are plain data over ``agents/base.py`` (standard
library only). :func:`resolve` is the one place that turns a path into the object, on first use,
so ``ssebench daemon`` and ``ssebench agents list`` never import a recipe or a converter.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ssebench.agents.base import Client

if TYPE_CHECKING:
    from ssebench.agents.recipe import Recipe
    from ssebench.dialog.convert import StreamConverter

#: the Dockerfile template of an agent layer (configs/docker/), unless a record names another
AGENT_LAYER_TEMPLATE = "agent.Dockerfile.j2"


def resolve(path: str) -> Any:
    """The object at ``"package.module:attribute"``, importing the module now."""
    module, _, name = path.partition(":")
    if not module or not name:
        raise ValueError(f"not a 'module:attribute' path: {path!r}")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Agent:
    """An agent ``ssebench run --agent NAME`` can launch (its name is its client's)."""

    client: Client  # registers the MCP server (``ssebench agents install NAME``)
    recipe: str  # "module:attr" of its Recipe (agents/recipe.py): the headless command line
    dialog: str  # "module:attr" of its StreamConverter class (ssebench/dialog/convert.py)
    stream_format: str  # what the CLI prints on stdout, which the converter reads
    package: str  # the npm package that installs the CLI; its version: the pin file
    binary: str  # the command that package installs
    model_vars: str  # the model API variables, as the README's table shows them (markdown)
    config_vars: tuple[str, ...] = ()  # variables pointing the CLI at a config outside its HOME
    layer_template: str = AGENT_LAYER_TEMPLATE  # its Docker layer (configs/docker/)
    pins_file: Path | None = None  # None: configs/agent-clis/package.json
    # the npm package in its pin file that brings the Node it runs on (agents/runtime.py), and
    # the oldest Node it runs on; "" / (): the machine's node, whatever its version
    node_runtime: str = ""
    node_min: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return self.client.name

    def load_recipe(self) -> Recipe:
        return resolve(self.recipe)

    def converter(self) -> StreamConverter:
        """A new converter for one stream."""
        return resolve(self.dialog)()

    def pin(self) -> str:
        """The exact version the pin file holds for the package (PinError otherwise)."""
        from ssebench.resources import pinned_version

        return pinned_version(self.package, self.pins_file)
