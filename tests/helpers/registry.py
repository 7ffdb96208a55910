"""A private image registry on loopback for the ``--registry`` tests (issue 22).

    from tests.helpers.registry import start_registry
    registry = start_registry(tmp_path)   # docker-registry serve, 127.0.0.1:REGISTRY_PORT, storage in tmp_path
    registry.address                      # "127.0.0.1:15000": docker push there, the cluster pulls from there
    registry.catalog()                    # GET /v2/_catalog: the repositories pushed
    registry.references()                 # ["127.0.0.1:15000/REPO:TAG", ...]
    registry.stop()

The server is Debian's ``docker-registry`` (the CNCF distribution registry v2, installed by
``scripts/kube-build.sh install``), run directly with a config of its own: plain HTTP on
127.0.0.1 only, storage in a folder of the test, no auth; never Debian's service. Loopback
registries are insecure-allowed by default both in dockerd (127.0.0.0/8) and in containerd's
CRI (http for a loopback host); scripts/kube-cluster.sh also names it as a mirror. The port is
fixed because the cluster's containerd config (written at cluster start) names it.
"""

from __future__ import annotations

import json
import secrets
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ssebench.supervise import Child, StartupError, exited, spawn, wait_for_http

REGISTRY_PORT = 15000  # the same as PORT_REGISTRY in scripts/kube-cluster.sh
START_TIMEOUT = 30.0


class RegistryUnavailable(RuntimeError):
    """The registry could not be started; the message is one line."""


def config(storage: Path, port: int) -> str:
    """docker-registry's config: loopback, plain HTTP, files under STORAGE, quiet."""
    return (
        "version: 0.1\n"
        "log: {level: warn, accesslog: {disabled: true}}\n"
        f"storage: {{filesystem: {{rootdirectory: {json.dumps(str(storage))}}}, delete: {{enabled: true}}}}\n"
        f'http: {{addr: "127.0.0.1:{port}", secret: "{secrets.token_hex(16)}"}}\n'
    )


@dataclass
class Registry:
    address: str
    child: Child

    def _get(self, path: str) -> dict:
        with urllib.request.urlopen(f"http://{self.address}/v2/{path}", timeout=10) as answer:
            return dict(json.load(answer))

    def catalog(self) -> list[str]:
        """The repositories pushed (``GET /v2/_catalog``)."""
        return list(self._get("_catalog")["repositories"])

    def references(self) -> list[str]:
        """Every pushed image as ADDRESS/REPOSITORY:TAG, sorted."""
        return sorted(
            f"{self.address}/{repo}:{tag}" for repo in self.catalog() for tag in self._get(f"{repo}/tags/list")["tags"]
        )

    def stop(self) -> None:
        self.child.stop()


def start_registry(folder: Path, port: int = REGISTRY_PORT) -> Registry:
    """The registry, answering ``GET /v2/``, its config, storage and log in FOLDER."""
    binary = shutil.which("docker-registry")
    if binary is None:
        raise RegistryUnavailable("no docker-registry (Debian's package; scripts/kube-build.sh install)")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yml").write_text(config(folder / "storage", port))
    child = spawn(
        "docker-registry",
        [binary, "serve", str(folder / "config.yml")],
        env={"PATH": "/usr/bin:/bin"},
        log=folder / "registry.log",
    )
    try:
        wait_for_http(
            f"http://127.0.0.1:{port}/v2/",
            what="docker-registry",
            timeout=START_TIMEOUT,
            gone=exited(child.proc),
            tail=child.tail,
        )
    except StartupError as error:
        child.stop()
        last = f": {error.log_tail[-1]}" if error.log_tail else ""
        raise RegistryUnavailable(f"{error.message}{last}") from error
    return Registry(f"127.0.0.1:{port}", child)
