"""The repair of an incremental build whose only fault is a step that did not run again.

Why: ninja's ``restat`` (Meson's ``.symbols`` file) skips the links of programs against a
shared library relinked with other bytes but the same exports; :func:`buildgraph.verify`
then refuses the build (a step that read the library did not run again) and the daemon
built clean. The repair deletes the outputs of those stale steps and runs the build
command once more, so the build system runs them; the two builds together are kept only
when they pass the checks of docs/daemon.md ("When a step that read a rewritten output
need not run again"), else the build is redone clean as before.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

from ssebench.checks import State
from ssebench.contract import CheckHeartbeat
from ssebench.daemon import buildgraph, safefs, treescan
from ssebench.daemon.runtypes import CallRun, CheckRun
from ssebench.daemon.traceparse import Step, TraceRecord
from ssebench.daemon.workspace import Manifest

Traced = Callable[..., AsyncIterator[CheckHeartbeat]]


def stale(
    graph: buildgraph.Graph,
    record: TraceRecord,
    changed: set[str],
    wrote: set[str],
    mirror: Path,
    known: dict[str, str | None],
) -> set[str] | None:
    """The keys of the graph's steps that did not run again and read a build output this
    build rewrote with other bytes; None when some step did not run again and read a
    changed file (a source: not for the repair), or when there is none."""
    if not record.complete:
        return None
    touched = changed | wrote
    keys: set[str] = set()
    for key, step in graph.steps.items():
        hit = step.reads & touched
        if not hit or key in record.steps:
            continue
        if hit & changed:
            return None
        if not all(buildgraph.same_bytes(graph, record, step, rel, mirror, known) for rel in hit):
            keys.add(key)
    return keys or None


def doomed(graph: buildgraph.Graph, record: TraceRecord, keys: set[str], new: Manifest) -> set[str] | None:
    """The outputs of the stale steps *keys*, to delete; None when one of them is a source
    or has another writer (in the graph or this build): deleting it could lose bytes no
    step would make again."""
    writers: dict[str, set[str]] = {}
    for steps in (graph.steps, record.steps):
        for key, step in steps.items():
            for rel in step.writes:
                writers.setdefault(rel, set()).add(key)
    out: set[str] = set()
    for key in keys:
        for rel in graph.steps[key].writes:
            if rel in new or writers.get(rel) != {key}:
                return None
            out.add(rel)
    return out or None


def delete(root: Path, rels: set[str]) -> bool:
    """Unlink the files *rels* under *root*, through no symlink; False when one is a
    folder or cannot be reached (then no repair). Blocking."""
    root_fd = safefs.open_root(Path(os.path.realpath(root.parent)) / root.name)
    try:
        for rel in sorted(rels):
            parent, _, name = rel.rpartition("/")
            try:
                dir_fd = safefs.open_dir(root_fd, parent)
            except (OSError, safefs.Unsafe):
                return False
            try:
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
            except OSError:
                return False
            finally:
                os.close(dir_fd)
    finally:
        os.close(root_fd)
    return True


def merged(first: TraceRecord, second: TraceRecord) -> TraceRecord:
    """The steps of both builds (a step that ran in both: what it did in either)."""
    steps: dict[str, Step] = {}
    for record in (first, second):
        for key, step in record.steps.items():
            if key in steps:
                steps[key].merge(step)
            else:
                steps[key] = replace(
                    step,
                    reads=set(step.reads),
                    writes=set(step.writes),
                    execs=set(step.execs),
                    parents=set(step.parents),
                )
    return TraceRecord(steps=steps, complete=first.complete and second.complete)


class Repair:
    """One repair: :meth:`run` deletes, builds again, checks; :attr:`why` None means kept
    (then :attr:`record`, :attr:`wrote` and :attr:`known` are the two builds')."""

    def __init__(
        self,
        graph: buildgraph.Graph,
        first: TraceRecord,
        changed: set[str],
        wrote: set[str],
        new: Manifest,
        tree: Path,
        reason: str,
    ) -> None:
        self.reason = reason  # verify's objection to the first build
        self.graph, self.first, self.changed, self.new, self.tree = graph, first, changed, new, tree
        self.wrote = set(wrote)
        self.why: str | None = "not tried"
        self.keys: set[str] = set()
        self.deleted: set[str] = set()
        self.record = first
        self.known: dict[str, str | None] = {}

    def prepare(self, known: dict[str, str | None]) -> treescan.Scan | None:
        """Find the stale steps and delete their outputs: the mirror's scan after, or None
        (no repair: :attr:`why` says why). Blocking."""
        keys = stale(self.graph, self.first, self.changed, self.wrote, self.tree, known)
        if keys is None:
            self.why = "not only steps that read an output rewritten with other bytes"
            return None
        deleted = doomed(self.graph, self.first, keys, self.new)
        if deleted is None:
            self.why = "a stale step's output is a source or has another writer"
            return None
        if not delete(self.tree, deleted):
            self.why = "a stale step's output could not be deleted"
            return None
        self.keys, self.deleted = keys, deleted
        return treescan.scan(self.tree)

    def check(self, second: TraceRecord, before: treescan.Scan) -> str | None:
        """Why the two builds together may differ from a clean one (None: they cannot). Blocking."""
        if not second.complete:
            return second.problem or "the trace is incomplete"
        if self.keys - second.steps.keys():
            return "a stale step did not run in the second build"
        after = treescan.scan(self.tree)
        gone = sorted(rel for rel in self.deleted if not treescan.has(after, rel))
        if gone:
            return f"'{gone[0]}' was deleted and not made again"
        wrote2 = treescan.written(before, after)
        for key, step in self.first.steps.items():
            hit = step.reads & wrote2
            if hit and key not in second.steps:
                return f"a step that read '{min(hit)}' ran before the second build rewrote it"
        record = merged(self.first, second)
        wrote = self.wrote | wrote2 | self.deleted
        known: dict[str, str | None] = {}
        why = buildgraph.verify(self.graph, record, self.changed, wrote, self.new, self.tree, known)
        if why is None:
            self.record, self.wrote, self.known = record, wrote, known
        return why

    async def run(
        self, run: CallRun, result: CheckRun, records: list[TraceRecord], traced: Traced, known: dict[str, str | None]
    ) -> AsyncIterator[CheckHeartbeat]:
        """Delete, build again (traced, its output added to the log), check."""
        start = time.perf_counter()
        before = await asyncio.to_thread(self.prepare, known)
        run.timed("build: repair", time.perf_counter() - start)
        if before is None:
            return
        async for event in traced(run, result, records, append=True, phase="build: command, repair"):
            yield event
        if result.timed_out:
            self.why = "the second build timed out"
            return
        start = time.perf_counter()
        if result.state != State.PASSED:
            self.why = "the second build failed"
        else:
            self.why = await asyncio.to_thread(self.check, records[-1], before)
        run.timed("build: repair", time.perf_counter() - start)
        said = "kept" if self.why is None else f"not kept ({self.why}), building clean"
        gone = ", ".join(f"'{rel}'" for rel in sorted(self.deleted)[:3]) + (" ..." if len(self.deleted) > 3 else "")
        print(f"ssebench daemon: build repair (deleted {gone}, as {self.reason}): {said}", file=sys.stderr, flush=True)
