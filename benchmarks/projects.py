"""The five real projects of benchmarks/bench_projects.py (issue 34): what each is, how it
builds and tests, the one line the benchmark changes, and its tree (fetched once).

Each tree is the upstream tarball of Debian bookworm's source package (the machines reach
Debian's archive, and the ``.orig`` tarball is the upstream release as published), fetched
by tests/helpers/debsrc.py and unpacked once into ``~/.cache/ssebench/bench-projects``.
A build configures only in the first build of a tree (``config.status`` or ``build``
missing), as a task author's command would: the daemon's mirror and the in-place tree each
configure at their own path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.bench_incremental import CONFIGURE, CURL_FUNCTIONAL
from tests.helpers.debsrc import FetchError, orig_tarball

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ssebench" / "bench-projects"


@dataclass(frozen=True)
class Project:
    name: str  # the key (``--project``)
    label: str  # the table's name: project, version, build system
    package: str  # bookworm's source package
    version: str  # its upstream version (the .orig tarball's)
    folder: str  # what the tarball unpacks to
    build: str
    functional: str
    changed: str  # the source whose last line the benchmark changes
    needs: str = ""  # a program the build needs that the machine may lack


GIF_UTILS = "gif2rgb gifbuild giffix giftext giftool gifclrmp gifbg gifcolor gifecho giffilter gifhisto gifinto gifsponge gifwedge"

PROJECTS = {
    p.name: p
    for p in (
        Project(
            "curl",
            "curl 7.88.1 (autotools)",
            "curl",
            "7.88.1",
            "curl-7.88.1",
            "{ test -f config.status || " + " ".join(CONFIGURE) + "; } && make -j2 && make -j2 -C tests/server",
            CURL_FUNCTIONAL,
            "lib/escape.c",
        ),
        Project(
            "libogg",
            "libogg 1.3.5 (autotools, libtool)",
            "libogg",
            "1.3.5",
            "libogg-1.3.5",
            "{ test -f config.status || ./configure -q; } && make -j2 && make -j2 check TESTS=",
            "make check",
            "src/framing.c",
        ),
        Project(
            "cjson",
            "cJSON 1.7.15 (CMake)",
            "cjson",
            "1.7.15",
            "cJSON-1.7.15",
            "{ test -d build || cmake -S . -B build -DENABLE_CJSON_UTILS=On >/dev/null; } && cmake --build build -j2",
            "ctest --test-dir build -j2 --output-on-failure",
            "cJSON.c",
        ),
        Project(
            "fribidi",
            "fribidi 1.0.8 (Meson)",
            "fribidi",
            "1.0.8",
            "fribidi-1.0.8",
            "{ test -d build || meson setup build -Ddocs=false >/dev/null; } && ninja -C build",
            "meson test -C build --no-rebuild --print-errorlogs",
            "lib/fribidi-bidi.c",
            needs="meson",
        ),
        Project(
            "giflib",
            "giflib 5.2.1 (plain make)",
            "giflib",
            "5.2.1",
            "giflib-5.2.1",
            f"make -j2 libgif.a libutil.a {GIF_UTILS}",
            "make -C tests",
            "dgif_lib.c",
        ),
    )
}


def tree(project: Project) -> Path:
    """The unpacked upstream tree of *project* (fetched and unpacked once)."""
    root = CACHE / "unpacked" / project.name
    done = root / ".unpacked"
    if done.exists():
        return root / project.folder
    print(f"fetching {project.package} {project.version} (Debian bookworm's source package) ...", flush=True)
    try:
        tarball = orig_tarball(project.package, project.version, CACHE)
    except FetchError as exc:
        sys.exit(str(exc))
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    subprocess.run(["tar", "xf", str(tarball)], cwd=root, check=True)
    done.touch()
    return root / project.folder
