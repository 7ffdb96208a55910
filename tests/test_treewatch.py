"""The file-change watch (treewatch.py): a snapshot taken with it is exactly the snapshot
of a fresh full walk, after any change, including the ones a watch cannot see cheaply
(a touched mtime, a replaced folder, a hard link written from outside the tree).

Real inotify, real files; a real daemon for the answers a call gives.
"""

from __future__ import annotations

import mmap
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssebench.daemon import treewatch
from ssebench.daemon.workspace import Manifest, SourceStore
from tests.helpers.daemon import running_daemon
from tests.helpers.tasks import make_task

pytestmark = pytest.mark.timeout(300)

NAMES = ["a", "b", "c.o", "d"]
FOLDERS = ["", "x", "x/y", "z"]


def _view(manifest: Manifest) -> dict[str, tuple[str, int, str, int]]:
    return {rel: (e.kind, e.mode, e.data, e.mtime_ns) for rel, e in manifest.items()}


def _fresh(tree: Path, root: Path) -> tuple[dict[str, tuple[str, int, str, int]], int, int]:
    shutil.rmtree(root, ignore_errors=True)
    snap = SourceStore(tree, root).sync()
    return _view(snap.manifest), snap.files, snap.bytes


class Bench:
    """A watching store and the tree it snapshots; ``check`` compares with a fresh walk."""

    def __init__(self, tmp: Path, *, watched: bool = True) -> None:
        self.tmp = tmp
        self.tree = tmp / "tree"
        self.outside = tmp / "outside"
        for folder in FOLDERS:
            (self.tree / folder).mkdir(parents=True, exist_ok=True)
            (self.tree / folder / "a").write_text(f"a of {folder}\n")
        self.outside.mkdir()
        self.store = SourceStore(self.tree, tmp / "store")
        self.store.sync()
        if watched and not self.store.watching:  # other processes hold this user's watches
            pytest.skip("no inotify watch left on this machine now (fs.inotify.max_user_watches)")

    def check(self) -> int:
        """Sync with the watch; assert it equals a fresh walk; the full walks it took."""
        walks = self.store.walks
        snap = self.store.sync()
        assert (_view(snap.manifest), snap.files, snap.bytes) == _fresh(self.tree, self.tmp / "fresh")
        return self.store.walks - walks


def _op(b: Bench, op: str, folder: str, name: str, n: int) -> None:
    if not (b.tree / folder).is_dir():
        return  # replaced by an earlier step
    path = b.tree / folder / name
    there = path.is_file() and not path.is_symlink()
    if op == "write":
        if path.is_dir() or path.is_symlink():
            return
        path.write_text(f"content {n}\n")
    elif op == "append" and there:
        with open(path, "a") as f:
            f.write("more\n")
    elif op == "touch" and there:
        os.utime(path, ns=(n * 1_000_000_007, n * 1_000_000_007))
    elif op == "chmod" and there:
        path.chmod(0o755 if n % 2 else 0o644)
    elif op == "delete" and there:
        path.unlink()
    elif op == "rename" and there:
        path.rename(b.tree / folder / f"r{n % 3}")
    elif op == "symlink" and not path.exists() and not path.is_symlink():
        path.symlink_to(f"target{n}")
    elif op == "hardlink_out" and there:  # a link outside the tree, then written through it
        out = b.outside / f"l{n}"
        if not out.exists():
            os.link(path, out)
        with open(out, "a") as f:
            f.write(f"from outside {n}\n")
    elif op == "hardlink_in" and there and not (b.tree / folder / "h").exists():
        os.link(path, b.tree / folder / "h")
    elif op == "mmap" and there and path.stat().st_size:  # a write no event reports
        with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
            m[0:1] = b"M" if m[0:1] != b"M" else b"N"
    elif op == "replace_folder" and folder:  # rename over: a new folder at the same path
        new = b.tree / f"new{n}"
        new.mkdir()
        (new / "a").write_text(f"replaced {n}\n")
        shutil.rmtree(b.tree / folder)
        new.rename(b.tree / folder)
    elif op == "mkdir" and not path.exists() and not path.is_symlink():
        path.mkdir()


OPS = ["write", "append", "touch", "chmod", "delete", "rename", "symlink", "hardlink_out", "hardlink_in"]
OPS += ["mmap", "replace_folder", "mkdir"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.lists(
            st.tuples(st.sampled_from(OPS), st.sampled_from(FOLDERS), st.sampled_from(NAMES), st.integers(1, 50)),
            max_size=4,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_a_snapshot_with_the_watch_is_a_fresh_walks_snapshot(tmp_path_factory, steps):
    b = Bench(tmp_path_factory.mktemp("w"), watched=False)  # equal with or without the watch
    for batch in steps:
        for op, folder, name, n in batch:
            _op(b, op, folder, name, n)
        b.check()


def test_no_change_reads_nothing_and_walks_nothing(tmp_path):
    b = Bench(tmp_path)
    first = b.store.sync()
    again = b.store.sync()
    assert again.manifest is first.manifest  # buildgraph.plan's fast path: the very entries
    assert again.read_files == 0
    assert b.store.walks == 1


@pytest.mark.parametrize(
    "op", ["write", "append", "touch", "chmod", "delete", "rename", "symlink", "hardlink_out", "hardlink_in", "mmap"]
)
def test_a_file_change_is_followed_without_a_walk(tmp_path, op):
    b = Bench(tmp_path)
    _op(b, op, "x", "d" if op == "symlink" else "a", 7)
    assert b.check() == 0
    _op(b, "append" if op != "delete" else "write", "x", "a", 8)  # and again: still watched
    assert b.check() == 0


def test_a_replaced_folder_makes_a_full_walk(tmp_path):
    b = Bench(tmp_path)
    _op(b, "replace_folder", "x", "a", 3)
    assert b.check() == 1
    (b.tree / "x" / "a").write_text("in the new folder\n")  # the new folder is watched
    assert b.check() == 0


def test_running_out_of_watches_falls_back_to_walks_and_says_so_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(treewatch, "_warned", False)

    def exhausted(self: treewatch.TreeWatch, path: str, mask: int) -> int:
        raise treewatch.WatchesExhausted()

    monkeypatch.setattr(treewatch.TreeWatch, "_add", exhausted)
    b = Bench(tmp_path, watched=False)
    for n in range(3):
        (b.tree / "x" / "a").write_text(f"v{n}\n")
        assert b.check() == 1
    assert capsys.readouterr().err.count("no file-change watch over the tree (inotify watches ran out") == 1


def test_an_overflowing_queue_makes_a_full_walk(tmp_path):
    b = Bench(tmp_path)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 50_000:
        pytest.skip("the kernel's inotify queue is too long to overflow quickly")
    path = b.tree / "x" / "a"
    for n in range(limit + 10):  # distinct events (a touch each): no coalescing
        os.utime(path, ns=(n, n))
    assert b.check() == 1


def test_a_daemon_answers_each_change_a_watch_cannot_see_cheaply(tmp_path):
    files = make_task(
        tmp_path / "task",
        build="cat sub/v sub/w; ls -l --time-style=+%s sub/v | cut -d' ' -f6",
        functional=None,
        tree_files={"sub/v": "one\n", "sub/w": "w\n"},
    )
    tree = files.tree
    outside = tmp_path / "outside"
    outside.mkdir()
    with running_daemon(files.file, difficulty="0") as d:

        def build_log() -> str:
            events = d.run(["build"])
            return d.log(events[-1]["run_id"], "build")

        assert build_log().startswith("one\nw\n")
        os.utime(tree / "sub" / "v", (1_000_000_000, 1_000_000_000))  # a touched mtime
        assert build_log() == "one\nw\n1000000000\n\n"
        os.link(tree / "sub" / "w", outside / "w")  # a hard link, written from outside
        with open(outside / "w", "a") as f:
            f.write("through the link\n")
        assert build_log().startswith("one\nw\nthrough the link\n")
        new = tree / "new"  # a replaced folder (rename over)
        new.mkdir()
        (new / "v").write_text("two\n")
        (new / "w").write_text("w2\n")
        shutil.rmtree(tree / "sub")
        new.rename(tree / "sub")
        assert build_log().startswith("two\nw2\n")
        assert build_log().startswith("two\nw2\n")  # and no change after it


def test_a_file_written_then_left_alone_gives_the_very_manifest_again(tmp_path):
    b = Bench(tmp_path)
    (b.tree / "x" / "a").write_text("new\n")  # written: looked at again every call (mmap)
    b.store.sync()
    one, two = b.store.sync(), b.store.sync()
    assert two.manifest is one.manifest  # read again (racy) or not, the same entries
    assert b.store.walks == 1


@pytest.mark.parametrize(
    ("error", "said"),
    [(treewatch.WatchesExhausted(), "inotify watches ran out"), (PermissionError(13, "Permission denied"), "cannot")],
)
def test_a_watch_that_cannot_grow_gives_way_to_a_walk(tmp_path, monkeypatch, capsys, error, said):
    b = Bench(tmp_path)
    monkeypatch.setattr(treewatch, "_warned", False)

    def refuse(self: treewatch.TreeWatch, path: str, mask: int) -> int:
        raise error

    monkeypatch.setattr(treewatch.TreeWatch, "_add", refuse)
    (b.tree / "x" / "new").write_text("a file the watch must watch\n")
    assert b.check() == 1  # the revisit could not watch it: walked, and right
    assert not b.store.watching
    assert f"no file-change watch over the tree ({said}" in capsys.readouterr().err


def test_a_daemon_takes_at_most_its_share_of_the_users_watches(tmp_path, monkeypatch, capsys):
    """Three quarters of fs.inotify.max_user_watches: a tree that needs more is walked every
    call (and right), and the rest stays for the agent's own watchers and other daemons."""
    assert treewatch.share() == int(Path("/proc/sys/fs/inotify/max_user_watches").read_text()) * 3 // 4
    monkeypatch.setattr(treewatch, "_warned", False)
    monkeypatch.setattr(treewatch, "share", lambda: 3)  # fewer than this tree's folders and files
    b = Bench(tmp_path, watched=False)
    assert not b.store.watching
    (b.tree / "x" / "a").write_text("changed\n")
    assert b.check() == 1
    assert (
        "no file-change watch over the tree (the tree needs more than 3 inotify watches, three quarters"
        " of fs.inotify.max_user_watches: the rest is left to other programs)" in capsys.readouterr().err
    )


WDS = st.one_of(st.integers(-1, 40), st.integers(5000, 10**9))  # in order, and far off


@given(st.lists(st.tuples(st.sampled_from(["put", "pop"]), WDS, st.sampled_from(["p", "q"])), max_size=40))
def test_the_files_by_watch_answer_as_a_dict_does(ops: list[tuple[str, int, str]]) -> None:
    kept, want = treewatch._ByWatch(), dict[int, str]()
    for op, wd, rel in ops:
        if op == "put" and wd >= 1:  # the kernel's wds start at 1
            kept.put(wd, rel)
            want[wd] = rel
        elif op == "pop":
            kept.pop(wd)
            want.pop(wd, None)
        assert len(kept) == len(want)
        assert all(kept.get(w) == want.get(w) for w in {wd, *want})
