"""The trace of a build, parsed: which process ran which program where, and which tree
files it read and wrote (the :class:`TraceRecord` buildgraph.py's rules use).

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
from collections import deque
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
_HELD_LIMIT = 64 << 20  # bytes of events held for processes whose fork has not returned yet


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
    step: Step  # its program's step; before it runs one, its parent's (a fork is its parent)
    cwd: str
    parent: Step | None = None  # the step whose fork made it (None: the first process)


@dataclass
class TraceRecord:
    """The parsed trace of one build: its steps by key; ``complete`` False on any doubt."""

    steps: dict[str, Step] = field(default_factory=dict)
    complete: bool = True
    problem: str = ""


class TraceParser:
    """Feeds on strace's lines one at a time; :meth:`finish` gives the :class:`TraceRecord`."""

    def __init__(self, tree: str, cwd: str) -> None:
        self.tree = tree.rstrip("/")
        self.cwd = cwd
        self.record = TraceRecord()
        self._procs: dict[int, _Proc] = {}
        self._pending: dict[int, str] = {}  # pid -> the start of an unfinished call
        self._last: int | None = None  # the pid of the line before, if it was unfinished
        self._lines = 0
        self._at = 0  # the line of the event being applied (a held one's is earlier)
        self._first: int | None = None
        # Events of processes whose fork has not returned in their parent yet, in order.
        self._held: dict[int, list[tuple[int, str]]] = {}
        self._held_bytes = 0
        self._ready: deque[tuple[int, int, str]] = deque()

    def _fail(self, why: str) -> None:
        if self.record.complete:
            self.record.complete = False
            self.record.problem = f"trace line {self._at or self._lines}: {why}"

    def _rel(self, path: str) -> str | None:
        if path.startswith(self.tree + "/"):
            rel = posixpath.normpath(path[len(self.tree) + 1 :])
            # Interned: a graph holds each header once, however many steps read it.
            return None if rel.startswith("..") else sys.intern(rel)
        return None

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
            self._pending.pop(pid, None)  # a call that failed (-z prints no end for it)
            self._event(pid, body)
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
        self._event(pid, body)

    def _event(self, pid: int, body: str) -> None:
        """One whole event (a call or an exit), applied in the order the processes made them.

        strace prints a child's first calls (its ``execve``) before its parent's fork
        returns whenever the child runs first (``vfork``, ``posix_spawn``, two cores). Until
        then neither its working folder nor its parent is known, and a step's key is its
        argv *and* cwd: so its events wait, and are applied right after that fork, as
        the child's. (Keyed at once with a guessed cwd, one compile was two steps, one
        per ordering, and the next build's check saw a step that 'did not run again'.)
        """
        self._ready.append((self._lines, pid, body))
        while self._ready:
            line, pid, body = self._ready.popleft()
            if pid not in self._procs and self._first is not None:
                self._hold(line, pid, body)
                continue
            if self._first is None:
                self._first = pid
                self._procs[pid] = _Proc(Step(f"?{pid}"), self.cwd)
            self._at = line
            self._apply(pid, body)
        self._at = 0

    def _hold(self, line: int, pid: int, body: str) -> None:
        self._held_bytes += len(body)
        if self._held_bytes > _HELD_LIMIT:
            self._fail("too many calls of processes whose fork has not returned")
            return
        self._held.setdefault(pid, []).append((line, body))

    def _release(self, child: int) -> None:
        """Apply next what *child* did before its fork returned (up to its exit: a later
        process with its pid is another one, whose own fork is still to come)."""
        events = self._held.pop(child, [])
        end = next((i + 1 for i, (_, body) in enumerate(events) if body.startswith("+++")), len(events))
        if events[end:]:
            self._held[child] = events[end:]
        self._ready.extendleft((line, child, body) for line, body in reversed(events[:end]))

    def _apply(self, pid: int, body: str) -> None:
        if body.startswith("+++"):
            self._procs.pop(pid, None)
            return
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
        proc = self._procs[pid]
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
        # A thread is the same process; a process starts in its parent's step and folder.
        self._procs[child] = proc if "CLONE_THREAD" in args else _Proc(proc.step, proc.cwd, parent=proc.step)
        self._release(child)

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
        proc.step = step
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

    def finish(self) -> TraceRecord:
        """The record; incomplete if a process did anything before a fork that never
        returned (its folder and parent are unknown, so would its step's key be)."""
        if any(not body.startswith("+++") for events in self._held.values() for _, body in events):
            self._fail("a process whose fork never returned in its parent")
        return self.record


def normalise_key(argv: list[str], cwd: str) -> str:
    """A step's identity across builds: argv and cwd, temporary file names blanked."""
    words = [_TMP.sub(r"\1\2/*", a) for a in argv]
    return "\0".join([cwd, *words])


def parse_trace(path: Path, tree: str, cwd: str, *, limit: int = 8 << 30) -> TraceRecord:
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


__all__ = ["TraceRecord", "Step", "TraceParser", "normalise_key", "parse_trace"]
