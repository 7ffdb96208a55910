"""When may a build reuse the mirror's earlier outputs? The build engine's decisions.

Why: an incremental ``make`` in the daemon's build mirror is only as right as the
project's Makefile and its mtimes, and the agent can defeat both (a CFLAGS change that
rebuilds nothing, a header without dependencies, a generated file older or newer than
its input, a symlink to an old file). The daemon's promise is stronger: every answer is
the one a *clean* build gives (a fresh mirror written with the agent's own mtimes, then
the build command). So every build in the daemon runs under ``strace`` inside the
sandbox, and this module turns the trace into a record of who read and wrote which
tree files, keeps a build graph between builds, and decides:

- before a build (:func:`plan`): build clean, or try incrementally;
- after a successful incremental build (:func:`verify`): keep it, or build clean.

The trace is text the build itself influences (file names, argv): it is parsed line by
line, never evaluated, never held whole in memory; a line that does not parse makes
the record incomplete, and an incomplete record always means a clean build.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from ssebench.daemon import blobs, safefs
from ssebench.daemon.traceparse import Step, TraceRecord
from ssebench.daemon.workspace import DIR, FILE, LINK, Manifest

# Files that describe the build itself: a change to one can change every step's command.
_BUILD_NAMES = {
    "makefile",
    "gnumakefile",
    "cmakelists.txt",
    "configure",
    "configure.ac",
    "configure.in",
    "meson.build",
    "meson_options.txt",
    "meson.options",
    "kbuild",
    "kconfig",
    "sconstruct",
    "sconscript",
    "build.ninja",
    "config.status",
    "libtool",
    "build.sh",
    "autogen.sh",
    "bootstrap",
    "wscript",
    "build.zig",
    "cargo.toml",
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "premake5.lua",
    "jamfile",
    "jamroot",
    "rakefile",
    "build.xml",
    "pom.xml",
    "build.gradle",
    "package.json",
    "binding.gyp",
}
_BUILD_SUFFIXES = (
    ".mk",
    ".make",
    ".mak",
    ".cmake",
    ".am",
    ".in",
    ".m4",
    ".ac",
    ".ninja",
    ".gyp",
    ".gypi",
    ".pri",
    ".pro",
    ".bzl",
    ".bazel",
)
_BUILD_PREFIXES = ("makefile", "gnumakefile", "kbuild", "kconfig", "cmakelists")


def is_build_file(rel: str) -> bool:
    """Is *rel* (by its name) a file that describes the build rather than a source of it?"""
    name = rel.rsplit("/", 1)[-1].lower()
    return name in _BUILD_NAMES or name.endswith(_BUILD_SUFFIXES) or name.startswith(_BUILD_PREFIXES)


# -- the graph kept between builds ------------------------------------------------------------


@dataclass
class Graph:
    """The steps of the mirror's builds: a clean build replaces it, an incremental one
    replaces the steps that ran again and adds new ones."""

    steps: dict[str, Step] = field(default_factory=dict)
    # sha256 of each build output a step read (:func:`outputs_read`), as the last build
    # left it: what :func:`verify` compares a rewritten one with (:func:`record_digests`)
    digests: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, record: TraceRecord) -> Graph:
        return cls(dict(record.steps))

    def update(self, record: TraceRecord) -> None:
        self.steps.update(record.steps)


def plan(old: Manifest | None, new: Manifest, graph: Graph | None, now_ns: int) -> tuple[str | None, set[str]]:
    """Before a build: (why it must be clean, or None; the changed files).

    Changed files are files whose content or mtime differ (a touched file counts: it
    gets a fresh mtime, so make re-decides what depends on it). The rules about what a
    file *says* (a build file, a program the build runs, what make or a script read)
    look only at files whose content differs: the same bytes give the same rules,
    commands and flags, and what a new mtime changes is make's to decide, as for any
    touched source (verify still wants every step that read it to run again).
    """
    if old is None:
        return "no mirror yet", set()
    if graph is None:
        return "no traced successful build in this mirror", set()
    if old is new or (old.keys() == new.keys() and all(old[rel] is entry for rel, entry in new.items())):
        # The very entries the mirror holds (a snapshot reuses those of files whose lstat
        # did not change; with the tree's watch, the very manifest): nothing changed but
        # the clock. Without it, a no-change call on 100,000 files spent ~0.5 s here
        # (benchmarks/bench_bigtree.py).
        future = [rel for rel, entry in new.items() if entry.kind != DIR and entry.mtime_ns > now_ns]
        return (f"'{min(future)}' has an mtime in the future" if future else None), set()
    changed: set[str] = set()
    edited: set[str] = set()  # changed content (the rest of *changed*: a new mtime only)
    # The first path (in order) added or removed; found without a set of all paths, which
    # on 100,000 files was ~12 MiB of the daemon's peak.
    gone = min((rel for rel in old if rel not in new), default=None)
    added = min((rel for rel in new if rel not in old), default=None)
    missing = min((rel for rel in (gone, added) if rel is not None), default=None)
    for rel in sorted(new):
        if missing is not None and missing <= rel:
            break
        a, b = old[rel], new[rel]
        if a.kind != b.kind or a.mode != b.mode:
            return f"'{rel}' changed kind or mode", changed
        if b.kind == LINK and a.data != b.data:
            return f"symlink '{rel}' changed", changed
        if b.kind != DIR and b.mtime_ns > now_ns:
            return f"'{rel}' has an mtime in the future", changed
        if b.kind == FILE and (a.data != b.data or a.mtime_ns != b.mtime_ns):
            changed.add(rel)
            if a.data != b.data:
                edited.add(rel)
    if missing is not None:
        return f"'{missing}' was {'added' if missing == added else 'removed'}", changed
    why = _changed_reason(changed, edited, graph)
    if why is None and changed:
        why = _order_reason(old, new, changed)
    return why, changed


def _order_reason(old: Manifest, new: Manifest, changed: set[str]) -> str | None:
    """Changed files are written newer than every output in the mirror, in the agent's
    order among themselves (:func:`stamps`); that keeps make's source-to-source decisions
    (a generated source against its input) the agent's only when every changed file is
    newer, by the agent's clock, than every unchanged one (an edit, a checkout, a stash;
    not ``cp -p`` of an old file nor an mtime set into the past)."""
    oldest = min(new[rel].mtime_ns for rel in changed)
    for rel, entry in new.items():
        if entry.kind == FILE and rel not in changed and entry.mtime_ns >= oldest:
            return f"'{min(changed, key=lambda r: new[r].mtime_ns)}' is not newer than '{rel}'"
    return None


def stamps(changed: set[str], new: Manifest, after_ns: int, now_ns: int) -> dict[str, int] | None:
    """Mirror mtimes for the changed files: in (after_ns, now_ns], in the agent's order
    (equal agent mtimes stay equal); None when there is no room (then build clean)."""
    times = sorted({new[rel].mtime_ns for rel in changed})
    step = (now_ns - after_ns) // (len(times) + 1)
    if step < 1:
        return None
    rank = {t: after_ns + (i + 1) * step for i, t in enumerate(times)}
    return {rel: rank[new[rel].mtime_ns] for rel in changed}


def _changed_reason(changed: set[str], edited: set[str], graph: Graph) -> str | None:
    """Why the changed files need a clean build (None: make can follow them). *edited*:
    those of them whose content changed (the rest were only touched)."""
    for rel in sorted(edited):
        if is_build_file(rel):
            return f"build file '{rel}' changed"
    for step in graph.steps.values():
        made = step.writes & changed
        if made:  # a generated source: whether make remakes it depends on the agent's mtimes
            return f"'{min(made)}' changed and the build writes it"
        hit = step.reads & edited
        if not hit:
            continue
        rel = min(hit)
        if rel in step.execs:
            return f"'{rel}' changed and the build runs it"
        if step.orchestrator:
            return f"'{rel}' changed and a step that runs others read it"
        if not step.wrote and _feeds_make(step, graph):
            # Its output went to make ($(shell cat VERSION)): what make decided from it
            # (flags, file lists) is nowhere in the graph.
            return f"'{rel}' changed and make read it through '{step.program}'"
    return None


_MAKES = {"make", "gmake", "remake", "bmake"}
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "busybox"}


def _feeds_make(step: Step, graph: Graph) -> bool:
    """Was *step* (a program that wrote no file) started by make itself, directly or
    through one shell: a ``$(shell ...)`` (or a recipe that only prints)?"""
    for key in step.parents:
        name = _program(key)
        if name in _MAKES:
            return True
        parent = graph.steps.get(key)
        if parent is not None and name in _SHELLS and any(_program(k) in _MAKES for k in parent.parents):
            return True
    return False


def _program(key: str) -> str:
    return Step(key).program


# -- after the build ---------------------------------------------------------------------------


def verify(
    graph: Graph,
    record: TraceRecord,
    changed: set[str],
    wrote: set[str],
    new: Manifest,
    mirror: Path,
    known: dict[str, str | None] | None = None,
) -> str | None:
    """After a successful incremental build: why it may differ from a clean one, or None.

    A step that read a changed or rewritten file and did not run again is stale, unless
    what it read is a build output written again with the very bytes it had (ninja's
    ``restat``: Meson relinks a library, its symbols file stays, the programs linked
    against it are not linked again): :func:`same_bytes`. *known* collects the digests
    taken (rel -> sha256), for :func:`record_digests`.
    """
    if not record.complete:
        return record.problem or "the trace is incomplete"
    known = {} if known is None else known
    touched = changed | wrote
    for key, step in graph.steps.items():
        hit = step.reads & touched
        if not hit or key in record.steps:
            continue
        for rel in sorted(hit):
            if rel in changed or not same_bytes(graph, record, step, rel, mirror, known):
                return f"a step that read '{rel}' did not run again"
    for rel in sorted(wrote):
        entry = new.get(rel)
        if entry is not None and entry.kind == FILE and _digest(mirror, rel) != blobs.name_of(entry.data):
            return f"the build rewrote the source '{rel}'"
    return None


def same_bytes(
    graph: Graph, record: TraceRecord, reader: Step, rel: str, mirror: Path, known: dict[str, str | None]
) -> bool:
    """Did the build rewrite the output *rel* with the bytes *reader* read? Only for an
    output with one writer (in the graph and this build together) that is not *reader*:
    then the graph's digest is its content at the end of the build where *reader* last
    ran (an earlier rewrite with other bytes would have made that build clean)."""
    old = graph.digests.get(rel)
    if old is None or rel in reader.writes:
        return False
    writers = {k for k, s in graph.steps.items() if rel in s.writes}
    writers |= {k for k, s in record.steps.items() if rel in s.writes}
    if len(writers) != 1:
        return False
    if rel not in known:
        known[rel] = _digest(mirror, rel)
    return known[rel] == old


def outputs_read(graph: Graph) -> set[str]:
    """The files a step of the graph wrote and a step of it read (objects, libraries,
    generated headers): those whose bytes :func:`verify` may compare."""
    reads: set[str] = set()
    writes: set[str] = set()
    for step in graph.steps.values():
        reads |= step.reads
        writes |= step.writes
    return reads & writes


def record_digests(graph: Graph, mirror: Path, wrote: set[str] | None, known: dict[str, str | None]) -> None:
    """After a kept build: the digests of :func:`outputs_read` as the build left them.
    *wrote*: what an incremental build wrote (None: a clean build, all are new); the
    others kept theirs (not written: the same lstat, so the same bytes). Blocking."""
    keep = outputs_read(graph)
    old = {} if wrote is None else {rel: d for rel, d in graph.digests.items() if rel in keep and rel not in wrote}
    for rel in keep - old.keys():
        digest = known[rel] if rel in known else _digest(mirror, rel)
        if digest is not None:
            old[rel] = digest
    graph.digests = old


def _digest(root: Path, rel: str) -> str | None:
    """sha256 of the regular file *rel* under *root*, reached through no symlink (the
    build made it: a symlink to a host file or a FIFO must be neither followed nor
    waited on); None when it is anything else."""
    try:
        root_fd = safefs.open_root(Path(os.path.realpath(root.parent)) / root.name)  # ours up to root
    except OSError:
        return None
    try:
        parent, _, name = rel.rpartition("/")
        dir_fd = safefs.open_dir(root_fd, parent)
        try:
            got = safefs.open_file(dir_fd, name)
        finally:
            os.close(dir_fd)
    except OSError:
        return None
    finally:
        os.close(root_fd)
    if got is None:
        return None
    fd, _ = got
    h = hashlib.sha256()
    try:
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return h.hexdigest()


__all__ = ["Graph", "is_build_file", "outputs_read", "plan", "record_digests", "verify"]
