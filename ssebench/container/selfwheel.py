"""ssebench as a wheel for task images, from a checkout or from the installed package.

A task image installs ssebench from a wheel made on the host (the build has no network).
From a source checkout that is ``pip wheel`` of the checkout; after a plain ``pip install``
there is no checkout, so the installed files (the RECORD of the installed distribution)
are packed back into a wheel. Either way the folders in
:data:`ssebench.resources.IMAGE_EXCLUDED` (the example task, whose PoCs and intent diff an
agent must never find in its container) are left out, and every zip entry gets a fixed
date so an unchanged ssebench gives the same bytes (and the image's tag stays the same).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from ssebench.resources import IMAGE_EXCLUDED, checkout

FIXED_DATE = (1980, 1, 1, 0, 0, 0)
SOURCE_DATE_EPOCH = "315532800"  # the same date, for pip wheel (hatchling honours it)
# files of an installed distribution that are not part of the wheel it came from
_INSTALL_ONLY = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


class SelfWheelError(Exception):
    """The wheel could not be made; the message says why."""


def excluded(name: str) -> bool:
    """A wheel entry that stays out of task images (``ssebench/examples/...``)."""
    return any(name.startswith(f"ssebench/{folder}/") for folder in IMAGE_EXCLUDED)


def build_image_wheel(dest: Path) -> Path:
    """Write ssebench's wheel for a task image into the folder DEST; returns its path."""
    dest.mkdir(parents=True, exist_ok=True)
    root = checkout()
    if root is not None:
        with tempfile.TemporaryDirectory(prefix="ssebench-wheel-") as tmp:
            _pip_wheel(root, Path(tmp))
            (built,) = Path(tmp).glob("*.whl")
            with zipfile.ZipFile(built) as archive:
                entries = [
                    (info.filename, archive.read(info), info.external_attr >> 16)
                    for info in archive.infolist()
                    if not info.is_dir()
                ]
            return _write(dest / built.name, entries)
    return _repack_installed(dest)


def _pip_wheel(source: Path, out: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "--wheel-dir",
            str(out),
            str(source),
        ],
        env={**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH},
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise SelfWheelError(f"pip wheel {source} failed (exit {result.returncode}):\n{tail}")


def _repack_installed(dest: Path) -> Path:
    """The installed distribution's files (its RECORD) as a wheel again."""
    try:
        dist = metadata.distribution("ssebench")
    except metadata.PackageNotFoundError:
        raise SelfWheelError("ssebench is neither a source checkout nor an installed distribution") from None
    entries: list[tuple[str, bytes, int]] = []
    for file in dist.files or ():
        name = file.as_posix()
        if name.startswith("..") or "__pycache__" in file.parts or name.endswith(".pyc"):
            continue  # console scripts (pip writes them again) and byte code
        top = file.parts[0]
        if top.endswith(".dist-info") and file.name in _INSTALL_ONLY:
            continue
        if not (top == "ssebench" or top.endswith(".dist-info")):
            continue
        path = Path(str(file.locate()))
        entries.append((name, path.read_bytes(), path.stat().st_mode & 0o777))
    if not any(name.startswith("ssebench/") for name, _, _ in entries):
        raise SelfWheelError(
            f"the installed ssebench {dist.version} lists no package files (an editable install without its checkout?)"
        )
    version = dist.version
    return _write(dest / f"ssebench-{version}-py3-none-any.whl", entries)


def _write(path: Path, entries: Iterable[tuple[str, bytes, int]]) -> Path:
    """A wheel of ENTRIES minus the excluded folders, with a RECORD of what it holds."""
    kept = sorted(
        (e for e in entries if not excluded(e[0]) and not e[0].endswith(".dist-info/RECORD")), key=lambda e: e[0]
    )
    dist_info = next((n.split("/", 1)[0] for n, _, _ in kept if n.split("/", 1)[0].endswith(".dist-info")), None)
    if dist_info is None:
        raise SelfWheelError("no .dist-info folder among the wheel's files")
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, data, _mode in kept:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow((name, f"sha256={digest}", len(data)))
    writer.writerow((f"{dist_info}/RECORD", "", ""))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in [*kept, (f"{dist_info}/RECORD", record.getvalue().encode(), 0o644)]:
            info = zipfile.ZipInfo(name, FIXED_DATE)
            info.external_attr = ((mode or 0o644) | 0o100000) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return path
