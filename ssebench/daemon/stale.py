"""Workspaces that say who owns them, and a sweep of those whose owner is dead.

A daemon removes its workspace when it stops, but not after ``kill -9`` (or a power
cut in a container with a persistent ``/tmp``): the snapshot, the build mirror and the
logs stay on disk. So each workspace records its owner (pid, the kernel's start time
of that pid, boot id, pid namespace) in ``owner.json``, and a daemon starting up
removes the workspaces whose owner is gone.

The sweep is careful because ``/tmp`` is shared: it looks only at entries named
``ssebench-daemon-*`` that are real folders (``lstat``: a symlink is never followed)
owned by our uid and holding a readable owner record (opened with ``O_NOFOLLOW``
under the folder's descriptor). A record from another pid namespace is left alone
(its pid means nothing here), unless it is from an earlier boot. ``shutil.rmtree``
removes through file descriptors and never follows a symlink. Any error skips the
entry; the sweep never stops a daemon from starting.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

PREFIX = "ssebench-daemon-"
OWNER_FILE = "owner.json"
_MAX_RECORD = 4096


def _boot_id() -> str:
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return ""


def _pid_ns() -> str:
    with contextlib.suppress(OSError):
        return os.readlink("/proc/self/ns/pid")
    return ""


def start_time(pid: int) -> int | None:
    """The kernel's start time of *pid* (clock ticks since boot); None if it does not exist."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(data.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def owner_record(pid: int | None = None) -> dict[str, Any]:
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "start_time": start_time(pid), "boot_id": _boot_id(), "pid_ns": _pid_ns()}


def create_workspace(prefix: str = PREFIX, base: str | os.PathLike[str] | None = None) -> Path:
    """A fresh private (0700) workspace in the temp folder, with our owner record."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    _write_record(path)
    return path


def _write_record(path: Path) -> None:
    data = json.dumps(owner_record()).encode()
    fd = os.open(path / OWNER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def recreate_workspace(path: Path) -> None:
    """Make *path* our private workspace again after a tmp cleaner removed it (or its
    owner record). Raises OSError when something not ours is there now (``/tmp`` is
    shared: another user may have taken the name, possibly as a symlink)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o066:  # 0711: shared
        raise FileExistsError(errno.EEXIST, "its name is taken by something not ours", str(path))
    with contextlib.suppress(FileExistsError):
        _write_record(path)


def owner_alive(record: dict[str, Any]) -> bool | None:
    """True/False when we can tell, None when we cannot (another pid namespace)."""
    if record.get("boot_id") != _boot_id():
        return False  # written before the last reboot: nothing of it runs
    if record.get("pid_ns") != _pid_ns():
        return None
    pid = record.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return None
    return start_time(pid) == record.get("start_time")


def _read_record(folder_fd: int) -> dict[str, Any] | None:
    try:
        fd = os.open(OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > _MAX_RECORD:
            return None
        data = json.loads(os.read(fd, _MAX_RECORD))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else None


def sweep_dead_workspaces(base: str | os.PathLike[str] | None = None, prefix: str = PREFIX) -> list[Path]:
    """Remove the workspaces in *base* (the temp folder) whose owner is dead; the removed ones."""
    root = Path(base) if base is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = [e for e in os.scandir(root) if e.name.startswith(prefix)]
    except OSError:
        return removed
    me = os.geteuid()
    for entry in entries:
        path = root / entry.name
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != me:
                continue
            folder_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            if os.fstat(folder_fd).st_ino != st.st_ino:
                continue  # swapped between the two looks
            record = _read_record(folder_fd)
        finally:
            os.close(folder_fd)
        if record is None or owner_alive(record) is not False:
            continue
        with contextlib.suppress(OSError):
            shutil.rmtree(path)
            removed.append(path)
    return removed
