"""What the checks' uid can reach, and where a root daemon's folders go so that it can.

Why: a root daemon (or ``grade``) runs its checks as another uid (``SSE_SANDBOX_UID``,
65534), and bwrap, started as that uid, opens every folder it binds from the root: the
workspace, the minimal ``/etc``, a copy of bwrap itself, ``SSE_SANDBOX_BIND``'s folders. A CI
script's ``TMPDIR=$(mktemp -d)`` is a 0700 folder of root's, out of that uid's reach, so
those folders then go to the first system temp folder it can reach instead (docs/security.md).
The folders themselves stay private (0700, or 0711 where bwrap must pass: never listable).
"""

from __future__ import annotations

import os
import pwd
import stat
import tempfile
from pathlib import Path

#: where the sandbox's folders go when the temp folder is out of the checks' uid's reach
SYSTEM_TEMP = ("/tmp", "/var/tmp")


def unreachable(path: Path, user: tuple[int, int] | None) -> Path | None:
    """The first folder of *path* (itself included, symlinks resolved) that *user* cannot
    search, if any (None also when checks run as our own uid: *user* None)."""
    if user is None:
        return None
    uid, gid = user
    resolved = path.resolve()
    for folder in [*reversed(resolved.parents), resolved]:
        st = os.stat(folder)
        bit = 0o100 if st.st_uid == uid else 0o010 if st.st_gid == gid else 0o001
        if not st.st_mode & bit:
            return folder
    return None


def temp_base(user: tuple[int, int] | None) -> Path:
    """Where to make a folder the checks' uid must reach: the temp folder when it can reach
    it, else the first of :data:`SYSTEM_TEMP` it can (and we may write), else the temp
    folder still (the caller's :func:`unreachable` check then names what blocks it)."""
    temp = Path(tempfile.gettempdir())
    if unreachable(temp, user) is None:
        return temp
    for candidate in map(Path, SYSTEM_TEMP):
        if candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK) and unreachable(candidate, user) is None:
            return candidate
    return temp


def bind_problem(path: str, user: tuple[int, int] | None) -> str | None:
    """Why the checks cannot have *path* (an ``SSE_SANDBOX_BIND`` folder), said after its
    name, or None: it does not exist, or a folder on its way denies the checks' uid search."""
    if not os.path.exists(path):
        return "does not exist"
    blocked = unreachable(Path(path), user)
    if blocked is None or user is None:
        return None
    st = os.stat(blocked)
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    return (
        f"is out of reach of uid {user[0]}, which runs the checks: {blocked} ({stat.filemode(st.st_mode)}, "
        f"owner {owner}) denies it search permission; bind a folder outside it, or allow that (chmod o+x {blocked})"
    )
