"""A file-change watch (inotify) over the agent's tree: which entries a snapshot must look
at again, so that a call with no change costs no work proportional to the tree.

Why: lstat-ing every entry of a 100,000-file tree took ~5 s a call, even with nothing
changed. A :class:`TreeWatch` is started by a full walk of the tree (workspace.py) and
vouches only for that walk: every folder is watched *before* it is listed, and every
regular file *before* its ``lstat`` is taken, so no change after what the walk saw can go
unreported. A folder watch reports entries created, deleted, renamed and its own
attributes; a file watch (on the inode, so it also hears a write through a hard link
outside the tree) reports writes, attribute changes (``touch``, ``chmod``, a new link)
and a close after writing. The next snapshot looks again at just the reported entries.

Doubt means a full walk (:meth:`TreeWatch.changes` returns None): the kernel's queue
overflowed (``IN_Q_OVERFLOW``), a folder was created, removed or renamed inside the tree
(a replaced folder, a rename over), a watched folder went away, an event names an
unknown watch. Running out of watches (``fs.inotify.max_user_watches``) or inotify
instances makes :func:`start` return None: the store then walks the whole tree every
call, as before, and says so once on stderr.

Not visible to any inotify watch: a write through a shared memory map (``mmap``). A file
ever closed after being opened for writing is therefore ``lstat``-ed again on every call
(:attr:`TreeWatch.written`), as a full walk would; a writable map made through a
descriptor that is still open at the snapshot is the one case left (docs/performance.md).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
import weakref

from ssebench.daemon.safefs import _LIBC

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x01000000, 0x02000000, 0x40000000
_IN_NONBLOCK, _IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC

_FOLDER_MASK = IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
_FILE_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
# A folder appearing, going or moving inside the tree, or a watched folder itself going.
_STRUCTURE = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_DOUBT = IN_Q_OVERFLOW | IN_UNMOUNT | IN_DELETE_SELF | IN_MOVE_SELF
_HEADER = struct.Struct("iIII")
_warned = False


class TreeWatch:
    """One inotify instance watching the folders and files one walk of the tree saw."""

    def __init__(self, fd: int, cap: int | None = None) -> None:
        self.fd = fd
        self.cap = cap  # the most watches this daemon takes (:func:`share`); None: no cap
        self._folders: dict[int, str] = {}  # wd -> folder (relative, "" for the top)
        # wd -> the tree's path of that inode (several: hard links inside the tree); a str
        # rather than a set each: 100,000 sets were ~30 MiB of the daemon's RSS
        self._files = _ByWatch()
        self.written: set[str] = set()  # files closed after a write: lstat-ed every call
        self._pending: set[str] = set()  # reported, not yet handed out
        self._doubt = False
        self._closer = weakref.finalize(self, os.close, fd)  # a dropped store frees its instance

    def close(self) -> None:
        self._closer()
        self.fd = -1

    def folder(self, rel: str, dir_fd: int) -> None:
        """Watch the open folder *dir_fd* (before it is listed). Raises WatchesExhausted."""
        self._folders[self._add(f"/proc/self/fd/{dir_fd}", _FOLDER_MASK | IN_ONLYDIR)] = rel

    def file(self, rel: str, dir_fd: int, name: str) -> None:
        """Watch the file *name* of *dir_fd* (before its lstat is taken); a symlink
        swapped in is watched itself, never followed."""
        try:
            wd = self._add(f"/proc/self/fd/{dir_fd}/{name}", _FILE_MASK | IN_DONT_FOLLOW)
        except FileNotFoundError:
            return  # gone: its folder's watch reported it
        known = self._files.get(wd)
        if known is None:
            self._files.put(wd, rel)
        elif rel not in _paths(known):
            self._files.put(wd, (*_paths(known), rel))

    def _add(self, path: str, mask: int) -> int:
        assert _LIBC is not None
        if self.cap is not None and len(self._folders) + len(self._files) >= self.cap:
            raise WatchesExhausted(f"the tree needs more than {self.cap} inotify watches, {SHARE_TEXT}")
        wd = _LIBC.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd >= 0:
            return int(wd)
        err = ctypes.get_errno()
        if err in (errno.ENOSPC, errno.ENOMEM):
            raise WatchesExhausted()
        raise OSError(err, os.strerror(err), path)

    def changes(self) -> set[str] | None:
        """The paths reported since the last call (files, or folders whose own attributes
        changed); None when only a full walk can tell (see the module's doc)."""
        self._read()
        if self._doubt:
            return None
        out, self._pending = self._pending, set()
        return out

    def _read(self) -> None:
        while not self._doubt:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
                raw = data[offset + _HEADER.size : offset + _HEADER.size + size]
                offset += _HEADER.size + size
                self._event(wd, mask, os.fsdecode(raw.rstrip(b"\0")))

    def _event(self, wd: int, mask: int, name: str) -> None:
        folder = self._folders.get(wd)
        known = self._files.get(wd) if folder is None else None
        if mask & _DOUBT or (folder is None and known is None):
            self._doubt = True
            return
        if known is not None:  # a file's own watch
            paths = _paths(known)
            if mask & IN_IGNORED:
                self._files.pop(wd)
            self._pending.update(paths)
            if mask & IN_CLOSE_WRITE:
                self.written.update(paths)
            return
        if mask & IN_IGNORED:  # a folder's watch went away (removed with it)
            self._doubt = True
            return
        rel = f"{folder}/{name}" if folder and name else folder or name
        if rel == "" or (rel == ".git" and folder == ""):
            return  # the top's own attributes are no entry; .git is never a source (a
            # change of HEAD is seen through the build outputs, looked at every call)
        if mask & IN_ISDIR and mask & _STRUCTURE:
            self._doubt = True
            return
        self._pending.add(rel)
        if mask & _STRUCTURE and folder:
            self._pending.add(folder)  # its own mtime changed with its entries


def _paths(known: str | tuple[str, ...]) -> tuple[str, ...]:
    return (known,) if isinstance(known, str) else known


Known = str | tuple[str, ...]


class _ByWatch:
    """wd -> a file's path(s): a list indexed by wd, as the kernel hands wds out in order
    from 1 (a dict of 100,000 int keys was ~8 MiB of the daemon's RSS); a wd far beyond
    the list (not seen, but not promised) goes to a dict instead."""

    def __init__(self) -> None:
        self._slots: list[Known | None] = []
        self._far: dict[int, Known] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count + len(self._far)

    def get(self, wd: int) -> Known | None:
        return self._slots[wd] if 0 <= wd < len(self._slots) else self._far.get(wd)

    def put(self, wd: int, paths: Known) -> None:
        if len(self._slots) <= wd <= 2 * len(self._slots) + 4096:
            self._slots.extend([None] * (wd + 1 - len(self._slots)))
        if 0 <= wd < len(self._slots):
            self._count += self._slots[wd] is None
            self._slots[wd] = paths
        else:
            self._far[wd] = paths

    def pop(self, wd: int) -> None:
        if 0 <= wd < len(self._slots):
            self._count -= self._slots[wd] is not None
            self._slots[wd] = None
        else:
            self._far.pop(wd, None)


class WatchesExhausted(OSError):
    """``fs.inotify.max_user_watches`` (or kernel memory, or this daemon's share) ran out."""

    def __init__(self, why: str = "inotify watches ran out") -> None:
        super().__init__(errno.ENOSPC, why)
        self.why = why


# The watches are the user's, shared with every process of it (the agent's own file
# watchers, other runs' daemons): one daemon never takes more than three quarters of them.
SHARE_TEXT = "three quarters of fs.inotify.max_user_watches: the rest is left to other programs"
_MAX_USER_WATCHES = "/proc/sys/fs/inotify/max_user_watches"


def share() -> int | None:
    """The most watches one daemon takes; None where the limit cannot be read."""
    try:
        with open(_MAX_USER_WATCHES, encoding="ascii") as f:
            return int(f.read()) * 3 // 4
    except (OSError, ValueError):
        return None


def start() -> TreeWatch | None:
    """A new, empty watch; None where inotify is unavailable (said once on stderr)."""
    if _LIBC is None or not hasattr(_LIBC, "inotify_init1"):
        return None
    fd = _LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
    if fd < 0:
        unavailable(os.strerror(ctypes.get_errno()))
        return None
    return TreeWatch(int(fd), share())


def unavailable(why: str) -> None:
    """Say once per daemon that every call walks the whole tree, and why."""
    global _warned
    if not _warned:
        _warned = True
        print(
            f"ssebench daemon: no file-change watch over the tree ({why}): every call reads the status"
            " of every file (a watch takes one inotify watch per file and folder, fs.inotify.max_user_watches,"
            " and one instance, max_user_instances)",
            file=sys.stderr,
            flush=True,
        )
