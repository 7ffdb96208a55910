"""The private ``/etc`` every check sandbox binds: a copy of the host entries a toolchain
needs, never the whole host ``/etc`` (no shadow, sudoers, ssh keys, ...).

Its own module so that the sandbox (sandbox.py), which makes it on first use, and its
start-up (sandbox_setup.py) import it without importing each other.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import shutil
from pathlib import Path

# The host /etc entries a toolchain needs; nothing with secrets (no shadow, gshadow,
# sudoers, ssh, ssl/private, machine-id, ...).
_ETC = (
    "passwd",
    "group",
    "hosts",
    "host.conf",
    "nsswitch.conf",
    "gai.conf",
    "services",
    "protocols",
    "networks",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "os-release",
    "debian_version",
    "lsb-release",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "mime.types",
    "magic",
    "locale.alias",
    "perl",
    "python3",
    "python3.11",
    "python3.12",
    "python3.13",
    "inputrc",
)
_ETC_GLOBS = ("java-*",)


ETC_PREFIX = "ssebench-etc-"


def minimal_etc(user: tuple[int, int] | None = None) -> Path:
    """A private copy of the host /etc entries a toolchain needs (``_ETC``), made once
    per process and removed at exit; symlinks stay links. It is a snapshot: /etc changes
    after the daemon started are not seen by checks."""
    from ssebench.daemon import stale
    from ssebench.daemon.reach import temp_base

    # In a holder that records its owner: after a kill -9 the next daemon sweeps it.
    holder = stale.create_workspace(ETC_PREFIX, base=temp_base(user))  # where *user*, the checks', reaches
    atexit.register(shutil.rmtree, holder, True)
    os.chmod(holder, 0o711)  # bwrap may run as the check's uid: it must reach etc/
    root = holder / "etc"
    os.mkdir(root, 0o755)
    os.chmod(root, 0o755)
    names = list(_ETC)
    for pattern in _ETC_GLOBS:
        names += sorted(os.path.relpath(p, "/etc") for p in glob.glob("/etc/" + pattern))
    for name in names:
        src, dst = Path("/etc") / name, root / name
        with contextlib.suppress(OSError, shutil.Error):
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir() and not src.is_symlink():
                shutil.copytree(src, dst, symlinks=True)
            elif src.is_symlink():
                os.symlink(os.readlink(src), dst)
            elif src.is_file():
                shutil.copy2(src, dst)
    (root / "resolv.conf").touch()  # the mount point for the host's, with network = true
    return root
