"""The files of the tree's git ``HEAD`` (a build output the project itself ships is a
source, workspace.py): listed by git, which the agent's repository may make run its
own program, so git runs in the check sandbox (or, without one, with everything that
could run a program turned off) and its output is bounded."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

from ssebench import settings
from ssebench.daemon import procs
from ssebench.daemon.sandbox import TREE_PATH, Sandbox, TreeView

# No system or global config, no prompt, every transport refused, no lazy fetch.
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "HOME": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_ASKPASS": "/bin/false",
    "GIT_SSH_COMMAND": "/bin/false",
    "GIT_OPTIONAL_LOCKS": "0",
    "LC_ALL": "C",
}
_GIT_OPTIONS = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never")
_LS_TREE = ("ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD")

_MAX_LISTING = 64 << 20  # most bytes of ``git ls-tree`` output read (a hostile repo could
# make it endless)


def committed_files(tree: Path, sandbox: Sandbox | None = None) -> set[str]:
    """Paths of HEAD's tree when *tree* is the top of a git work tree (else empty).

    The agent controls the repository (config, includes, hooks, fsmonitor, alternates,
    a partial clone's promisor remote), so git may be made to run the agent's program:
    with a *sandbox* git runs in it, seeing the tree read-only at ``/sse/tree``; without
    one it runs with no system or global config, fsmonitor off, every transport protocol
    refused (so no promisor fetch, ``ext::`` or remote helper can run), never looking
    above the tree.
    """
    if not os.path.isdir(tree / ".git") and not os.path.isfile(tree / ".git") or shutil.which("git") is None:
        return set()
    inside = sandbox is not None and sandbox.enabled
    top = TREE_PATH if inside else str(tree)
    env = dict(_GIT_ENV, PATH=settings.raw("PATH") or "/usr/bin:/bin", GIT_CEILING_DIRECTORIES=str(Path(top).parent))
    argv = ["git", *_GIT_OPTIONS, "-c", f"safe.directory={top}", "-C", top, *_LS_TREE]
    if not inside:
        out = _bounded_output(argv, env)
        return set() if out is None else {os.fsdecode(p) for p in out.split(b"\0") if p}
    assert sandbox is not None
    # As the checks run: their uid (never root outside) and their seccomp filter. A tree
    # that uid cannot reach lists nothing: its committed build outputs are not sources.
    launch = sandbox.launch()
    try:
        argv = sandbox.wrap(argv, TreeView(Path(tree), read_only=True), launch=launch)
        if launch.user is not None:  # the guard drops to it (and reaches a bwrap that uid cannot)
            from ssebench.daemon import guard

            argv = guard.wrap(argv, user=launch.user)
        out = _bounded_output(argv, env, pass_fds=launch.pass_fds)
    finally:
        launch.close()
    return set() if out is None else {os.fsdecode(p) for p in out.split(b"\0") if p}


def _bounded_output(
    argv: list[str], env: dict[str, str], timeout: float = 120.0, *, pass_fds: tuple[int, ...] = ()
) -> bytes | None:
    """stdout of *argv* if it exits 0 within *timeout* and _MAX_LISTING bytes; else None.
    Its whole process group is killed in any case."""
    try:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except OSError:
        return None
    timer = threading.Timer(timeout, _kill_group, (proc.pid,))
    timer.start()
    with procs.managed(proc.pid):
        try:
            assert proc.stdout is not None
            data = proc.stdout.read(_MAX_LISTING + 1)
            code = proc.wait() if len(data) <= _MAX_LISTING else None
        finally:
            timer.cancel()
            _kill_group(proc.pid)
            proc.stdout.close()  # type: ignore[union-attr]
            proc.wait()
    return data if code == 0 else None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
