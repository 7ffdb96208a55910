"""The places runs execute, by name: a plain table of factories (docs/jobs.md, "Backends").

Each factory imports its backend only when called, so ``ssebench jobs --help`` imports no
Docker or Kubernetes client. A factory gets the parsed flags (the Kubernetes backend is
made from them) and the job file's folder (where a local or Docker run starts, so a custom
command's relative program is found beside the job file).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ssebench.jobs.backend import Backend


def _local(args: argparse.Namespace | None, cwd: Path) -> Backend:
    from ssebench.jobs.backends.local import LocalBackend

    return LocalBackend(cwd=cwd)


def _docker(args: argparse.Namespace | None, cwd: Path) -> Backend:
    from ssebench.jobs.backends.docker import DockerBackend

    return DockerBackend(cwd=cwd)


def _kubernetes(args: argparse.Namespace | None, cwd: Path) -> Backend:
    from ssebench.jobs.backends import kube_setup

    if args is None:
        raise RuntimeError("it is made from its flags (--namespace, --registry, --kubeconfig)")
    return kube_setup.from_arguments(args)


#: backend name → its factory, in the order the help lists them
BACKENDS: dict[str, Callable[[argparse.Namespace | None, Path], Backend]] = {
    "local": _local,
    "docker": _docker,
    "kubernetes": _kubernetes,
}


def make_backend(name: str, cwd: Path, args: argparse.Namespace | None = None) -> Backend:
    """The backend NAME (a key of :data:`BACKENDS`); RuntimeError or ImportError (one line)
    when it cannot be had here."""
    return BACKENDS[name](args, cwd)
