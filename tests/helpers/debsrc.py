"""Fetch a Debian bookworm source package's upstream tarball, with apt, never touching /etc/apt.

    from tests.helpers.debsrc import orig_tarball
    tarball = orig_tarball("cjson", "1.7.15", cache)   # cache/src/cjson_1.7.15.orig.tar.gz

Why this way: the machines reach Debian's package archive (and no upstream site), and the
``.orig`` tarball of a source package is the upstream release as published, so a task or
a benchmark gets the real, unpatched upstream tree of a known version. ``apt-get source
--download-only`` runs through a private sources list (``deb-src`` for bookworm from the
machine's own Debian mirror) with apt's lists, cache and the download under *cache*; the
system's apt configuration is only read, for the mirror's address. A tarball already in
*cache* is used as it is: no network.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


class FetchError(RuntimeError):
    """The tarball could not be fetched; ``str(err)`` is one line saying why."""


def orig_tarball(package: str, version: str, cache: Path, *, mirror: str | None = None) -> Path:
    """The cached ``<package>_<version>.orig.tar.*`` of bookworm's source package *package*.

    *mirror*: the Debian mirror's URL (default: the machine's, :func:`debian_mirror`).
    """
    from filelock import FileLock

    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / "fetch.lock")):  # pytest-xdist workers share the cache
        return _fetch(package, version, cache, mirror)


def _fetch(package: str, version: str, cache: Path, mirror: str | None) -> Path:
    src = cache / "src"
    found = _cached(src, package, version)
    if found is not None:
        return found
    apt = cache / "apt"
    for d in (apt / "lists" / "partial", apt / "cache" / "archives" / "partial", apt / "parts", src):
        d.mkdir(parents=True, exist_ok=True)
    url = mirror or debian_mirror()
    (apt / "sources.list").write_text(f"deb-src {url} bookworm main\n")
    warnings = apt_get(cache, "update")
    if not any((apt / "lists").glob("*_Sources*")):
        raise FetchError(
            f"apt-get update could not fetch bookworm's source index from {url} (no network?): "
            + next((w for w in warnings if w.startswith("W: Failed")), "no message")
        )
    apt_get(cache, "source", "--download-only", package)
    found = _cached(src, package, version)
    if found is None:
        raise FetchError(
            f"apt-get source {package} did not bring {package}_{version}.orig.tar.*: "
            f"bookworm's {package} is no longer {version}?"
        )
    return found


def _cached(src: Path, package: str, version: str) -> Path | None:
    hits = sorted(src.glob(f"{package}_{version}.orig.tar.*")) if src.is_dir() else []
    return next((p for p in hits if not p.name.endswith(".asc")), None)


def apt_get(cache: Path, *args: str) -> list[str]:
    """``apt-get ARGS`` with lists, cache and sources under ``cache/apt``, in ``cache/src``;
    returns its lines of standard error (apt's warnings)."""
    apt = cache / "apt"
    opts = [
        f"-oDir::Etc::SourceList={apt / 'sources.list'}",
        f"-oDir::Etc::SourceParts={apt / 'parts'}",
        f"-oDir::State::Lists={apt / 'lists'}",
        f"-oDir::Cache={apt / 'cache'}",
        "-oAPT::Sandbox::User=root" if os.getuid() == 0 else "-oDebug::NoLocking=1",
    ]
    done = subprocess.run(
        ["apt-get", "-q", *opts, *args],
        cwd=cache / "src",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if done.returncode != 0:
        raise FetchError(
            f"apt-get {' '.join(args)} failed (exit {done.returncode}): " + (lines[-1] if lines else "no message")
        )
    return lines


def debian_mirror() -> str:
    """The machine's Debian mirror, from its apt sources (deb822 or one-line)."""
    etc = Path("/etc/apt")
    for path in sorted(etc.glob("sources.list*")) + sorted((etc / "sources.list.d").glob("*")):
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            words = line.split()
            if words[:1] == ["URIs:"] or words[:1] == ["deb"]:
                for word in words[1:]:
                    if word.startswith("http") and "security" not in word:
                        return word.rstrip("/")
    return "http://deb.debian.org/debian"
