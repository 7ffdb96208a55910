"""The task image and the agent layers, built from contexts made on the host.

A build never needs a registry or the network: the ssebench wheels come from ``pip wheel``
on the host (without the example task: selfwheel.py) and the agent CLI from ``npm install``
on the host, both using the host's package caches. Images are tagged with a hash of their
Dockerfile and context, so an unchanged image is reused without calling ``docker build``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

from ssebench import __version__
from ssebench.container.dockerfile import (
    NODE_MAJOR,
    DockerfileError,
    agent_cli,
    node_runtime,
    pinned_version,
    render_agent_dockerfile,
    render_task_dockerfile,
)
from ssebench.container.engine import DockerEngine, DockerRunError, cache_dir, fill_cache


def _digest(*parts: bytes | Path) -> str:
    """sha256 over byte strings and files (content and name), short enough for a tag."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            digest.update(part.name.encode())
            with open(part, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
        else:
            digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()[:12]


def _pip(*args: str, env: Mapping[str, str] | None = None) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", *args, "--quiet", "--disable-pip-version-check"],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise DockerRunError(f"pip {' '.join(args[:1])} failed (exit {result.returncode}):\n{tail}")


def _requirements(wheel: Path) -> list[str]:
    """The ssebench wheel's own dependencies (no extras), from its METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode("utf-8")
    return sorted(
        line.split(":", 1)[1].strip()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    )


def _link_tree(source: Path, target: Path) -> None:
    """Copy SOURCE to TARGET by hard links where the file system allows (contexts are big)."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=link)


def prepare_task_context(context: Path) -> None:
    """wheels/project/ (ssebench without the example task: selfwheel.py) and wheels/deps/ (cached by requirements)."""
    from ssebench.container.selfwheel import SelfWheelError, build_image_wheel

    try:
        wheel = build_image_wheel(context / "wheels" / "project")
    except SelfWheelError as error:
        raise DockerRunError(str(error)) from None
    requirements = _requirements(wheel)
    deps_cache = cache_dir() / "wheels" / _digest("\n".join(requirements).encode(), sys.version.encode())
    if not deps_cache.is_dir():
        fill_cache(deps_cache, "staging-", lambda staging: _pip("wheel", "--wheel-dir", str(staging), *requirements))
    _link_tree(deps_cache, context / "wheels" / "deps")


def build_task_image(engine: DockerEngine, base_image: str) -> str:
    """The task image for this checkout on BASE_IMAGE; built only when its inputs changed."""
    with tempfile.TemporaryDirectory(prefix="ssebench-context-") as tmp:
        context = Path(tmp)
        prepare_task_context(context)
        dockerfile = render_task_dockerfile(base_image)
        files = sorted(p for p in context.rglob("*") if p.is_file())
        base_id = engine.docker("image", "inspect", "--format", "{{.Id}}", base_image).stdout.strip()
        tag = f"ssebench-task:{__version__}-{_digest(dockerfile.encode(), base_id.encode(), *files)}"
        if not engine.has_image(tag):
            engine.build(tag, context, dockerfile)
        return tag


def host_node() -> Path:
    """The host's Node binary, copied into agent layers; it must be Node NODE_MAJOR or newer."""
    found = shutil.which("node")
    if found is None:
        raise DockerRunError(f"agent layers need Node {NODE_MAJOR} on this machine; no node command found")
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        raise DockerRunError(f"{found} --version printed {version!r}, not a Node version") from None
    if major < NODE_MAJOR:
        raise DockerRunError(f"agent layers need Node {NODE_MAJOR} or newer; {found} is {version}")
    return Path(found).resolve()


def agent_cli_dir(agent: str) -> Path:
    """AGENT's pinned CLI (with its own Node, if its record names one) installed with npm on the host, cached."""
    cli = agent_cli(agent)
    version = pinned_version(agent)
    runtime = node_runtime(agent)  # its own Node, installed beside it
    packages = {cli.package: version, **dict([runtime.rsplit("@", 1)] if runtime else [])}
    target = cache_dir() / "agent-cli" / "-".join([agent, version, *([runtime.replace("@", "-")] if runtime else [])])
    bins = [cli.bin, *(["node"] if runtime else [])]
    if all((target / "node_modules" / ".bin" / b).exists() for b in bins):
        return target
    if shutil.which("npm") is None:
        raise DockerRunError(f"installing {cli.package}@{version} for the {agent} layer needs npm; none found")

    def fill(staging: Path) -> None:
        (staging / "package.json").write_text(
            json.dumps({"private": True, "dependencies": packages}, indent=2) + "\n", encoding="utf-8"
        )
        result = subprocess.run(
            ["npm", "install", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=staging,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 or not all((staging / "node_modules" / ".bin" / b).exists() for b in bins):
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
            raise DockerRunError(f"npm install {cli.package}@{version} failed (exit {result.returncode}):\n{tail}")

    return fill_cache(target, f"{agent}-", fill)


def build_agent_image(engine: DockerEngine, agent: str, task_image: str) -> str:
    """AGENT's layer on TASK_IMAGE: host Node (or the agent's own) + the pinned CLI + ``ssebench agents install``."""
    try:
        dockerfile = render_agent_dockerfile(agent, task_image)
    except DockerfileError as error:
        raise DockerRunError(str(error)) from None
    from ssebench.agents.registry import AGENTS

    if AGENTS[agent].registry == "pypi":
        return _build_pypi_image(engine, agent, dockerfile)
    cli_dir = agent_cli_dir(agent)
    own = bool(node_runtime(agent))  # its own Node is in cli/ already
    node = (cli_dir / "node_modules" / ".bin" / "node").resolve() if own else host_node()
    lock = cli_dir / "package-lock.json"
    tag = f"ssebench-{agent}:{__version__}-{_digest(dockerfile.encode(), node, lock)}"

    def add_node(context: Path) -> None:
        if not own:
            try:
                os.link(node, context / "node")
            except OSError:
                shutil.copy2(node, context / "node")

    return _build_layer(engine, tag, dockerfile, cli_dir, add_node)


def _build_layer(engine: DockerEngine, tag: str, dockerfile: str, cli_dir: Path, add: Callable[[Path], None]) -> str:
    """TAG built (unless the engine has it) from a context of the agent's CLI folder as
    ``cli/`` and what *add* puts beside it (its runtime)."""
    if engine.has_image(tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="ssebench-context-") as tmp:
        context = Path(tmp)
        _link_tree(cli_dir, context / "cli")
        add(context)
        engine.build(tag, context, dockerfile)
    return tag


def _build_pypi_image(engine: DockerEngine, agent: str, dockerfile: str) -> str:
    """A PyPI agent's layer: its lock and wheels, and its own Python when it needs a newer one."""
    from ssebench.agents.registry import AGENTS
    from ssebench.container import pypilayer

    cli_dir = pypilayer.cli_dir(agent)
    prefix = pypilayer.python_prefix(AGENTS[agent].python_min)
    python = prefix.name.encode() if prefix is not None else b""
    tag = f"ssebench-{agent}:{__version__}-{_digest(dockerfile.encode(), python, cli_dir / pypilayer.LOCK)}"

    def add_python(context: Path) -> None:
        if prefix is not None:
            pypilayer.copy_python(prefix, context / "python")

    return _build_layer(engine, tag, dockerfile, cli_dir, add_python)
