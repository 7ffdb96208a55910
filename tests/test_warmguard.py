"""A guard started ahead of its check (ssebench/daemon/warmguard.py) starts the check's
command exactly as a guard started for it does: same uid, folder, environment, fds at
the same numbers, stdin, cgroups, exit status; and a waiting guard leaves nothing behind.
Real processes, real cgroups where this machine lets us make them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from ssebench.daemon import procs
from ssebench.daemon.limits import Guard, Limits
from ssebench.daemon.warmguard import Spares, WarmGuard
from tests.helpers.daemon import wait_until

# What a check's process can tell about how it was started (cgroup names differ: only
# whether it is in one of ours is compared).
PROBE = textwrap.dedent(
    """\
    echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
    echo "cwd=$(pwd)"
    env | sort
    echo "fds=$(ls /proc/self/fd | sort -n | tr '\\n' ' ')"
    echo "extra=$(cat <&"$1")"
    echo "stdin=$(cat)"
    echo "in our cgroups: $(grep -c ssebench- /proc/self/cgroup)"
    [ "$(ps -o sid= -p $$)" = "$(ps -o pgid= -p $$)" ] && echo "its group is its session"
    echo to stderr >&2
    exit 3
    """
)


@pytest.fixture(autouse=True)
def _subreaper() -> None:
    procs.enable_subreaper()


def _started(
    tmp_path: Path, name: str, warm: bool, stdin: bytes | None, locale: dict[str, str]
) -> tuple[int, str, str]:
    """Run PROBE as a check's process (a file at a free fd number), cold or through a warm guard."""
    folder = tmp_path / "tree"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o755)
    extra = tmp_path / "extra"
    extra.write_text("seven")
    out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
    user = (65534, 65534) if os.getuid() == 0 else None
    env = {"PATH": os.environ["PATH"], **locale, "SOME": "value with spaces"}
    fd = os.open(extra, os.O_RDONLY)
    seven = next(n for n in range(40, 200) if not _open(n))
    os.dup2(fd, seven, inheritable=False)
    os.close(fd)
    limits = Limits()
    try:
        if warm:
            guard = WarmGuard.start(limits)
            checker = Guard(limits, (out, err), cgroups=guard.cgroups)
            proc = guard.hand(
                ["bash", "-c", PROBE, "bash", str(seven)],
                cwd=folder,
                env=env,
                stdout=out,
                stderr=err,
                stdin_data=stdin,
                user=user,
                pass_fds=(seven,),
            )
        else:
            checker = Guard(limits, (out, err))
            join = checker.join_fds()
            proc = procs.spawn(
                ["bash", "-c", PROBE, "bash", str(seven)],
                cwd=folder,
                env=env,
                stdout=out,
                stderr=err,
                stdin_data=stdin,
                user=user,
                pass_fds=(seven,),
                join=join,
            )
            checker.spawned()
    finally:
        os.close(seven)
    code = proc.wait(timeout=30)
    procs.disown(proc.pid)
    checker.close()
    return code, out.read_text(), err.read_text()


# Python's start changes LC_CTYPE when the locale is C (PEP 538): the command inherits it.
LOCALES = [{"LANG": "C"}, {}, {"LC_ALL": "C"}, {"LANG": "xx_YY.NOPE"}, {"LC_CTYPE": "POSIX", "LANG": "C.UTF-8"}]


@pytest.mark.parametrize("stdin", [None, b"a diff\n" * 20_000])
@pytest.mark.parametrize("locale", LOCALES)
def test_a_warm_guard_starts_the_command_as_a_fresh_guard_does(
    tmp_path: Path, stdin: bytes | None, locale: dict[str, str]
) -> None:
    cold = _started(tmp_path, "cold", False, stdin, locale)
    warm = _started(tmp_path, "warm", True, stdin, locale)
    assert warm == cold
    code, out, err = warm
    assert code == 3 and err == "to stderr\n"
    assert "SOME=value with spaces\n" in out and "extra=seven\n" in out
    assert "fds=0 1 2 3 4" in out  # 3: ls's own listing; nothing of the guard's but the file
    assert f"stdin={(stdin or b'').decode().rstrip()}\n" in out
    if Guard(Limits(), (tmp_path / "x", tmp_path / "x")).cgroups is not None:
        assert "in our cgroups: 2\n" in out or "in our cgroups: 1\n" in out


def test_a_waiting_guard_dies_with_the_daemon_and_drop_leaves_nothing(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, time\n"
        "from ssebench.daemon.limits import Limits\n"
        "from ssebench.daemon.warmguard import WarmGuard\n"
        "w = WarmGuard.start(Limits())\n"
        "print(w.proc.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    assert psutil.pid_exists(pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert wait_until(lambda: not _running(pid))

    warm = WarmGuard.start(Limits())
    paths = list(warm.cgroups.paths) if warm.cgroups else []
    warm.drop()
    assert warm.proc.returncode is not None
    assert wait_until(lambda: not any(p.exists() for p in paths))


def test_spares_keep_their_depth_and_close_ends_them() -> None:
    earlier = set(_guards())  # an earlier test's guard may still be on its way out
    spares = Spares(Limits(), depth=2)
    spares.refill()
    started = set(_guards()) - earlier
    assert len(started) == 2
    first = spares.take()
    assert first.proc.poll() is None and first.proc.pid in started
    spares.refill()
    spares.refill()  # two wait at most
    waiting = set(_guards()) - earlier - {first.proc.pid}
    assert len(waiting) == 2
    first.drop()
    spares.close()
    spares.refill()  # closed: starts nothing
    assert wait_until(lambda: not any(_running(pid) for pid in set(_guards()) - earlier))


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _guards() -> list[int]:
    out = []
    for p in psutil.Process().children():
        try:
            if "--wait" in p.cmdline():
                out.append(p.pid)
        except psutil.Error:
            pass
    return out


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
