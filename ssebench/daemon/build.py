"""The build engine: the build in the one build mirror, incrementally where
buildgraph.py shows the answer is a clean build's, else clean; traced, verified, and
once more clean when an incremental build failed or may differ from a clean one.

Its state is its own (is strace usable, the mirror's build graph, what the last build
was); the mirror and the fixed tree path are the workspace's, the processes the check
executor's."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from ssebench.checks import State
from ssebench.contract import CheckHeartbeat
from ssebench.daemon import buildgraph, repair, tracefile, treescan
from ssebench.daemon.checkproc import CheckExecutor
from ssebench.daemon.logs import CheckLog
from ssebench.daemon.mirror import fs_now
from ssebench.daemon.runtypes import CallRun, CheckRun, DaemonContext, RunError
from ssebench.daemon.sandbox import TREE_PATH, TreeView
from ssebench.daemon.sandbox_setup import run_sandboxed
from ssebench.daemon.workdirs import Workspace
from ssebench.daemon.workspace import Snapshot


class BuildEngine:
    """Builds in the workspace's mirror, through the check executor."""

    def __init__(self, ctx: DaemonContext, workspace: Workspace, executor: CheckExecutor, *, trace: bool) -> None:
        self.ctx = ctx
        self.workspace = workspace
        self.mirror = workspace.mirror
        self.executor = executor
        self.trace = trace
        self._strace: str | None = None  # is strace usable: probed once, at the first build
        self._strace_probed = False
        self.tracing = "not probed yet"  # what /health shows
        self._graph: buildgraph.Graph | None = None
        self.last_build = ""  # "incremental", "clean: <why>" or "unchanged: ..." (benchmarks, tests)
        self.reuse = True  # answer a call with no change from the last build (benchmarks turn it off)
        self._kept: CheckLog | None = None  # the log of the build that made the mirror (see _unchanged)
        self.build_counts: collections.Counter[str] = collections.Counter()
        self.last_record: tracefile.TraceRecord | None = None  # the last build's (tests, benchmarks)
        self._wrote: set[str] = set()  # what the incremental build wrote, and the digests
        self._known: dict[str, str | None] = {}  # verify took: for the graph's (_digests)
        self._scan: treescan.Scan | None = None  # the mirror's, as the last build left it (_keep)
        self._after: treescan.Scan | None = None  # this build's (verify's), until it is kept

    @property
    def tree_path(self) -> Path:
        return self.ctx.tree_path

    async def build(self, run: CallRun, result: CheckRun) -> AsyncIterator[CheckHeartbeat]:
        """Build in the mirror: incrementally where the build engine (buildgraph.py) can
        show the answer is a clean build's, else clean (a fresh mirror, agent's mtimes).

        Every build is traced. An incremental build is kept only when it passed and its
        trace shows nothing a clean build could do differently (after a repair: repair.py);
        otherwise it runs once more, clean, and that build's log is the log. The mirror sits at
        :attr:`tree_path` while it builds. A build that did not end by itself (timeout,
        cancel, shutdown) leaves the mirror unknown, so the next run starts clean.
        """
        assert run.snapshot is not None
        snapshot = run.snapshot
        ended = False
        if self.mirror.manifest is None:  # a mirror made again (or invalidated): no graph of it
            self._graph = None
        start = time.perf_counter()
        await self._tracer()
        if await self._unchanged(run, result, snapshot):
            run.timed("build: sync", time.perf_counter() - start)
            return
        self._kept, self._wrote, self._known, self._after = None, set(), {}, None
        try:
            incremental, changed = await self._to_mirror(snapshot)
            before = await asyncio.to_thread(self._scan_before, changed) if incremental else {}
            self._mirror_in()
            run.timed("build: sync", time.perf_counter() - start)
            records: list[tracefile.TraceRecord] = []
            async for event in self._traced(run, result, records):
                yield event
            retry = None
            if incremental and not result.timed_out and not self.ctx.closing:
                verdict: list[str | None] = []
                async for event in self._judge(run, result, records, (changed, before), snapshot, verdict):
                    yield event
                retry = verdict[0]
            if retry is not None:
                self.last_build = f"clean: {retry}"
                incremental = False
                async for event in self._rebuild(run, result, records, snapshot, traced=True):
                    yield event
            if result.state != State.PASSED and not result.timed_out and self._ptrace_broke(result):
                # LeakSanitizer refuses to run under ptrace: what the build ran must run
                # as it would untraced (as in a fresh daemon without strace, and in grade).
                self.last_build = "clean: a program of the build cannot run under strace"
                incremental = False
                async for event in self._rebuild(run, result, records, snapshot, traced=False):
                    yield event
            self._remember(incremental, result, records[-1])
            await self._digests(run, incremental)
            ended = not result.timed_out
            if ended:
                await asyncio.to_thread(self._keep, result)
        finally:
            if not ended:
                self.mirror.invalidate()
                self._graph = None
            self._mirror_out()
            with contextlib.suppress(OSError):  # the workspace may be going away (shutdown)
                self.mirror.last_build_end_ns = fs_now(self.mirror.path.parent)

    def _scan_before(self, changed: set[str]) -> treescan.Scan:
        """The mirror's scan before an incremental build: the last build's with the folders
        the update wrote in taken again (nothing else writes there: checks see views),
        else a whole scan. Blocking. Were it stale, the build would seem to have written
        more (ctimes only grow), never less: a step more must run again, never one less."""
        if self._scan is None:
            return treescan.scan(self.mirror.path)
        return treescan.refresh(self._scan, self.mirror.path, treescan.parents(changed))

    async def _judge(
        self,
        run: CallRun,
        result: CheckRun,
        records: list[tracefile.TraceRecord],
        delta: tuple[set[str], treescan.Scan],
        snapshot: Snapshot,
        verdict: list[str | None],
    ) -> AsyncIterator[CheckHeartbeat]:
        """Why the incremental build may differ from a clean one, to *verdict* (None: it
        cannot), after a repair (repair.py) where one can remove the doubt."""
        changed, before = delta
        if result.state != State.PASSED:
            verdict.append("the incremental build failed")
            return
        why = await self._verify(run, records[-1], changed, before, snapshot)
        if why is not None and self._graph is not None:
            fix = repair.Repair(self._graph, records[-1], changed, self._wrote, snapshot.manifest, self.tree_path, why)
            async for event in fix.run(run, result, records, self._traced, self._known):
                yield event
            if fix.why is None:
                records.append(fix.record)
                self._wrote, self._known = fix.wrote, fix.known
                self.last_build, why = f"incremental: repaired ({why})", None
            elif result.timed_out:  # the second build's timeout is the answer
                why = None
        verdict.append(why)

    async def _unchanged(self, run: CallRun, result: CheckRun, snapshot: Snapshot) -> bool:
        """Answer from the last build when nothing at all changed since it; True if so.

        Why that is the fresh answer: the mirror's last build passed, was traced whole
        and kept, so its answer and the mirror it left are a clean build's of the tree it
        built; the snapshot is that tree (every path, kind, mode, link target, content
        and mtime the same; none in the future), and a clean build of the same tree is
        the same build. Running it again could only differ where the build is not
        idempotent (``echo >> out``), i.e. from the fresh answer. The build's log is the
        last build's, copied; if it cannot be, the build runs (the verified way).
        """
        kept, manifest, graph = self._kept, self.mirror.manifest, self._graph
        if not self.reuse or kept is None or manifest is None or graph is None or self._strace is None:
            return False

        def go() -> bool:
            if not self.mirror.path.is_dir():
                return False
            why, changed = buildgraph.plan(manifest, snapshot.manifest, graph, fs_now(self.mirror.path.parent))
            if why is not None or changed:
                return False
            log = self.executor.log(run, result.check.value)
            try:
                kept.share_to(log)
            except OSError:
                return False
            result.log = log
            return True

        if not await asyncio.to_thread(go):
            return False
        result.state = State.PASSED
        self.last_build = "unchanged: nothing the build read changed, the last build's answer"
        self.build_counts["unchanged"] += 1
        return True

    def _keep(self, result: CheckRun) -> None:
        """After a build that ended: keep its log where its graph is kept (for
        :meth:`_unchanged`), and its mirror's scan where it was an incremental build not
        repaired (after any other, the next incremental build scans the mirror whole)."""
        self._scan = self._after if self.last_build == "incremental" and self._graph is not None else None
        if self._graph is None or result.log is None:
            return
        kept = CheckLog(*(self.mirror.path.parent / f"last-build.{end}" for end in ("out", "err")))
        with contextlib.suppress(OSError):
            result.log.share_to(kept)
            self._kept = kept

    async def _rebuild(
        self, run: CallRun, result: CheckRun, records: list[tracefile.TraceRecord], snapshot: Snapshot, *, traced: bool
    ) -> AsyncIterator[CheckHeartbeat]:
        """The build once more, clean: a fresh mirror; its log is the log, nothing added
        (the task format defines a check's log as its output; the agent is not told
        about the retry: it changes nothing about what the result means)."""
        start = time.perf_counter()
        self._mirror_out()
        try:
            await asyncio.to_thread(self.mirror.fresh, snapshot)  # written as the checks' uid
        except OSError as exc:
            raise RunError(f"could not copy the source tree: {exc}") from None
        self._mirror_in()
        run.timed("build: sync, clean again", time.perf_counter() - start)
        assert result.log is not None
        result.log.stdout.write_bytes(b"")
        result.log.stderr.write_bytes(b"")
        result.timed_out = False
        async for event in self._traced(run, result, records, append=True, traced=traced):
            yield event

    def _ptrace_broke(self, result: CheckRun) -> bool:
        """Did a traced build fail because a program refuses ptrace (LeakSanitizer)?"""
        if self._strace is None or result.log is None:
            return False
        with contextlib.suppress(OSError):
            return b"does not work under ptrace" in result.log.tail()
        return False

    async def _tracer(self) -> None:
        """Can builds be traced here? Probed once, through the sandbox (ptrace may be denied)."""
        if self._strace_probed:
            return
        self._strace_probed = True
        if not self.trace:
            self.tracing = "off: every build is clean"
            return
        folder, sandbox = self.mirror.path.parent / ".trace-probe-tree", self.ctx.sandbox
        folder.mkdir(mode=0o700, exist_ok=True)
        try:
            sandbox.give(folder)
            self._strace, self.tracing = await asyncio.to_thread(
                tracefile.probe,
                lambda argv, fds: run_sandboxed(sandbox, argv, TreeView.bind(folder), timeout=60, pass_fds=fds),
                self.mirror.path.parent,
                sandbox.check_user,
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if self._strace is None:
            print(f"ssebench daemon: build tracing {self.tracing}", file=sys.stderr, flush=True)

    async def _to_mirror(self, snapshot: Snapshot) -> tuple[bool, set[str]]:
        """Bring the mirror to *snapshot*, incrementally or fresh: (incremental?, changed files)."""

        def go() -> tuple[str | None, set[str]]:
            now = fs_now(self.mirror.path.parent)
            for _ in range(20):  # a coarse clock: let it pass the last build's end
                if now > self.mirror.last_build_end_ns + 1000:
                    break
                time.sleep(0.005)
                now = fs_now(self.mirror.path.parent)
            why, changed = (
                ("tracing is off", set())
                if self._strace is None
                else buildgraph.plan(self.mirror.manifest, snapshot.manifest, self._graph, now)
            )
            stamps = None
            if why is None:
                stamps = buildgraph.stamps(changed, snapshot.manifest, self.mirror.last_build_end_ns, now)
                why = "no room for fresh mtimes" if stamps is None else None
            if why is None and stamps is not None:
                # Written as the checks' uid (BuildMirror.owner), as a fresh mirror is.
                if self.mirror.update(snapshot, stamps)[0]:
                    return None, changed
                return "the mirror could not be updated", set()  # the update made it fresh
            self.mirror.fresh(snapshot)
            return why, set()

        try:
            why, changed = await asyncio.to_thread(go)
        except OSError as exc:
            raise RunError(f"could not copy the source tree: {exc}") from None
        self.last_build = "incremental" if why is None else f"clean: {why}"
        return why is None, changed

    async def _traced(
        self,
        run: CallRun,
        result: CheckRun,
        records: list[tracefile.TraceRecord],
        *,
        append: bool = False,
        traced: bool = True,
        phase: str = "",
    ) -> AsyncIterator[CheckHeartbeat]:
        """The build command, traced (when tracing works); its record goes to *records*."""
        command = self.ctx.task.build
        strace = self._strace
        phase = phase or ("build: command, clean again" if append else "build: command")
        start = time.perf_counter()
        if strace is None or not traced:
            async for event in self.executor.run_check(run, result, command, self.tree_path, append=append):
                yield event
            run.timed(phase, time.perf_counter() - start)
            records.append(tracefile.TraceRecord(complete=False, problem="not traced"))
            return
        trace = run.dir / "build.trace"
        fd = os.open(trace, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            if self.ctx.sandbox.check_user is not None:  # strace, as the check's uid, reopens it
                os.fchown(fd, *self.ctx.sandbox.check_user)
            async for event in self.executor.run_check(
                run,
                result,
                command,
                self.tree_path,
                append=append,
                wrap=lambda argv: tracefile.command(strace, argv, fd),
                pass_fds=(fd,),
            ):
                yield event
        finally:
            os.close(fd)
        run.timed(phase, time.perf_counter() - start)
        start = time.perf_counter()
        tree = TREE_PATH if self.ctx.sandbox.enabled else os.path.realpath(self.tree_path)
        try:
            records.append(await asyncio.to_thread(tracefile.parse_trace, trace, tree, tree))
        finally:
            with contextlib.suppress(OSError):
                os.unlink(trace)
            run.timed("build: trace parse", time.perf_counter() - start)

    async def _verify(
        self,
        run: CallRun,
        record: tracefile.TraceRecord,
        changed: set[str],
        before: treescan.Scan,
        snapshot: Snapshot,
    ) -> str | None:
        """Why a passed incremental build may differ from a clean one (None: it cannot)."""
        assert self._graph is not None
        graph = self._graph
        start = time.perf_counter()

        def go() -> str | None:
            self._after = treescan.scan(self.tree_path)
            self._wrote = treescan.written(before, self._after)
            return buildgraph.verify(
                graph, record, changed, self._wrote, snapshot.manifest, self.tree_path, self._known
            )

        try:
            return await asyncio.to_thread(go)
        finally:
            run.timed("build: verify", time.perf_counter() - start)

    def _remember(self, incremental: bool, result: CheckRun, record: tracefile.TraceRecord) -> None:
        """Keep the build graph: a clean build's record replaces it, an incremental one's
        updates it; a failed or untraced build leaves none (the next build is clean)."""
        self.build_counts[self.last_build.split(":")[0]] += 1
        self.last_record = record
        if result.state != State.PASSED or not record.complete:
            self._graph = None
        elif incremental and self._graph is not None:
            self._graph.update(record)
        else:
            self._graph = buildgraph.Graph.of(record)

    async def _digests(self, run: CallRun, incremental: bool) -> None:
        """The kept graph's digests of the outputs its steps read, as this build left
        them (buildgraph.record_digests): what the next verify compares rewritten ones with."""
        graph = self._graph
        if graph is None:
            return
        start = time.perf_counter()
        # A clean build (also one redone after a refused incremental one) starts over.
        wrote, known = (self._wrote, self._known) if incremental else (None, {})
        await asyncio.to_thread(buildgraph.record_digests, graph, self.tree_path, wrote, known)
        run.timed("build: digests", time.perf_counter() - start)

    def _mirror_in(self) -> None:
        """Move the mirror to the fixed tree path for a build."""
        self.workspace.discard_view()
        os.rename(self.mirror.path, self.tree_path)

    def _mirror_out(self) -> None:
        """Move the mirror back to where it waits between builds (no-op if it is there)."""
        if self.tree_path.is_dir() and not self.mirror.path.exists():
            os.rename(self.tree_path, self.mirror.path)
