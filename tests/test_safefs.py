"""The no-follow primitives of ssebench.daemon.safefs, on real files (both lookups: openat2
where the kernel has it, and the O_NOFOLLOW walk)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.daemon import safefs


@pytest.fixture(params=["openat2", "walk"])
def lookup(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "walk":
        monkeypatch.setattr(safefs, "_openat2_works", False)
    yield request.param


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    root, host = tmp_path / "root", tmp_path / "host"
    (root / "real" / "deep").mkdir(parents=True)
    host.mkdir()
    (host / "secret").write_text("SECRET\n")
    (root / "link").symlink_to(host)
    (root / "real" / "hop").symlink_to(host)
    (root / "filelink").symlink_to(host / "secret")
    return root, host


def test_open_dir_never_goes_through_a_symlink(tmp_path, lookup):
    root, _ = _layout(tmp_path)
    fd = safefs.open_root(root)
    try:
        sub = safefs.open_dir(fd, "real/deep")
        os.close(sub)
        for rel in ("link", "real/hop", "link/x", "filelink", "../host", "real/../link"):
            with pytest.raises(OSError):
                os.close(safefs.open_dir(fd, rel))
    finally:
        os.close(fd)


def test_open_root_refuses_a_symlink_in_the_path(tmp_path, lookup):
    root, _ = _layout(tmp_path)
    with pytest.raises(safefs.Unsafe):
        safefs.open_root(root / "link")


def test_files_and_changes_are_never_followed(tmp_path):
    root, host = _layout(tmp_path)
    fd = safefs.open_root(root)
    try:
        assert safefs.open_file(fd, "filelink") is None  # a symlink: skipped
        assert safefs.open_file(fd, "real") is None  # a folder now: skipped
        os.mkfifo(root / "fifo")
        assert safefs.open_file(fd, "fifo") is None  # never blocks on a FIFO
        with pytest.raises(safefs.Unsafe):
            safefs.chmod_at(fd, "filelink", 0o600)
        safefs.utime_at(fd, "filelink", 0)
        assert (host / "secret").stat().st_mtime_ns != 0
        safefs.remove_at(fd, "link")  # removes the link, not what it points to
        assert (host / "secret").read_text() == "SECRET\n"
        with pytest.raises(FileExistsError):
            safefs.create_file(fd, "filelink")
        assert safefs.subdir(fd, "real", os.lstat(root / "filelink")) is None  # not what was listed
    finally:
        os.close(fd)


def test_data_ranges_skip_holes(tmp_path):
    path = tmp_path / "sparse"
    with open(path, "wb") as f:
        f.write(b"head")
        f.seek(1 << 30)
        f.write(b"tail")
    fd = os.open(path, os.O_RDONLY)
    try:
        ranges = list(safefs.data_ranges(fd, os.fstat(fd).st_size))
    finally:
        os.close(fd)
    assert ranges[0][0] == 0 and ranges[-1][0] + ranges[-1][1] == (1 << 30) + 4
    assert sum(length for _, length in ranges) < 1 << 20


def test_no_fd_is_left_open(tmp_path):
    root, _ = _layout(tmp_path)
    before = len(os.listdir("/proc/self/fd"))
    fd = safefs.open_root(root)
    for _ in range(20):
        safefs.scandir_fd(fd)
        with safefs.DirFds(os.dup(fd), keep=2) as dirs:
            dirs.get("real")
            dirs.get("real/deep")
            dirs.get("real/deep")
            dirs.forget("real")
    os.close(fd)
    assert len(os.listdir("/proc/self/fd")) == before
