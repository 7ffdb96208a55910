#!/usr/bin/env python3
"""A one-layer OCI image archive from a folder, for `ctr images import` (no registry, no Docker).

    kube-oci-image.py ROOTFS REF ENTRYPOINT OUT.tar

scripts/kube-cluster.sh makes the pause image with it (the tree's build/pause, static).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import sys
import tarfile
from pathlib import Path


def _blob(out: tarfile.TarFile, data: bytes) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size = len(data)
    out.addfile(info, io.BytesIO(data))
    return {"digest": f"sha256:{digest}", "size": len(data)}


def _layer(rootfs: Path) -> tuple[bytes, str]:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as layer:
        for path in sorted(rootfs.rglob("*")):
            info = layer.gettarinfo(str(path), str(path.relative_to(rootfs)))
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if info.isfile():
                with open(path, "rb") as handle:
                    layer.addfile(info, handle)
            else:
                layer.addfile(info)
    diff_id = "sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()
    return gzip.compress(raw.getvalue(), mtime=0), diff_id


def main(rootfs: str, ref: str, entrypoint: str, target: str) -> None:
    layer, diff_id = _layer(Path(rootfs))
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": [entrypoint]},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    with tarfile.open(target, "w") as out:
        layer_desc = _blob(out, layer)
        config_desc = _blob(out, json.dumps(config).encode())
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_desc},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **layer_desc}],
        }
        manifest_desc = _blob(out, json.dumps(manifest).encode())
        index = {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    **manifest_desc,
                    "annotations": {"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref},
                }
            ],
        }
        for name, data in (("oci-layout", {"imageLayoutVersion": "1.0.0"}), ("index.json", index)):
            encoded = json.dumps(data).encode()
            info = tarfile.TarInfo(name)
            info.size = len(encoded)
            out.addfile(info, io.BytesIO(encoded))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: kube-oci-image.py ROOTFS REF ENTRYPOINT OUT.tar")
    main(*sys.argv[1:])
