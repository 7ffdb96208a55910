"""The trace of a build, parsed: which process ran which program where, and which tree
files it read and wrote (the :class:`Record` buildgraph.py's rules use).

Why apart from how a build is traced (:mod:`ssebench.daemon.tracefile`): the trace is
text the build itself influences (file names, argv), so its reading is kept in one
place: parsed line by line, never evaluated, never held whole in memory; a line that
does not parse makes the record incomplete, and an incomplete record always means a
clean build.
"""

from __future__ import annotations

import posixpath
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

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


__all__ = ["Record", "Step", "TraceParser", "normalise_key", "parse_trace"]
