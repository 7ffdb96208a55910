"""File operations that never follow a symlink the agent (or its build) planted.

Why: the daemon reads the agent's tree and writes the build mirror with its own
privileges, while agent processes may be changing both (a folder swapped for a symlink
to the task folder between a listing and a read; a build that leaves symlinks to host
folders in the mirror). Every operation here resolves paths from a directory file
descriptor one component at a time with ``O_NOFOLLOW`` (``openat2`` with
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`` where the kernel has it), and acts on the
last component with ``dir_fd`` and no-follow flags. A path that is not what it should
be raises :class:`Unsafe` (an ``OSError``), which callers treat as "changed while we
looked": skip it, or start the mirror afresh.

Every creating call takes an optional *owner* ``(uid, gid)`` to ``fchown`` the new
entry to (a daemon running as root hands the mirror to an unprivileged uid).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import stat
from collections import OrderedDict
from collections.abc import Iterator

Owner = tuple[int, int] | None

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in for a file must not block the daemon on open.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_O_PATH = getattr(os, "O_PATH", 0)
_SYS_OPENAT2 = 437  # the same number on every Linux architecture (new syscall table)
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x02, 0x04, 0x08
_openat2_works: bool | None = None  # probed on first use

assert shutil.rmtree.avoids_symlink_attacks, "shutil.rmtree must remove through fds"


class Unsafe(OSError):
    """A path component is a symlink or not the kind expected: never followed."""

    def __init__(self, path: str, what: str = "is a symlink or changed while read") -> None:
        super().__init__(errno.ELOOP, what, path)


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()


def _openat2(dir_fd: int, rel: str, flags: int) -> int | None:
    """``openat2`` beneath *dir_fd* with no symlink at all; None where the kernel lacks it."""
    global _openat2_works
    if _LIBC is None or _openat2_works is False:
        return None
    how = _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    for _ in range(8):  # EAGAIN: a rename raced the lookup; the kernel asks us to retry
        fd = _LIBC.syscall(_SYS_OPENAT2, dir_fd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how))
        if fd >= 0:
            _openat2_works = True
            return int(fd)
        err = ctypes.get_errno()
        if err != errno.EAGAIN:
            break
    if err in (errno.ENOSYS, errno.EPERM, errno.E2BIG) and _openat2_works is None:
        _openat2_works = False  # old kernel, or a seccomp filter (Docker) refuses it
        return None
    if err in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
        raise Unsafe(rel)
    raise OSError(err, os.strerror(err), rel)


def open_dir(dir_fd: int, rel: str) -> int:
    """A new fd of the folder *rel* under *dir_fd*, reached through no symlink."""
    if rel in ("", "."):
        return os.open(".", _DIR_FLAGS, dir_fd=dir_fd)
    fd = _openat2(dir_fd, rel, _DIR_FLAGS)
    if fd is not None:
        return fd
    current = os.open(".", _DIR_FLAGS, dir_fd=dir_fd)
    try:
        for name in rel.split("/"):
            if name in ("", ".", ".."):
                raise Unsafe(rel, "is not a plain relative path")
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=current)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Unsafe(rel) from None
                raise
            os.close(current)
            current = nxt
    except BaseException:
        os.close(current)
        raise
    return current


def open_root(path: str | os.PathLike[str]) -> int:
    """An fd of the absolute folder *path*, resolved with no symlink in any component
    (*path* was resolved once at start; a symlink appearing in it later is refused)."""
    root = os.open("/", _DIR_FLAGS)
    try:
        return open_dir(root, os.fspath(path).strip("/"))
    finally:
        os.close(root)


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of *name* in *dir_fd*; None if it does not exist."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def open_file(dir_fd: int, name: str, expect: os.stat_result | None = None) -> tuple[int, os.stat_result] | None:
    """Open the regular file *name* for reading, never through a symlink; (fd, fstat).

    None when it is gone or is no longer a regular file (the caller skips it). When
    *expect* (the listing's ``lstat``) names another inode, the file was replaced by
    another regular file since: the one opened is what is there now, and its ``fstat``
    is returned to describe it.
    """
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None  # became a symlink: skipped, never followed
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (expect is not None and st.st_dev != expect.st_dev):
        os.close(fd)
        return None
    return fd, st


def scandir_fd(dir_fd: int) -> list[tuple[str, os.stat_result]]:
    """(name, lstat) of every entry of the folder *dir_fd* (entries gone meanwhile left out)."""
    out: list[tuple[str, os.stat_result]] = []
    with os.scandir(dir_fd) as it:  # works on a dup of the fd: *dir_fd* stays ours
        for item in it:
            with contextlib.suppress(FileNotFoundError):
                out.append((item.name, item.stat(follow_symlinks=False)))
    return out


def subdir(dir_fd: int, name: str, expect: os.stat_result) -> int | None:
    """Open the folder *name* the listing saw (*expect*); None if it is not that folder now."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
            return None
        raise
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (expect.st_dev, expect.st_ino):
        os.close(fd)
        return None
    return fd


def chmod_at(dir_fd: int, name: str, mode: int) -> None:
    """``chmod`` *name* itself (never a symlink's target; a symlink raises Unsafe)."""
    fd = os.open(name, (_O_PATH or os.O_RDONLY | os.O_NONBLOCK) | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if stat.S_ISLNK(os.fstat(fd).st_mode):
            raise Unsafe(name)
        if _O_PATH:
            os.chmod(f"/proc/self/fd/{fd}", mode)  # an O_PATH fd's magic link: that inode
        else:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def chmod_path(path: os.PathLike[str], mode: int) -> None:
    """``chmod`` the last component of *path* (its folders are the daemon's own)."""
    parent = os.open(os.path.dirname(path), _DIR_FLAGS)
    try:
        chmod_at(parent, os.path.basename(path), mode)
    finally:
        os.close(parent)


def utime_at(dir_fd: int, name: str, ns: int) -> None:
    """Set the mtime (and atime) of *name* itself, not of what a symlink points to."""
    os.utime(name, ns=(ns, ns), dir_fd=dir_fd, follow_symlinks=False)


def mkdir_at(dir_fd: int, name: str, mode: int = 0o700, owner: Owner = None) -> None:
    os.mkdir(name, mode, dir_fd=dir_fd)  # mkdirat never follows a final symlink
    if owner is not None:
        os.chown(name, *owner, dir_fd=dir_fd, follow_symlinks=False)


def symlink_at(target: str, dir_fd: int, name: str, owner: Owner = None) -> None:
    os.symlink(target, name, dir_fd=dir_fd)
    if owner is not None:
        os.chown(name, *owner, dir_fd=dir_fd, follow_symlinks=False)


def create_file(dir_fd: int, name: str, owner: Owner = None) -> int:
    """A new file *name* (``O_EXCL``: never an existing file or a symlink's target)."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    if owner is not None:
        os.fchown(fd, *owner)
    return fd


def remove_at(dir_fd: int, name: str) -> None:
    """Remove *name* (a folder with all it holds), never following a symlink."""
    st = lstat_at(dir_fd, name)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)  # through fds: avoids_symlink_attacks
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)


class DirFds:
    """Folder fds under one root, opened without following symlinks, a few kept open.

    For many operations in the same folders (a mirror update) without walking the
    path again for each; :meth:`forget` drops the fds of a folder removed meanwhile.
    """

    def __init__(self, root_fd: int, keep: int = 32) -> None:
        self.root = root_fd
        self._keep = keep
        self._fds: OrderedDict[str, int] = OrderedDict()

    def get(self, rel: str) -> int:
        """The fd of folder *rel* ("" is the root); raises Unsafe through a symlink."""
        if rel == "":
            return self.root
        fd = self._fds.get(rel)
        if fd is not None:
            self._fds.move_to_end(rel)
            return fd
        fd = open_dir(self.root, rel)
        self._fds[rel] = fd
        if len(self._fds) > self._keep:
            os.close(self._fds.popitem(last=False)[1])
        return fd

    def parent(self, rel: str) -> tuple[int, str]:
        """(fd of the folder holding *rel*, its last name)."""
        head, _, name = rel.rpartition("/")
        return self.get(head), name

    def forget(self, rel: str) -> None:
        for key in [k for k in self._fds if k == rel or k.startswith(rel + "/")]:
            os.close(self._fds.pop(key))

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        os.close(self.root)

    def __enter__(self) -> DirFds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def data_ranges(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """(offset, length) of the parts of the file *fd* that hold data (``SEEK_DATA``/
    ``SEEK_HOLE``): a sparse file's holes are never read. The whole file where the
    filesystem cannot tell."""
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                return  # only a hole is left
            if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):
                yield pos, size - pos
                return
            raise
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        if end <= start:
            return
        yield start, end - start
        pos = end
