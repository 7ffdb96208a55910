"""Task folders on real projects (tests/realtasks/<name>), made from the fetched upstream tarball.

    from tests.helpers.realtasks import REAL_TASKS, task_folder, fixed_tree
    folder = task_folder("cjson")          # ~/.cache/ssebench/realtasks/cjson/task.toml, src/, ...
    tree = fixed_tree("cjson", tmp_path / "fixed")   # a copy of src/ with fix.patch applied

Why: the repository keeps only what the task author writes (task.toml, the support
scripts, PoCs, intent diff, the reference fix); the project's source is the upstream
tarball of Debian bookworm's source package (tests/helpers/debsrc.py), fetched once and
cached. The task folder is rebuilt when a file copied into it changes. ``fix.patch``,
``README.md`` and ``expected/`` (the tests' expected logs) are not copied: every other
file of a task folder is a support file that the checks (so the agent's own code) can
read.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.debsrc import orig_tarball

TEMPLATES = Path(__file__).resolve().parent.parent / "realtasks"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ssebench" / "realtasks"
NOT_IN_TASK = ("fix.patch", "README.md", "expected")


@dataclass(frozen=True)
class RealTask:
    """One template: the Debian source package and the tarball's top folder."""

    name: str
    package: str
    version: str
    top: str


REAL_TASKS = {
    "cjson": RealTask("cjson", "cjson", "1.7.15", "cJSON-1.7.15"),
    "giflib": RealTask("giflib", "giflib", "5.2.1", "giflib-5.2.1"),
}


def task_folder(name: str) -> Path:
    """The cached task folder of template *name* (fetches the tarball on first use).

    pytest-xdist workers share the cache: one lock per template makes the check and the
    rebuild one step, so no worker sees (or removes) a folder another is still making."""
    from filelock import FileLock

    task = REAL_TASKS[name]
    template = TEMPLATES / name
    folder = CACHE / name
    stamp, stamp_file = f"{task.package}_{task.version} {_digest(template)}\n", CACHE / f".{name}.stamp"
    CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(str(CACHE / f".{name}.lock")):
        if folder.is_dir() and stamp_file.is_file() and stamp_file.read_text() == stamp:
            return folder
        tarball = orig_tarball(task.package, task.version, CACHE / "debsrc")
        staging = CACHE / f".{name}.new"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(template, staging, ignore=shutil.ignore_patterns(*NOT_IN_TASK))
        with tarfile.open(tarball) as tar:
            tar.extractall(staging, filter="tar")
        (staging / task.top).rename(staging / "src")
        stamp_file.unlink(missing_ok=True)  # a folder without its stamp is rebuilt, never trusted
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
        stamp_file.write_text(stamp)  # outside the folder: every file in it is the task's
        return folder


def fixed_tree(name: str, dst: Path) -> Path:
    """A copy of the task's tree with the reference fix (fix.patch) applied, at *dst*."""
    shutil.copytree(task_folder(name) / "src", dst, symlinks=True)
    apply_patch(dst, TEMPLATES / name / "fix.patch")
    return dst


def apply_patch(tree: Path, patch: Path) -> None:
    """``git apply`` *patch* in *tree* (not a repository: git must not look above it)."""
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)}
    subprocess.run(["git", "apply", "-p1", str(patch)], cwd=tree, env=env, check=True, capture_output=True, text=True)


def _digest(template: Path) -> str:
    """A hash of the template's task files (names, modes, contents): a change remakes the folder."""
    h = hashlib.sha256()
    for path in sorted(p for p in template.rglob("*") if p.is_file()):
        if path.relative_to(template).parts[0] in NOT_IN_TASK:
            continue
        h.update(f"{path.relative_to(template)} {path.stat().st_mode & 0o777}\n".encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]
