"""The strace side of the build engine: how a build is traced, and the trace parsed.

Why apart from :mod:`ssebench.daemon.buildgraph`: the trace is text the build itself
influences (file names, argv), so its reading is kept in one place: parsed line by line,
never evaluated, never held whole in memory; a line that does not parse makes the
record incomplete, and an incomplete record always means a clean build. The graph and
its rules (plan, verify) live in buildgraph.py and use the :class:`Record` made here.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# The syscalls the record needs: process tree, programs, opened files, working folders.
SYSCALLS = "execve,execveat,open,openat,openat2,creat,clone,clone3,fork,vfork,chdir,fchdir"
# Every string in hex (-xx), fds with their paths (-y): nothing in the text the build
# controls can look like structure (quotes, brackets, ' = ').
STRACE_FLAGS = (
    "-f",
    "-q",
    "-z",
    "--seccomp-bpf",
    "-y",
    "-xx",
    "-s",
    "4096",
    "-e",
    "signal=none",
    "-e",
    f"trace={SYSCALLS}",
)

_LINE = re.compile(r"(\d+) +(.*)\Z", re.S)
_RESUMED = re.compile(r"<\.\.\. ([a-z0-9_]+) resumed>(.*)\Z", re.S)
_CALL = re.compile(r"([a-z0-9_]+)\((.*)\) += (-?\d+)(?:<((?:\\x[0-9a-f]{2})*)>)?(?: .*)?\Z", re.S)
_STR = re.compile(r'"((?:\\x[0-9a-f]{2})*)"(\.\.\.)?')
_FD_PATH = re.compile(r"-?\d+<((?:\\x[0-9a-f]{2})*)>|AT_FDCWD<((?:\\x[0-9a-f]{2})*)>")
_TMP = re.compile(r"(^|[=,:])(/tmp|/var/tmp)/[^/\s]+")
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
_FORKS = {"clone", "clone3", "fork", "vfork"}
_OPENS = {"open", "openat", "openat2", "creat"}


def _unhex(text: str) -> str:
    return bytes.fromhex(text.replace("\\x", "")).decode("utf-8", "surrogateescape")


# -- the record of one build ------------------------------------------------------------


@dataclass
class Step:
    """What all processes with one key (normalised argv + cwd) did in one build."""

    key: str
    reads: set[str] = field(default_factory=set)  # tree files opened for reading (or run)
    writes: set[str] = field(default_factory=set)  # tree files opened for writing
    execs: set[str] = field(default_factory=set)  # tree files execve'd
    orchestrator: bool = False  # started programs of its own (make, sh, gcc, configure ...)
    wrote: bool = False  # opened any file (in the tree or not) for writing
    parents: set[str] = field(default_factory=set)  # keys of the steps that started it

    @property
    def program(self) -> str:
        """The basename of argv[0] ('make', 'sh', 'cc' ...)."""
        parts = self.key.split("\0")
        return posixpath.basename(parts[1]) if len(parts) > 1 else ""

    def merge(self, other: Step) -> None:
        self.reads |= other.reads
        self.writes |= other.writes
        self.execs |= other.execs
        self.orchestrator |= other.orchestrator
        self.wrote |= other.wrote
        self.parents |= other.parents


@dataclass
class _Proc:
    step: Step
    cwd: str
    execd: bool = False
    parent: Step | None = None
    early: Step | None = None  # what it did before its parent's fork returned and it ran a program


@dataclass
class Record:
    """The parsed trace of one build: its steps by key; ``complete`` False on any doubt."""

    steps: dict[str, Step] = field(default_factory=dict)
    complete: bool = True
    problem: str = ""


class TraceParser:
    """Feeds on strace's lines one at a time; :meth:`finish` gives the :class:`Record`."""

    def __init__(self, tree: str, cwd: str) -> None:
        self.tree = tree.rstrip("/")
        self.cwd = cwd
        self.record = Record()
        self._procs: dict[int, _Proc] = {}
        self._pending: dict[int, str] = {}  # pid -> the start of an unfinished call
        self._last: int | None = None  # the pid of the line before, if it was unfinished
        self._lines = 0

    def _fail(self, why: str) -> None:
        if self.record.complete:
            self.record.complete = False
            self.record.problem = f"trace line {self._lines}: {why}"

    def _rel(self, path: str) -> str | None:
        if path.startswith(self.tree + "/"):
            rel = posixpath.normpath(path[len(self.tree) + 1 :])
            # Interned: a graph holds each header once, however many steps read it.
            return None if rel.startswith("..") else sys.intern(rel)
        return None

    def _proc(self, pid: int) -> _Proc:
        proc = self._procs.get(pid)
        if proc is None:  # the first process, or a child whose fork has not returned yet
            proc = self._procs[pid] = _Proc(Step(f"?{pid}"), self.cwd)
        return proc

    def feed(self, raw: bytes) -> None:
        """One line of the trace (with or without its newline)."""
        self._lines += 1
        try:
            line = raw.decode("ascii").rstrip("\n")
        except UnicodeDecodeError:
            self._fail("not ASCII")
            return
        m = _LINE.match(line)
        if m is not None:
            pid, body = int(m.group(1)), m.group(2)
        elif (owner := self._owner()) is not None:
            # strace -z sometimes ends an unfinished call on a later line, pid-less.
            pid, body = owner, self._pending.pop(owner) + line
        else:
            self._fail("no pid")
            return
        self._last = None
        if body.startswith("+++"):  # exited or killed: its pid may be reused
            self._procs.pop(pid, None)
            self._pending.pop(pid, None)  # a call that failed (-z prints no end for it)
            return
        if body.startswith("---"):
            return
        if body.endswith(" <unfinished ...>"):  # another process ran in between: joined below
            self._pending[pid] = body[: -len(" <unfinished ...>")]
            self._last = pid
            return
        resumed = _RESUMED.match(body)
        if resumed is not None:
            head = self._pending.pop(pid, None)
            if head is None or not head.startswith(resumed.group(1) + "("):
                self._fail("a resumed call that was not started")
                return
            body = head + resumed.group(2)
        call = _CALL.match(body)
        if call is None:
            self._fail("unreadable call")
            return
        name, args, ret, fd_path = call.groups()
        try:
            self._call(pid, name, args, int(ret), _unhex(fd_path) if fd_path is not None else None)
        except (ValueError, IndexError):
            self._fail(f"unreadable {name}")

    def _owner(self) -> int | None:
        """Whose call a pid-less line ends: the unfinished call just before it, else the
        only one pending (with several pending it is ambiguous: the record fails)."""
        if self._last is not None and self._last in self._pending:
            return self._last
        return next(iter(self._pending)) if len(self._pending) == 1 else None

    def _call(self, pid: int, name: str, args: str, ret: int, fd_path: str | None) -> None:
        if ret < 0:
            return
        proc = self._proc(pid)
        at = _FD_PATH.search(args)
        if at is not None and at.group(2) is not None and args.startswith("AT_FDCWD<"):
            proc.cwd = _unhex(at.group(2))
        if name in _FORKS:
            self._fork(proc, args, ret)
        elif name in ("execve", "execveat"):
            self._exec(pid, proc, name, args)
        elif name in _OPENS:
            self._open(proc, name, args, fd_path)
        elif name == "chdir":
            s = _STR.search(args)
            if s is None:
                raise ValueError(name)
            proc.cwd = posixpath.normpath(posixpath.join(proc.cwd, _unhex(s.group(1))))
        elif name == "fchdir":
            fd = _FD_PATH.match(args)
            if fd is None or fd.group(1) is None:
                raise ValueError(name)
            proc.cwd = _unhex(fd.group(1))

    def _fork(self, proc: _Proc, args: str, child: int) -> None:
        early = self._procs.get(child)  # its first lines came before its parent's fork returned
        if "CLONE_THREAD" in args:
            if early is not None and early is not proc:
                proc.step.merge(early.step)
            self._procs[child] = proc  # a thread: the same process
            return
        if early is None:
            self._procs[child] = _Proc(proc.step, proc.cwd, parent=proc.step)
        elif early.execd:  # it already runs its own program: link it; the fork's part is the parent's
            early.parent = proc.step
            early.step.parents.add(proc.step.key)
            proc.step.orchestrator = True
            if early.early is not None:
                proc.step.merge(early.early)
                early.early = None
        else:  # what it did before we knew is its parent's, as a fork's is
            proc.step.merge(early.step)
            early.step, early.parent = proc.step, proc.step

    def _exec(self, pid: int, proc: _Proc, name: str, args: str) -> None:
        strings = _STR.findall(args)
        if not strings:
            raise ValueError(name)
        path = _unhex(strings[0][0])
        if name == "execveat":
            fd = _FD_PATH.match(args)
            if fd is not None and (fd.group(1) or fd.group(2)):
                path = posixpath.join(_unhex(fd.group(1) or fd.group(2)), path)
        argv = [_unhex(s) + ("..." if more else "") for s, more in strings[1:]]
        key = normalise_key(argv, proc.cwd)
        step = self.record.steps.get(key)
        if step is None:
            step = self.record.steps[key] = Step(key)
        parent = proc.parent
        if parent is not None:
            parent.orchestrator = True
            step.parents.add(parent.key)
        if proc.step.key.startswith("?") and proc.parent is None:
            proc.early = proc.step
        proc.step, proc.execd = step, True
        rel = self._rel(posixpath.normpath(posixpath.join(proc.cwd, path)))
        if rel is not None:
            step.execs.add(rel)
            step.reads.add(rel)

    def _open(self, proc: _Proc, name: str, args: str, fd_path: str | None) -> None:
        if "O_DIRECTORY" in args or fd_path is None:
            return
        writes = name == "creat" or any(f in args for f in _WRITE_FLAGS)
        reads = name != "creat" and ("O_RDWR" in args or not writes)
        if writes and not fd_path.startswith("/dev/"):
            proc.step.wrote = True
        rel = self._rel(fd_path)
        if rel is None:
            return
        if reads:
            proc.step.reads.add(rel)
        if writes:
            proc.step.writes.add(rel)

    def finish(self) -> Record:
        return self.record


def normalise_key(argv: list[str], cwd: str) -> str:
    """A step's identity across builds: argv and cwd, temporary file names blanked."""
    words = [_TMP.sub(r"\1\2/*", a) for a in argv]
    return "\0".join([cwd, *words])


def parse_trace(path: Path, tree: str, cwd: str, *, limit: int = 8 << 30) -> Record:
    """Parse a trace file streaming (line by line; an over-long line fails the record)."""
    parser = TraceParser(tree, cwd)
    try:
        with open(path, "rb") as f:
            total = 0
            for line in f:
                total += len(line)
                if total > limit:
                    parser._fail("trace too long")
                    break
                parser.feed(line)
    except OSError as exc:
        parser._fail(f"cannot read the trace: {exc.strerror}")
    if parser._lines == 0:
        parser._fail("empty trace")
    return parser.finish()


# -- is tracing possible here? -----------------------------------------------------------------


def find_strace() -> str | None:
    return shutil.which("strace")


# Why a supervisor: ``strace -f`` ends with its last tracee, so a build leaving a process
# behind (``sleep 300 &``, a compiler server) would hold the check until that ends, where
# an untraced one ends with its shell (its pid namespace takes the rest). So the traced
# root reports its status through a pipe the build cannot see; the supervisor kills what
# strace still traces (by TracerPid: nothing else, sandbox or not) while strace records
# it, and exits with the build's status. Stderr is /dev/null: no bash "Killed" notes.
_SUPERVISOR = """exec {out}>&2 2>/dev/null
coproc {{ IFS= read -r rc && printf '%s\\n' "$rc"; }}
exec {done}>/proc/self/fd/"${{COPROC[1]}}"
"$@" 2>&{out} {out}>&- &
tracer=$!
exec {{ended}}</proc/self/fd/"${{COPROC[0]}}"
eval "exec {done}>&- {fd}>&- {out}>&- ${{COPROC[1]}}>&-"
if IFS= read -r rc <&"$ended"; then
  while left=$(grep -l "^TracerPid:[[:space:]]*$tracer\\$" /proc/[0-9]*/status); [ -n "$left" ]; do
    for p in $left; do p=${{p#/proc/}}; kill -KILL "${{p%/status}}"; done
  done
  wait "$tracer"; exit "$rc"
fi
wait "$tracer"
"""
# The traced root: the build without the trace fd or the pipe, then its status.
_ROOT = 'exec {fd}>&- {out}>&2 2>/dev/null; "$@" 2>&{out} {out}>&- {done}>&-; rc=$?; echo "$rc" >&{done}; exit "$rc"'


def command(strace: str, argv: list[str], fd: int) -> list[str]:
    """*argv* under strace writing to the daemon's fd *fd* (strace reopens it, close-on-exec);
    the build itself runs with *fd* closed, so it can neither read nor forge its trace.
    The check ends when *argv* does, with its status, as an untraced one would."""
    # The supervisor's own two fds: below 10, which bash keeps for its scripts (it saves
    # and moves fds at 10 and above itself), and not the trace's.
    done, out = [n for n in range(3, 10) if n != fd][:2]
    return [
        "bash",
        "-c",
        _SUPERVISOR.format(fd=fd, done=done, out=out),
        "ssebench-trace",
        strace,
        *STRACE_FLAGS,
        "-o",
        f"/proc/self/fd/{fd}",
        "--",
        "bash",
        "-c",
        _ROOT.format(fd=fd, done=done, out=out),
        "bash",
        *argv,
    ]


def probe(
    run: Callable[[list[str], tuple[int, ...]], subprocess.CompletedProcess[str]],
    workdir: Path,
    owner: tuple[int, int] | None = None,
) -> tuple[str | None, str]:
    """(strace path or None, what /health shows): a real traced ``true``, run the way
    builds run (*run*: argv and the fds it inherits, through the sandbox, as the checks'
    uid *owner*, who must be able to reopen the trace file). Blocking; once per daemon."""
    strace = find_strace()
    if strace is None:
        return None, "off: no strace, every build is clean"
    trace = workdir / f".trace-probe-{os.getpid()}"
    ok, why = False, ""
    try:
        fd = os.open(trace, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            if owner is not None:
                os.fchown(fd, *owner)
            done = run(command(strace, ["true"], fd), (fd,))
        finally:
            os.close(fd)
        record = parse_trace(trace, "/", "/")
        ok = done.returncode == 0 and record.complete and bool(record.steps)
        why = (done.stderr.strip().splitlines() or [record.problem or f"exit {done.returncode}"])[-1]
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = str(exc)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(trace)
    if not ok:
        return None, f"off: strace cannot trace here ({why}), every build is clean"
    return strace, f"strace {_version(strace)}"


def _version(strace: str) -> str:
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        out = subprocess.run([strace, "-V"], capture_output=True, text=True, timeout=10).stdout.split()
        if len(out) >= 4:
            return out[3]
    return "?"


__all__ = ["Record", "Step", "TraceParser", "command", "find_strace", "normalise_key", "parse_trace", "probe"]
