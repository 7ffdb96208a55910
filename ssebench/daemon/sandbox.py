"""Run a check in a bubblewrap sandbox, within limits (docs/security.md).

Why: a check runs the agent's own code (its Makefile, its tests), so without a sandbox
that code could read the withheld parts of the task (PoCs, intent diff, task.toml),
the host's secrets, or write into the agent's tree. Every check process is therefore
started through :meth:`Sandbox.wrap`, which builds a ``bwrap`` command line whose
sandbox sees only:

- the check's tree at the fixed path :data:`TREE_PATH` (``/sse/tree``; ``SSE_TREE``),
  mounted as a :class:`TreeView` — a host folder bound read-write, or a copy-on-write
  overlay over a read-only lower folder (upper and work folders owned by the caller);
- :data:`TASK_PATH` (``/sse/task``; ``SSE_TASK_DIR``), read-only: the task's support
  files (:mod:`ssebench.daemon.taskview`), plus the extra files of one invocation (the
  one PoC being run, or the ``[intent] files`` in the intent step);
- ``/usr``, ``/bin``, ``/lib*``, ``/sbin`` read-only, a minimal ``/etc`` (never the whole
  host ``/etc``), a private ``/tmp``, its own ``/proc`` and a minimal ``/dev``;
- no network unless the check's table says ``network = true``.

It runs as uid/gid 65534 in new user, pid, mount, ipc, uts, cgroup and net namespaces,
in a new session, with no new privileges, and dies with its parent. The sandbox's uid
maps to the daemon's uid outside: files the daemon owns in the tree are writable, so
the tree copies must be owned by the daemon (``cp --no-preserve=ownership``), and
nothing root-readable is bound in beyond the system folders above.

The limits and their enforcement are in :mod:`ssebench.daemon.limits`, the seccomp filter
in :mod:`ssebench.daemon.seccomp`, what every daemon hides from its checks in
:mod:`ssebench.daemon.hostpaths`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ssebench.daemon import taskview

# TreeView, LaunchFds and poc_path live in launch.py; their users import them from here.
from ssebench.daemon.launch import TASK_PATH, TREE_PATH, LaunchFds, TreeView, poc_path
from ssebench.daemon.limits import Limits
from ssebench.daemon.sandbox_etc import minimal_etc
from ssebench.daemon.seccomp import seccomp_program

SANDBOX_UID = 65534

NO_SANDBOX_VAR = "SSE_NO_SANDBOX"
EXTRA_BIND_VAR = "SSE_SANDBOX_BIND"  # colon-separated host paths bound read-only at the same path
BWRAP_VAR = "SSE_BWRAP"  # the bwrap to use (default: the bundled one)
CHECK_USER_VAR = "SSE_SANDBOX_UID"  # "UID[:GID]": the host uid checks run as when the daemon is root
DEFAULT_CHECK_USER = (65534, 65534)  # nobody:nogroup


# New namespaces of every kind, as nobody, in a new session, no capabilities.
_NAMESPACE_ARGS = (
    "--unshare-all",
    "--unshare-user",
    "--uid",
    str(SANDBOX_UID),
    "--gid",
    str(SANDBOX_UID),
    "--hostname",
    "sandbox",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
)
_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
# Variables of the daemon's environment that a check never sees (and names that look secret).
# make's own variables too: a daemon started from make (as `make test` does) must not
# hand its jobserver and recursion level to the checks' make (make[1]: ... in their logs).
_DROP_VARS = {
    "SSE_DAEMON_SOCKET",
    "MCP_LOG_DIR",
    "XDG_RUNTIME_DIR",
    "SSH_AUTH_SOCK",
    "DBUS_SESSION_BUS_ADDRESS",
    "SSE_TASK",
    "OLDPWD",
    "MAKEFLAGS",
    "MAKELEVEL",
    "MFLAGS",
    "MAKEOVERRIDES",
    "GNUMAKEFLAGS",
}
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "COOKIE", "SESSION")


class SandboxUnavailable(RuntimeError):
    """Namespaces are not permitted here; ``str(err)`` is the one line for the user."""


# -- the sandbox ------------------------------------------------------------------------------


Mask = tuple[str, str]  # (what it is, for the refusal line; its real host path)


@dataclass
class Sandbox:
    """A bwrap sandbox (``bwrap`` set) or none (``--no-sandbox``: checks run as the daemon)."""

    bwrap: str | None
    version: str = ""
    extra_binds: tuple[str, ...] = ()
    # Host paths no check may see (task folder, workspace, socket folder, MCP_LOG_DIR,
    # ssebench's own files): masked wherever a bound folder holds them (see hide()).
    masks: tuple[Mask, ...] = ()
    # The host uid/gid checks run as, set when the daemon is root: never uid 0 outside.
    check_user: tuple[int, int] | None = None
    seccomp: bool = True
    # Host paths no value of a check's environment may name (task folder, workspace,
    # socket path, MCP_LOG_DIR): such entries are dropped (see environment()).
    env_hidden: tuple[str, ...] = ()
    _etc: Path | None = None

    @property
    def enabled(self) -> bool:
        return self.bwrap is not None

    def describe(self) -> str:
        """What ``/health`` and the start-up line show."""
        return f"bwrap {self.version}" if self.enabled else "off (--no-sandbox)"

    def tree_path(self, view: TreeView) -> str:
        """``SSE_TREE`` for a check in *view*."""
        return TREE_PATH if self.enabled else str(view.lower)

    def task_dir(self, task_dir: Path) -> str:
        """``SSE_TASK_DIR``: the support view in the sandbox; the task folder without one."""
        return TASK_PATH if self.enabled else str(task_dir)

    def poc(self, task_dir: Path, poc: Path) -> str:
        """``SSE_POC`` for *poc*."""
        return poc_path(task_dir, poc) if self.enabled else str(poc)

    def hide(self, what: str, path: str | os.PathLike[str], *, mount: bool = True, env: bool = True) -> None:
        """Keep *path* and everything below it out of every sandbox (*mount*: a tmpfs or
        /dev/null over it wherever a bound folder holds it; *env*: out of the check's
        environment). Raises ValueError, one line, when an extra bind
        (``SSE_SANDBOX_BIND``) holds it or lies inside it: that bind would show it, and
        masking part of a folder the user asked for would be a surprise."""
        if not self.enabled:
            return
        real = os.path.realpath(path)
        if env:
            self.env_hidden += tuple(p for p in {os.fspath(path), real} if p not in self.env_hidden and p != "/")
        if not mount:
            return
        for bind in self.extra_binds:
            host = os.path.realpath(bind)
            if _within(real, host):
                raise ValueError(
                    f"{EXTRA_BIND_VAR}: {bind} contains {what} ({path}), which checks "
                    "must not see; bind a folder that does not hold it"
                )
            if _within(host, real):
                raise ValueError(
                    f"{EXTRA_BIND_VAR}: {bind} is inside {what} ({path}), which checks "
                    "must not see; bind a folder outside it"
                )
        for inside, host in _system_roots():
            if _within(host, real):
                raise ValueError(f"{what} ({path}) holds {inside}, which every check needs; move it elsewhere")
        if all(m[1] != real for m in self.masks):
            self.masks += ((what, real),)

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The daemon's environment as a check sees it: without the daemon's own paths,
        anything named like a secret (``*_KEY``, ``*TOKEN*``, ...) and any value naming a
        hidden host path (the task folder, the workspace, ...); HOME is ``/tmp``, PWD the tree."""
        if not self.enabled:
            return dict(env)
        out = {}
        for key, value in env.items():
            if key in _DROP_VARS or any(w in key.upper() for w in _SECRET_WORDS):
                continue
            kept = self._without_hidden(value)
            if kept is not None:
                out[key] = kept
        out["HOME"] = "/tmp"
        out["TMPDIR"] = "/tmp"
        out["PWD"] = TREE_PATH
        return out

    def _without_hidden(self, value: str) -> str | None:
        """*value* without its ``:``-separated parts that name a hidden path (a PATH keeps
        its other folders); None when nothing is left."""
        if not self.env_hidden or not value:
            return value
        parts = value.split(":")
        kept = [
            p
            for p in parts
            if not any(h in p or (os.path.isabs(p) and h in os.path.realpath(p)) for h in self.env_hidden)
        ]
        if len(kept) == len(parts):
            return value
        return ":".join(kept) if any(kept) else None

    def launch(self, files: Mapping[str, Path] | None = None) -> LaunchFds:
        """The fds and uid for one sandboxed process (see :class:`LaunchFds`); raises OSError."""
        out = LaunchFds(user=self.check_user)
        if not self.enabled:
            return out
        try:
            program = self._seccomp_file()
            if program is not None:
                out.seccomp_fd = os.open(program, os.O_RDONLY)
            if self.check_user is not None:
                # The check's uid may not reach the task folder: bwrap copies the file
                # from an fd the daemon opened (nothing else of the folder is shared).
                for inside, host in (files or {}).items():
                    if os.path.isfile(host):  # folders ([intent] files) are bound by path
                        out.file_fds[inside] = os.open(host, os.O_RDONLY)
        except OSError:
            out.close()
            raise
        return out

    def wrap(
        self,
        argv: list[str],
        view: TreeView,
        *,
        files: Mapping[str, Path] | None = None,
        network: bool = False,
        limits: Limits | None = None,
        launch: LaunchFds | None = None,
        task: Path | None = None,
    ) -> list[str]:
        """The command line that runs *argv* in the sandbox, in *view* (cwd ``/sse/tree``).

        *task*: the support view (:mod:`ssebench.daemon.taskview`), read-only at
        ``/sse/task`` (without one: an empty folder). *files*: extra read-only files or
        folders for this invocation, sandbox path → host path (the PoC being run, the
        intent files). *launch*: from :meth:`launch` (its fds must reach bwrap:
        ``pass_fds``); without one there is no seccomp filter.
        """
        if self.bwrap is None:
            return list(argv)
        args = [self.bwrap, *_NAMESPACE_ARGS]
        if launch is not None and launch.seccomp_fd is not None:
            args += ["--seccomp", str(launch.seccomp_fd)]
        if network:
            args.append("--share-net")
        args += ["--proc", "/proc", "--dev", "/dev"]
        if limits is not None:
            args += ["--size", str(limits.memory)]
        args += ["--tmpfs", "/tmp", *_system_args(), *self._etc_args(network)]
        for path in self.extra_binds:
            args += ["--ro-bind-try", path, path]
        args += self._mask_args()
        extra = dict(files or {})
        fds = launch.file_fds if launch is not None else {}
        args += taskview.mount_args(task, TASK_PATH, {k: v for k, v in extra.items() if _under_task(k)}, fds)
        args += _tree_args(view)
        for inside, source in extra.items():
            if _under_task(inside):
                continue
            if inside in fds:
                args += ["--perms", "0444", "--ro-bind-data", str(fds[inside]), inside]
            else:
                args += ["--ro-bind", str(source), inside]
        args += ["--chdir", TREE_PATH, "--", *argv]
        return args

    def _mask_args(self) -> list[str]:
        """A read-only empty tmpfs over each hidden folder, /dev/null over each hidden
        file, at every place a bound folder shows it (after the binds: bwrap mounts in
        order). Looked up per check: a folder made after the start (MCP_LOG_DIR) counts."""
        args: list[str] = []
        roots = _system_roots() + tuple((p, os.path.realpath(p)) for p in self.extra_binds)
        for _, real in self.masks:
            for inside, host in roots:
                if not _within(real, host) or not os.path.lexists(real):
                    continue
                target = os.path.join(inside, os.path.relpath(real, host))
                if os.path.isdir(real):
                    args += ["--tmpfs", target, "--remount-ro", target]
                else:
                    args += ["--ro-bind", "/dev/null", target]
        return args

    def _seccomp_file(self) -> Path | None:
        """The seccomp program (made once, next to the minimal /etc); None where this
        machine's syscall numbers are unknown (then keyrings are not denied)."""
        if not self.seccomp:
            return None
        if self._etc is None or not self._etc.is_dir():  # a tmp cleaner may have removed it
            self._etc = minimal_etc(self.check_user)
        path = self._etc.parent / "seccomp.bpf"
        if not path.exists():
            program = seccomp_program()
            if program is None:
                self.seccomp = False
                return None
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(program)
            os.replace(tmp, path)
        return path

    def give(self, path: Path) -> None:
        """Make the tree *path* (one a check writes: the build mirror, overlay folders)
        owned by the check's uid; symlinks are changed, never followed. Only call it
        while no check runs (nothing can swap an entry meanwhile)."""
        if self.check_user is None:
            return
        uid, gid = self.check_user
        if os.lstat(path).st_uid != uid:
            os.chown(path, uid, gid, follow_symlinks=False)
        for _, dirs, files, fd in os.fwalk(path, follow_symlinks=False):
            for name in dirs + files:
                with contextlib.suppress(FileNotFoundError):
                    if os.stat(name, dir_fd=fd, follow_symlinks=False).st_uid != uid:
                        os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)

    def share(self, path: Path) -> None:
        """Let the check's uid traverse *path* (0711: no listing, no reading) so that bwrap,
        started as that uid, can open the folders below it it binds."""
        if self.check_user is not None:
            os.chmod(path, 0o711)

    def _etc_args(self, network: bool) -> list[str]:
        """One read-only bind of the minimal /etc (35 separate binds cost ~30 ms a check)."""
        if self._etc is None or not self._etc.is_dir():  # a tmp cleaner may have removed it
            self._etc = minimal_etc(self.check_user)
        args = ["--ro-bind", str(self._etc), "/etc"]
        return args + (["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"] if network else [])


def _system_args() -> list[str]:
    """The system folders, read-only (a symlink such as ``/lib -> usr/lib`` as a symlink)."""
    args: list[str] = []
    for name in _SYSTEM_DIRS:
        host = "/" + name
        if os.path.islink(host):
            args += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            args += ["--ro-bind", host, host]
    return args


def _tree_args(view: TreeView) -> list[str]:
    """The check's tree at TREE_PATH: a copy-on-write overlay, or a bind."""
    if view.is_overlay:
        assert view.upper is not None and view.work is not None
        return ["--overlay-src", str(view.lower), "--overlay", str(view.upper), str(view.work), TREE_PATH]
    return ["--ro-bind" if view.read_only else "--bind", str(view.lower), TREE_PATH]


def _under_task(inside: str) -> bool:
    return PurePosixPath(inside).is_relative_to(TASK_PATH)


def holds_system_folder(path: str | os.PathLike[str]) -> bool:
    """Is one of the system folders every sandbox binds (``/usr``, ...) *path* or below it?"""
    real = os.path.realpath(path)
    return any(_within(host, real) for _, host in _system_roots())


def _within(path: str, folder: str) -> bool:
    """Is the real path *path* *folder* itself or below it?"""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _system_roots() -> tuple[tuple[str, str], ...]:
    """The system folders bound into every sandbox: (path inside, real host path)."""
    return tuple(
        ("/" + n, os.path.realpath("/" + n))
        for n in _SYSTEM_DIRS
        if not os.path.islink("/" + n) and os.path.isdir("/" + n)
    )
