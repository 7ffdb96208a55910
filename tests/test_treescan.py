"""The build mirror's scans (treescan.py): the compact scan tells exactly what a plain
path -> lstat comparison of the two trees tells, whatever the build did between them."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssebench.daemon import treescan

NAMES = st.sampled_from(["a", "b", "c.o", "d d", "é", "x\udcff"])  # a name that is not UTF-8 too
PATHS = st.lists(NAMES, min_size=1, max_size=3).map("/".join)
ACTIONS = st.lists(
    st.tuples(st.sampled_from(["write", "append", "remove", "mkdir", "chmod", "touch", "link", "replace"]), PATHS),
    max_size=12,
)


def _plain(root: Path) -> dict[str, tuple[int, int, int, int, int]]:
    """Every entry under *root*: path -> (mode, size, mtime, ino, ctime), symlinks not followed."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            st_ = path.lstat()
            out[rel] = (st_.st_mode, st_.st_size, st_.st_mtime_ns, st_.st_ino, st_.st_ctime_ns)
    return out


def _plain_written(before: dict, after: dict) -> set[str]:
    return {
        rel
        for rel in before.keys() | after.keys()
        if before.get(rel) is None
        or after.get(rel) is None
        or (before[rel] != after[rel] and not stat.S_ISDIR(after[rel][0]))
    }


def _apply(root: Path, action: str, rel: str, n: int) -> None:
    path = root / rel
    try:
        if action in ("write", "append"):
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a" if action == "append" else "w") as f:
                f.write(f"{n}\n")
        elif action == "remove":
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        elif action == "mkdir":
            path.mkdir(parents=True)
        elif action == "chmod":
            path.chmod(0o700 if n % 2 else 0o755)
        elif action == "touch":
            os.utime(path, ns=(n * 10**9, n * 10**9))
        elif action == "link":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.symlink_to(f"target-{n}")
        else:  # replace: a new inode with the same content
            data = path.read_bytes()
            path.unlink()
            path.write_bytes(data)
    except OSError:
        pass  # not applicable to what is there now: the next action


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(setup=ACTIONS, build=ACTIONS)
def test_the_scan_finds_what_a_plain_comparison_finds(tmp_path_factory, setup, build):
    root = tmp_path_factory.mktemp("mirror")
    for n, (action, rel) in enumerate(setup):
        _apply(root, action, rel, n)
    before, plain_before = treescan.scan(root), _plain(root)
    for n, (action, rel) in enumerate(build):
        _apply(root, action, rel, 100 + n)
    after, plain_after = treescan.scan(root), _plain(root)
    assert treescan.written(before, after) == _plain_written(plain_before, plain_after)
    for rel in plain_before.keys() | plain_after.keys() | {"a/zz", "zz"}:
        assert treescan.has(after, rel) == (rel in plain_after)
    assert treescan.written(after, treescan.scan(root)) == set()  # nothing changed since
