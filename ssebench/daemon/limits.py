"""Per-check limits and their enforcement (docs/security.md), split from sandbox.py.

Limits (:class:`Limits`): pids and memory through a cgroup (v1 here; v2 where the
controllers are delegated) or, where no cgroup is writable (most containers), a
watchdog that counts the sandbox's processes and sums their RSS; output size by
watching the two log files. A check that hits a limit is killed and fails with a note
(:func:`limit_note`), and the daemon carries on.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import signal
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import psutil

from ssebench import settings

OUTPUT_LIMIT_VAR = "SSE_OUTPUT_LIMIT"
MEMORY_LIMIT_VAR = "SSE_MEMORY_LIMIT"
PIDS_LIMIT_VAR = "SSE_PIDS_LIMIT"
CGROUP_VAR = "SSE_SANDBOX_CGROUP"  # "off": use the watchdog even where a cgroup is writable
GIB = 1 << 30
DEFAULT_OUTPUT_LIMIT = 1 * GIB
DEFAULT_MEMORY_LIMIT = 4 * GIB
DEFAULT_PIDS_LIMIT = 1024


@dataclass(frozen=True)
class Limits:
    """Per-check limits: bytes of memory (RSS), processes, bytes of output (stdout+stderr)."""

    memory: int = DEFAULT_MEMORY_LIMIT
    pids: int = DEFAULT_PIDS_LIMIT
    output: int = DEFAULT_OUTPUT_LIMIT

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        memory: str | None = None,
        pids: str | None = None,
        output: str | None = None,
    ) -> Limits:
        """Flags (the keyword arguments) win over the environment; raises ValueError
        (:class:`ssebench.settings.SettingsError`). ``SSE_SANDBOX_CGROUP`` is checked too,
        so a bad value stops the start, not a check."""
        settings.value(CGROUP_VAR, settings.boolean, True, environ)

        def pick(flag: str | None, var: str, name: str) -> tuple[str, str] | None:
            if flag is not None:
                return flag, f"--{name}-limit"
            raw = settings.raw(var, environ)
            return (raw, var) if raw not in (None, "") else None

        values: dict[str, int] = {}
        for name, flag, var, default in (
            ("memory", memory, MEMORY_LIMIT_VAR, DEFAULT_MEMORY_LIMIT),
            ("pids", pids, PIDS_LIMIT_VAR, DEFAULT_PIDS_LIMIT),
            ("output", output, OUTPUT_LIMIT_VAR, DEFAULT_OUTPUT_LIMIT),
        ):
            got = pick(flag, var, name)
            parse = settings.count if name == "pids" else settings.size
            values[name] = default if got is None else parse(got[1], got[0])
        return cls(**values)


# The size parser is ssebench.settings'; this name stays for its callers.
parse_size = settings.size


def human_size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def limit_note(reason: str, limits: Limits) -> str:
    """The line that ends the log of a check killed for hitting a limit (docs/security.md)."""
    if reason == "output":
        return (
            f"[ssebench] output limit reached: the check wrote more than {human_size(limits.output)} "
            f"of output; it was killed and its log was cut here.\n"
        )
    if reason == "memory":
        return (
            f"[ssebench] memory limit reached ({human_size(limits.memory)}): the command and every "
            "process it started were killed.\n"
        )
    return (
        f"[ssebench] process limit reached ({limits.pids} processes): the command and every "
        "process it started were killed.\n"
    )


_counter = itertools.count(1)


class Cgroups:
    """A pair of fresh cgroups (memory, pids) for one process tree, v1 or v2."""

    def __init__(self, paths: list[Path], v2: bool) -> None:
        self.paths = paths
        self.v2 = v2

    @classmethod
    def create(cls, limits: Limits) -> Cgroups | None:
        name = f"ssebench-{os.getpid()}-{next(_counter)}"
        own = _own_cgroups()
        made: list[Path] = []
        try:
            if "" in own and not os.path.isdir("/sys/fs/cgroup/memory"):  # v2 (unified)
                path = Path("/sys/fs/cgroup") / own[""].lstrip("/") / name
                path.mkdir()
                made.append(path)
                (path / "memory.max").write_text(str(limits.memory))
                with contextlib.suppress(OSError):
                    (path / "memory.swap.max").write_text("0")
                (path / "pids.max").write_text(str(limits.pids))
                return cls(made, True)
            for ctl in ("memory", "pids"):
                path = Path("/sys/fs/cgroup") / ctl / own.get(ctl, "/").lstrip("/") / name
                path.mkdir()
                made.append(path)
            mem, pids = made
            (mem / "memory.limit_in_bytes").write_text(str(limits.memory))
            with contextlib.suppress(OSError):
                (mem / "memory.memsw.limit_in_bytes").write_text(str(limits.memory))
            (pids / "pids.max").write_text(str(limits.pids))
            return cls(made, False)
        except OSError:
            for path in reversed(made):
                with contextlib.suppress(OSError):
                    path.rmdir()
            return None

    def procs_files(self) -> list[str]:
        return [str(p / "cgroup.procs") for p in self.paths]

    def exceeded(self) -> str | None:
        if self.v2:
            events = _keyed(self.paths[0] / "memory.events")
            if events.get("oom_kill", 0) or events.get("max", 0) and events.get("oom", 0):
                return "memory"
            return "pids" if _keyed(self.paths[0] / "pids.events").get("max", 0) else None
        if _keyed(self.paths[0] / "memory.oom_control").get("oom_kill", 0):
            return "memory"
        return "pids" if _keyed(self.paths[1] / "pids.events").get("max", 0) else None

    def remove(self) -> None:
        """Remove the cgroups once their processes are gone (off the loop; retried; what
        is still there when the process exits is tried once more by an atexit hook, and
        what a killed daemon left is swept by the next start: :func:`sweep_cgroups`)."""
        _pending.update(self.paths)
        threading.Thread(target=_rmdirs, args=(list(reversed(self.paths)), 10.0), daemon=True).start()


_pending: set[Path] = set()


def _rmdirs(paths: list[Path], patience: float) -> None:
    deadline = time.monotonic() + patience
    for path in paths:
        while True:
            try:
                path.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                break
            _pending.discard(path)
            break


atexit.register(lambda: _rmdirs(sorted(_pending, reverse=True), 2.0))


def sweep_cgroups() -> int:
    """Remove the empty cgroups of ssebench processes that are gone (a killed daemon's)."""
    removed = 0
    own = _own_cgroups()
    parents = {Path("/sys/fs/cgroup") / ctl / own.get(ctl, "/").lstrip("/") for ctl in ("memory", "pids")}
    if "" in own:
        parents.add(Path("/sys/fs/cgroup") / own[""].lstrip("/"))
    for parent in parents:
        for path in parent.glob("ssebench-*-*"):
            pid = path.name.split("-")[1]
            if pid.isdigit() and not psutil.pid_exists(int(pid)):
                with contextlib.suppress(OSError):
                    path.rmdir()
                    removed += 1
    return removed


def _own_cgroups() -> dict[str, str]:
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctls, path = line.split(":", 2)
            for ctl in ctls.split(",") if ctls else [""]:
                out[ctl] = path
    return out


def _keyed(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[key] = int(value)
    return out


def _process_count() -> int:
    try:
        return sum(1 for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return 0


def _running(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _cgroups_allowed() -> bool:
    return settings.value(CGROUP_VAR, settings.boolean, True)


def new_cgroups(limits: Limits) -> Cgroups | None:
    """A fresh pair of cgroups for one check, or None (not allowed, or none writable:
    the watchdog counts instead)."""
    return Cgroups.create(limits) if _cgroups_allowed() else None


class Guard:
    """Enforces :class:`Limits` on one started process tree (see :meth:`check`)."""

    def __init__(
        self,
        limits: Limits,
        outputs: tuple[Path, Path],
        *,
        base: int = 0,
        cgroups: Cgroups | None | Literal["new"] = "new",
    ) -> None:
        """*cgroups*: fresh ones made now (``"new"``), or those a guard started ahead of
        the check joined already (warmguard.py)."""
        self.limits = limits
        self.outputs = outputs
        self.base = base  # bytes already in the log before this process (intent: git's output)
        self.cgroups = new_cgroups(limits) if cgroups == "new" else cgroups
        self._fds: list[int] = []
        self.victims: list[psutil.Process] = []  # the tree when a limit was hit (watchdog mode)
        self.hit: str | None = None  # the limit the watchdog thread enforced
        self._stop = threading.Event()
        self._baseline = _process_count() if self.cgroups is None else 0

    @property
    def mode(self) -> str:
        return "cgroup" if self.cgroups else "watchdog"

    def join_fds(self) -> tuple[int, ...]:
        """Fds of the cgroups' ``cgroup.procs``, for the check's guard to join before it
        starts the command (guard.py ``--join``: everything the command starts is
        counted). Not a ``preexec_fn``: the join waits for the kernel (~10-25 ms in
        cgroup v1), which inside ``Popen`` blocked the event loop."""
        if self.cgroups is None:
            return ()
        self._fds = [os.open(p, os.O_WRONLY) for p in self.cgroups.procs_files()]
        return tuple(self._fds)

    def spawned(self) -> None:
        """Close the fds :meth:`join_fds` opened (call right after the start)."""
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []

    def output_size(self) -> int:
        total = 0
        for path in self.outputs:
            with contextlib.suppress(OSError):
                total += os.stat(path).st_size
        return total

    def check(self) -> str | None:
        """The limit hit so far (``"output"``, ``"memory"``, ``"pids"``), cheap enough for
        the event loop: two ``stat`` calls and two small cgroup files."""
        if self.output_size() - self.base > self.limits.output:
            return "output"
        return self.cgroups.exceeded() if self.cgroups else self.hit

    def start_watchdog(self, pid: int) -> None:
        """Without cgroups: a thread of its own (started now, not when the sandbox is
        already exhausting the pids) that kills the process group *pid* when a limit is hit.

        Processes are counted cheaply, by how many more entries ``/proc`` has than when
        the check started (a fork bomb outruns an exact scan of its tree); memory by an
        exact scan (the RSS of the tree under *pid*) every fourth round.
        """
        if self.cgroups is not None:
            return
        threading.Thread(target=self._watchdog, args=(pid,), daemon=True, name="ssebench-watchdog").start()

    def _watchdog(self, pid: int, interval: float = 0.05) -> None:
        tick = 0
        while not self._stop.wait(interval):
            if _process_count() - self._baseline > self.limits.pids:
                self.hit = "pids"
            elif tick % 4 == 0:
                self.hit = self.scan(pid)
            tick += 1
            if self.hit is not None:
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                return

    def scan(self, pid: int) -> str | None:
        """Without cgroups: count the processes under *pid* and sum their RSS (run it in
        a thread: it reads /proc)."""
        try:
            procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        except psutil.Error:
            return None
        if len(procs) > self.limits.pids:
            return "pids"
        rss = 0
        for p in procs:
            with contextlib.suppress(psutil.Error):
                rss += p.memory_info().rss
        return "memory" if rss > self.limits.memory else None

    def remember(self, pid: int) -> None:
        """Note the processes under *pid* (before killing them), for :meth:`settle`."""
        with contextlib.suppress(psutil.Error):
            self.victims = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until every process of the killed tree is gone, so none can still write
        to the log when it is cut (blocking: run it in a thread)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.cgroups is not None:
                alive = any(Path(f).read_text().strip() for f in self.cgroups.procs_files() if os.path.exists(f))
            else:
                alive = any(_running(p) for p in self.victims)
            if not alive:
                return
            time.sleep(0.02)

    def cut_output(self) -> None:
        """Cut the log to the output limit (stdout first, then stderr)."""
        room = self.limits.output + self.base
        for path in self.outputs:
            with contextlib.suppress(OSError):
                size = os.stat(path).st_size
                if size > room:
                    os.truncate(path, room)
                    size = room
                room -= size

    def close(self) -> None:
        self._stop.set()
        self.spawned()
        if self.cgroups is not None:
            self.cgroups.remove()
