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


IN_PLACE = st.lists(st.tuples(st.sampled_from(["write", "append", "chmod", "touch", "replace"]), st.integers(0, 99)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(setup=st.lists(PATHS, min_size=1, max_size=6), update=IN_PLACE)
def test_a_refreshed_scan_is_a_whole_scan_after_files_rewritten_in_place(tmp_path_factory, setup, update):
    """What the build mirror's update does between two builds (files written again where
    they are, no folder made or removed): refreshing the folders of those files and
    their folders gives the whole scan, without the fallback to one."""
    root = tmp_path_factory.mktemp("mirror")
    for n, rel in enumerate(setup):
        _apply(root, "write", rel, n)
    kept = treescan.scan(root)
    files = sorted(rel for rel, entry in _plain(root).items() if stat.S_ISREG(entry[0]))
    rewritten = set()
    for n, (action, pick) in enumerate(update):
        rel = files[pick % len(files)]
        _apply(root, action, rel, 100 + n)
        rewritten.add(rel)
    whole = treescan.scan(root)
    calls: list[Path] = []
    real_scan = treescan.scan
    try:
        treescan.scan = lambda r: calls.append(r) or real_scan(r)  # type: ignore[assignment]
        assert treescan.refresh(kept, root, treescan.parents(rewritten)) == whole
    finally:
        treescan.scan = real_scan  # type: ignore[assignment]
    assert calls == []  # taken from the listings refreshed, not from a whole scan


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(setup=ACTIONS, later=ACTIONS)
def test_a_refreshed_scan_is_a_whole_scan_whatever_changed_in_its_folders(tmp_path_factory, setup, later):
    """Anything done (folders made and removed too), the folders of every path touched
    and all their folders refreshed: the whole scan (through its fallback where needed)."""
    root = tmp_path_factory.mktemp("mirror")
    for n, (action, rel) in enumerate(setup):
        _apply(root, action, rel, n)
    kept = treescan.scan(root)
    folders = {""}
    for n, (action, rel) in enumerate(later):
        _apply(root, action, rel, 100 + n)
        parts = rel.split("/")
        folders |= {"/".join(parts[:i]) for i in range(len(parts))}
        if action in ("write", "append", "link", "mkdir"):  # they make the folders on the way
            folders |= {"/".join(parts[: i + 1]) for i in range(len(parts))}
    assert treescan.refresh(kept, root, folders) == treescan.scan(root)
