"""The file layer, written once for every client: read, lock, diff, back up, replace atomically.

A user's config is never half-written, never truncated by a concurrent writer, and a
malformed file is reported (file and line) and left untouched. What goes into the text is the
format editors' business (``agents/formats/``); what an install added, to take back on
uninstall, is ``agents/installs.py``'s.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

BOM = "\ufeff"


class ConfigError(Exception):
    """A config file we must not touch: malformed, or a key of the wrong type."""

    def __init__(self, path: Path, message: str, line: int | None = None) -> None:
        self.path, self.message, self.line = path, message, line
        where = f"{path}, line {line}" if line else str(path)
        super().__init__(f"{where}: {message}")


# --------------------------------------------------------------------------- the file layer


@dataclass(frozen=True)
class Change:
    """What an edit does to one file; ``None`` text means "no file"."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        if not self.changed:
            return ""
        before = (self.before or "").splitlines(keepends=True)
        after = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            before,
            after,
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _read_bytes(path: Path) -> bytes | None:
    try:
        # O_NONBLOCK: a FIFO in the config's place must not hang us; only regular files are read
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigError(path, "is a directory, not a config file") from None
    except PermissionError:
        raise ConfigError(path, "cannot be read (permission denied)") from None
    except OSError as exc:
        raise ConfigError(path, f"cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(path, "is not a regular file (a FIFO, socket or device), not a config file")
        return stream.read()


def _decode(path: Path, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, "is not UTF-8 text", data.count(b"\n", 0, exc.start) + 1) from None
    if text.startswith(BOM + BOM):
        # One BOM is an editor's habit and is kept; two are a broken file no client reads.
        raise ConfigError(
            path, "starts with two byte-order marks (U+FEFF); no client reads it so, remove one and try again", 1
        )
    return text[1:] if text.startswith(BOM) else text


def read_text(path: Path) -> str | None:
    """The file's text (BOM removed), or None when there is no file."""
    data = _read_bytes(path)
    return None if data is None else _decode(path, data)


def real_path(path: Path) -> Path:
    """Write through a symlink (dotfile managers link config files), never replace the link."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def cache_folder(env: Mapping[str, str], home: Path) -> Path:
    """ssebench's cache folder for a user (settings.cache_dir: ``SSEBENCH_CACHE``, else
    ``$XDG_CACHE_HOME/ssebench``, else ``HOME/.cache/ssebench``). An edit for another
    environment (a run's private HOME) locks there, where that environment's own
    ``ssebench agents`` would."""
    from ssebench.settings import cache_dir

    return cache_dir(environ=env, home=home)


def _own_cache() -> Path:
    from ssebench.settings import cache_dir

    return cache_dir()


def _digest(path: Path, *more: str) -> str:
    return hashlib.sha256("\0".join([str(path.resolve()), *more]).encode()).hexdigest()[:24]


def lock_for(path: Path, cache: Path | None = None):
    """An inter-process lock for ``path``, kept in a folder we own rather than next to the
    config (a project-scope lock file would show up in the project's tree): ``cache``/locks,
    by default this process's user's. Claude Code's own lock is taken as well, see :func:`app_lock`."""
    from filelock import FileLock

    base = (cache or _own_cache()) / "locks"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    return FileLock(str(base / f"{_digest(path)}.lock"), timeout=60)


# --------------------------------------------------------------------------- the client's own lock

# Claude Code locks ~/.claude.json (and $CLAUDE_CONFIG_DIR/.claude.json) while it rewrites it,
# the proper-lockfile way: the lock is a DIRECTORY `<file>.lock` made with mkdir (atomic), kept
# fresh by its holder touching its mtime every few seconds, and taken over by others once its
# mtime is older than the stale limit (proper-lockfile's default, 10 s). Taking the same lock
# means Claude Code never rewrites the file between our read and our rename.
APP_LOCKED_NAMES = (".claude.json",)
APP_LOCK_STALE_SECONDS = 10.0
APP_LOCK_TIMEOUT_SECONDS = 10.0


@contextlib.contextmanager
def app_lock(path: Path, timeout: float | None = None) -> Iterator[Path | None]:
    """Hold the client's own ``<path>.lock`` directory while ``path`` is written (for the files
    in ``APP_LOCKED_NAMES``; a no-op for the rest). ``path`` as the client names it (not
    resolved: proper-lockfile is used with ``realpath: false``)."""
    if path.name not in APP_LOCKED_NAMES:
        yield None
        return
    lock = path.with_name(path.name + ".lock")
    timeout = APP_LOCK_TIMEOUT_SECONDS if timeout is None else timeout
    deadline = time.monotonic() + timeout
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)  # the write would make it anyway
            os.mkdir(lock, 0o777)
            break
        except FileExistsError:
            pass
        except OSError as exc:
            raise ConfigError(path, f"cannot take Claude Code's lock {lock}: {exc.strerror}") from None
        try:
            age = time.time() - os.stat(lock).st_mtime
        except FileNotFoundError:
            continue  # released meanwhile
        if age > APP_LOCK_STALE_SECONDS:
            with contextlib.suppress(OSError):  # a holder that died: take it over, as Claude Code would
                os.rmdir(lock)
            continue
        if time.monotonic() >= deadline:
            raise ConfigError(
                path,
                f"is locked by Claude Code ({lock} has been held for more than {timeout:g} s, "
                "refreshed by a running claude); try again when Claude Code is idle",
            )
        time.sleep(0.05)
    try:
        yield lock
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(lock)


# --------------------------------------------------------------------------- writing


FS_IOC_GETFLAGS = 0x80086601  # linux/fs.h
FS_IMMUTABLE_FL, FS_APPEND_FL = 0x10, 0x20


def _inode_flags(path: Path) -> int:
    """The file's chattr flags (0 where the filesystem or platform has none)."""
    import array
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return 0
    try:
        buf = array.array("l", [0])
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, buf, True)
        return int(buf[0])
    except OSError:
        return 0
    finally:
        os.close(fd)


def check_writable(target: Path) -> None:
    """Refuse, before writing anything, a config its owner made read-only or immutable: a
    rename would replace a 0444 file (and root ignores the mode), against the user's intent."""
    try:
        st = target.stat()
    except FileNotFoundError:
        return
    flags = _inode_flags(target)
    if flags & (FS_IMMUTABLE_FL | FS_APPEND_FL):
        flag = "i" if flags & FS_IMMUTABLE_FL else "a"
        raise ConfigError(
            target,
            f"is {'immutable' if flag == 'i' else 'append-only'} (chattr +{flag}); "
            f"ssebench leaves it so (chattr -{flag} lets it edit the file)",
        )
    if not st.st_mode & stat.S_IWUSR:
        raise ConfigError(
            target,
            f"is read-only (mode {stat.S_IMODE(st.st_mode):04o}); ssebench does not replace a "
            "read-only config (chmod u+w lets it edit the file)",
        )
    if not os.access(target, os.W_OK):
        if os.statvfs(target).f_flag & os.ST_RDONLY:
            raise ConfigError(target, "is on a read-only file system; ssebench cannot change it there")
        raise ConfigError(
            target,
            f"is not writable for you (owner uid {st.st_uid}, mode "
            f"{stat.S_IMODE(st.st_mode):04o}); ssebench does not replace it",
        )


def _temp_copy(next_to: Path, data: bytes, mode: int) -> str:
    """``data`` in a new temp file in ``next_to``'s folder (synced, with ``mode``); its path."""
    fd, tmp = tempfile.mkstemp(dir=next_to.parent, prefix=f".{next_to.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def atomic_write(path: Path, data: bytes, mode: int) -> None:
    """``path`` holds ``data`` (with ``mode``) or what it held before, never a part."""
    tmp = _temp_copy(path, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _why(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.EPERM:
        reason += " (an immutable file or folder? lsattr shows an 'i')"
    return reason


def _commit(target: Path, raw: bytes | None, new: bytes | None, mode: int) -> None:
    """Put ``new`` in place of ``target`` (None: delete it) and ``raw`` (the old bytes) in
    ``NAME.bak`` — both or neither. Both are first written to temp files beside them; the
    config is replaced first, the .bak after; if the .bak cannot be replaced the old bytes
    go back. Whatever fails, no temp file stays and the message names the config."""
    bak = target.with_name(target.name + ".bak")
    tmp_new = tmp_bak = None
    try:
        try:
            if new is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp_new = _temp_copy(target, new, mode)
            if raw is not None:
                tmp_bak = _temp_copy(bak, raw, mode)
        except OSError as exc:
            raise ConfigError(
                target, f"cannot be written: cannot create a file in {target.parent}: {_why(exc)}"
            ) from None
        try:
            if tmp_new is not None:
                os.replace(tmp_new, target)
                tmp_new = None
            else:
                target.unlink()
        except OSError as exc:
            raise ConfigError(
                target, f"cannot be {'replaced' if new is not None else 'removed'}: {_why(exc)}"
            ) from None
        if tmp_bak is not None:
            kept = tmp_bak
            try:
                os.replace(kept, bak)
                tmp_bak = None
            except OSError as exc:
                tmp_bak = None
                try:
                    os.replace(kept, target)  # the old bytes back: no change without its backup
                except OSError:
                    raise ConfigError(
                        target,
                        f"was changed, but its backup {bak} cannot be written "
                        f"({_why(exc)}); the previous content is in {kept}",
                    ) from None
                raise ConfigError(target, f"its backup {bak} cannot be written: {_why(exc)}") from None
    finally:
        for tmp in (tmp_new, tmp_bak):
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)


def edit(
    path: Path, transform: Callable[[str | None], str | None], *, dry_run: bool = False, cache: Path | None = None
) -> Change:
    """Read ``path``, apply ``transform`` (text → text, None meaning no file), and unless
    ``dry_run`` write the result: under a lock (ours, in ``cache``: see :func:`lock_for`, and
    the client's own where it has one),
    the previous content kept as ``NAME.bak``, the new content put in place by an atomic
    rename with the file's mode kept. Nothing is written when the text does not change; a
    read-only or immutable config is refused before anything is written."""
    target = real_path(path)
    if dry_run:
        before = read_text(target)
        return Change(path, before, transform(before))
    with lock_for(target, cache), app_lock(path):
        raw = _read_bytes(target)
        before = None if raw is None else _decode(target, raw)
        change = Change(path, before, transform(before))
        if not change.changed:
            return change
        check_writable(target)
        mode = target.stat().st_mode & 0o7777 if raw is not None else 0o666 & ~_umask()
        bom = BOM.encode() if raw is not None and raw.startswith(BOM.encode()) else b""
        new = None if change.after is None else bom + change.after.encode("utf-8")
        _commit(target, raw, new, mode)
        return change


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
