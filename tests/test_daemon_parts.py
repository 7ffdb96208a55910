"""The daemon's parts, each on its own (issue 30): the workspace without a build, the
check executor without a run, the views, the build engine without the runner; then the
runner's table-driven sequence and its typed events, and the shape of the parts.

Real parts throughout: real task folders (tests/helpers/tasks.make_task), real
snapshots, real processes, a real small tmpfs where a full disk is needed.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib
import inspect
import os
import pkgutil
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ssebench.daemon
from ssebench import contract
from ssebench.checks import KINDS, Check, State
from ssebench.contract import CheckFinished, CheckHeartbeat, CheckStarted, Result
from ssebench.daemon.build import BuildEngine
from ssebench.daemon.checkproc import CheckExecutor
from ssebench.daemon.housekeeping import Housekeeping
from ssebench.daemon.limits import Limits
from ssebench.daemon.runner import Runner
from ssebench.daemon.runtypes import CallRun, CheckRun, DaemonContext, RunError
from ssebench.daemon.sandbox import Sandbox
from ssebench.daemon.views import Views
from ssebench.daemon.workdirs import Workspace
from ssebench.task import Command, load_task
from tests.helpers.tasks import make_task
from tests.helpers.tmpfs import small_tmpfs

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parent.parent
MiB = 1 << 20


class Parts:
    """A workspace (and what a test adds to it) on a real task, without the runner."""

    def __init__(self, tmp: Path, root: Path | None = None, *, budget: int = MiB, **task_kw: Any) -> None:
        self.files = make_task(tmp / "task", **task_kw)
        self.root = root if root is not None else tmp / "ws"
        self.root.mkdir(mode=0o700, parents=True)
        env = {k: v for k, v in os.environ.items() if k != "SSE_POC"}
        self.ctx = DaemonContext(
            load_task(self.files.file), Sandbox(None), Limits(), 3600.0, env, self.root / "engine" / "tree"
        )
        self.housekeeping = Housekeeping()
        self.workspace = Workspace(self.ctx, self.files.tree, self.root, self.housekeeping, log_budget=budget)

    def run(self) -> CallRun:
        return asyncio.run(self.workspace.prepare())


async def _all(events: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in events]


def collect(events: AsyncIterator[Any]) -> list[Any]:
    return asyncio.run(_all(events))


def _log(run: CallRun, size: int) -> None:
    (run.dir / "logs" / "build.out").write_bytes(b"x" * size)


# -- the workspace, without a build ----------------------------------------------------------


def test_old_runs_are_kept_newest_first_within_the_log_budget(tmp_path: Path) -> None:
    p = Parts(tmp_path, budget=MiB)
    runs = []
    for _ in range(5):
        run = p.run()
        p.workspace.begin(run)  # as a run starts: the old ones are pruned
        _log(run, 400_000)
        runs.append(run)
    p.housekeeping.wait_for_removals()
    # When the fifth began: the fourth and third fit in 1 MiB with it, the second did not.
    assert list(p.workspace.runs) == [r.id for r in runs[2:]]
    assert [r.dir.exists() for r in runs] == [False, False, True, True, True]


def test_the_newest_old_run_stays_whatever_the_budget(tmp_path: Path) -> None:
    p = Parts(tmp_path, budget=1)
    runs = [p.run() for _ in range(3)]
    for run in runs:
        p.workspace.begin(run)
        _log(run, 10_000)
    assert list(p.workspace.runs) == [runs[1].id, runs[2].id]


def test_a_discarded_run_leaves_neither_folder_nor_blobs(tmp_path: Path) -> None:
    p = Parts(tmp_path, tree_files={"a.c": "int a;\n"})
    run = p.run()
    assert run.snapshot is not None and run.snapshot.files == 1
    assert any(p.workspace.store.blobs.iterdir())
    p.workspace.discard(run)
    p.housekeeping.wait_for_removals()
    assert not run.dir.exists() and run.snapshot is None
    # The store keeps the last sync's blobs for the next stat check; a run's own go.
    assert [e.name for e in p.root.iterdir() if e.name.startswith("r-")] == []


def test_a_removed_workspace_is_made_again_at_the_next_call(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    p = Parts(tmp_path, tree_files={"a.c": "int a;\n"})
    first = p.run()
    p.workspace.begin(first)
    p.workspace.mirror.manifest = {}  # as if a build had run
    shutil.rmtree(p.root)
    second = p.run()
    assert capsys.readouterr().err == f"ssebench daemon: the workspace {p.root} was removed; recreating it\n"
    assert second.dir.is_dir() and (second.dir / "logs").is_dir()
    assert second.snapshot is not None and set(second.snapshot.manifest) == {"a.c"}
    assert p.workspace.runs == {} and p.workspace.mirror.manifest is None  # old logs gone; next build clean


def test_a_workspace_name_taken_by_something_else_is_the_runs_error(tmp_path: Path) -> None:
    p = Parts(tmp_path)
    shutil.rmtree(p.root)
    p.root.symlink_to(tmp_path)
    with pytest.raises(RunError) as err:
        p.run()
    assert (
        str(err.value)
        == "the daemon's workspace was removed and cannot be made again: its name is taken by something not ours"
    )


def test_a_full_disk_is_freed_by_the_failed_run_then_old_runs_only_while_still_full(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "disk", "8m") as disk:
        p = Parts(tmp_path, disk / "ws", budget=64 * MiB, tree_files={"a.c": "int a;\n"})
        old = p.run()
        p.workspace.begin(old)
        _log(old, 3 * MiB)
        failed = p.run()
        p.workspace.begin(failed)
        with contextlib.suppress(OSError), open(failed.dir / "logs" / "build.out", "wb") as out:
            while True:  # the failed run's log fills the disk
                out.write(b"x" * 65536)
        assert p.workspace.low_on_space()
        asyncio.run(p.workspace.reclaim(failed, exclusive=True))
        assert not p.workspace.low_on_space()
        assert not failed.dir.exists() and failed.id not in p.workspace.runs
        assert old.dir.is_dir() and list(p.workspace.runs) == [old.id]  # no longer full: kept
        assert p.workspace.mirror.manifest is None  # the next build starts from a fresh copy


# -- the check executor, without a run ---------------------------------------------------------


def _executor_run(tmp_path: Path) -> tuple[CheckExecutor, CallRun, DaemonContext]:
    p = Parts(tmp_path)
    run = CallRun("r-1", tmp_path / "run", None)
    (run.dir / "logs").mkdir(parents=True)
    p.ctx.tree_path.mkdir()
    return CheckExecutor(p.ctx), run, p.ctx


def test_the_executor_times_a_command_out_with_heartbeats_and_a_note(tmp_path: Path) -> None:
    executor, run, ctx = _executor_run(tmp_path)
    ctx.heartbeat = 0.05
    result = CheckRun(Check.FUNCTIONAL, State.FAILED)
    command = Command("echo out; echo err >&2; exec sleep 30", timeout=0.5)
    events = collect(executor.run_check(run, result, command, ctx.tree_path))
    assert events and all(isinstance(e, CheckHeartbeat) and e.check is Check.FUNCTIONAL for e in events)
    assert [e.elapsed for e in events] == sorted(e.elapsed for e in events)
    assert (result.state, result.timed_out) == (State.FAILED, True)
    assert result.log is not None
    assert result.log.read_text() == (
        "out\n\nerr\n[ssebench] timed out after 0.5 s: the command and every process it started were killed.\n"
    )


def test_the_executor_gives_a_check_its_environment_and_never_the_daemons_poc(tmp_path: Path) -> None:
    executor, run, ctx = _executor_run(tmp_path)
    ctx.base_env["SSE_POC"] = "/the/daemons/own"
    result = CheckRun(Check.BUILD, State.FAILED)
    command = Command('echo "$SSE_TREE|$SSE_TASK_DIR|${SSE_POC-unset}"', timeout=30)
    assert collect(executor.run_check(run, result, command, ctx.tree_path)) == []
    assert result.state is State.PASSED and result.log is not None
    assert result.log.read_text() == f"{ctx.tree_path}|{ctx.task.dir}|unset\n\n"


# -- views and the build engine, without the runner -------------------------------------------


def test_a_view_without_overlays_is_a_copy_of_the_mirror_discarded_after(tmp_path: Path) -> None:
    p = Parts(tmp_path)
    executor = CheckExecutor(p.ctx)
    views = Views(p.ctx, p.workspace, executor)
    p.workspace.mirror.path.mkdir()
    (p.workspace.mirror.path / "built").write_text("object\n")
    run = p.run()

    async def check_in_a_view() -> str:
        view = await views.make(run, Check.FUNCTIONAL)
        assert view == p.ctx.tree_path  # no sandbox: no overlays
        assert await _all(views.fill(view, run, Check.FUNCTIONAL)) == []
        (p.ctx.tree_path / "built").write_text("changed by the check\n")
        return (p.workspace.mirror.path / "built").read_text()

    assert asyncio.run(check_in_a_view()) == "object\n"
    views.discard(run, Check.FUNCTIONAL)
    p.housekeeping.wait_for_removals()
    assert not p.ctx.tree_path.exists() and (p.workspace.mirror.path / "built").is_file()


def test_the_build_engine_alone_builds_clean_in_the_mirror(tmp_path: Path) -> None:
    p = Parts(tmp_path, build="cat a.c > built.txt", tree_files={"a.c": "int a;\n"})
    engine = BuildEngine(p.ctx, p.workspace, CheckExecutor(p.ctx), trace=False)
    for _ in range(2):
        result = CheckRun(Check.BUILD, State.FAILED)
        collect(engine.build(p.run(), result))
        assert (result.state, engine.last_build) == (State.PASSED, "clean: tracing is off")
    assert engine.tracing == "off: every build is clean"
    assert (p.workspace.mirror.path / "built.txt").read_text() == "int a;\n"
    assert not p.ctx.tree_path.exists()  # the mirror went back where it waits
    assert engine.build_counts == {"clean": 2}


# -- the runner: the rows' sequence, typed events ----------------------------------------------


def _events(tmp_path: Path, heartbeat: float = 3600, **task_kw: Any) -> list[contract.RunEvent]:
    files = make_task(tmp_path / "task", **task_kw)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runner = Runner(load_task(files.file), files.tree, workspace, heartbeat=heartbeat, trace=False)

    async def go() -> list[contract.RunEvent]:
        run = await runner.prepare()
        return await _all(runner.execute(run, list(Check)))

    return asyncio.run(go())


def _shape(events: list[contract.RunEvent]) -> list[str]:
    out = []
    for e in events:
        if isinstance(e, CheckFinished):
            out.append(f"finished {e.check.value} {e.result.state.value}" + (" covered" * e.result.covered_by_intent))
        elif isinstance(e, CheckStarted | CheckHeartbeat):
            out.append(f"{'started' if isinstance(e, CheckStarted) else 'heartbeat'} {e.check.value}")
        else:
            out.append(f"result {[c.check.value for c in e.checks]}")
    return out


def test_the_runner_yields_typed_events_that_are_their_own_wire_lines(tmp_path: Path) -> None:
    events = _events(tmp_path, 0.05, build="sleep 0.3", pocs=["fixed"], intent="true", functional="true")
    shape = [s for s in _shape(events) if not s.startswith("heartbeat ")]
    assert shape == [
        "started build",
        "finished build passed",
        "started pocs",
        "finished pocs passed",
        "started intent",
        "finished intent passed",
        "finished functional passed covered",  # the row's covered_by: not started at all
        "result ['build', 'pocs', 'intent', 'functional']",
    ]
    assert "heartbeat build" in _shape(events)
    for event in events:  # what app.py writes is exactly what the server reads back
        assert contract.parse_line(contract.to_line(event).decode()) == event
    assert isinstance(events[-1], Result) and events[-1].difficulty is None  # the level is app.py's


def test_after_a_failed_build_every_other_kind_is_not_run(tmp_path: Path) -> None:
    events = _events(tmp_path, build="false", pocs=["crash"], intent="true", functional="true")
    assert _shape(events) == [
        "started build",
        "finished build failed",
        "finished pocs not_run",
        "finished intent not_run",
        "finished functional not_run",
        "result ['build', 'pocs', 'intent', 'functional']",
    ]


def test_failed_intent_tests_cover_nothing(tmp_path: Path) -> None:
    events = _events(tmp_path, intent="false", functional="true")
    assert _shape(events)[-4:] == [
        "finished intent failed",
        "started functional",
        "finished functional passed",
        "result ['build', 'pocs', 'intent', 'functional']",
    ]


@given(
    check=st.sampled_from(list(Check)),
    state=st.sampled_from(list(State)),
    elapsed=st.floats(min_value=0, max_value=1e6),
    counts=st.tuples(st.integers(0, 50), st.integers(0, 50)).map(sorted),
    beat=st.floats(min_value=0, max_value=1e6),
)
def test_a_check_record_is_the_same_on_both_sides_of_the_wire(
    check: Check, state: State, elapsed: float, counts: list[int], beat: float
) -> None:
    """Grading reads the runner's events typed, the server reads them off the wire: both
    see the same values (the records round to the wire's precision when they are made)."""
    record = CheckRun(check, state, elapsed=elapsed)
    if check.kind.counted and state is not State.NOT_RUN:  # as the PoC step fills them in
        record.pocs_passed, record.pocs_total = counts
    for event in (CheckFinished(record.result()), CheckHeartbeat(check, round(beat, 1))):
        assert contract.parse_line(contract.to_line(event).decode()) == event


def test_each_row_names_a_step_of_the_daemon() -> None:
    for kind in KINDS:
        step = kind.step_function()
        assert inspect.isasyncgenfunction(step) and step.__module__ == "ssebench.daemon.steps", kind
        assert list(inspect.signature(step).parameters) == ["parts", "run", "result", "tree"]


def test_the_rows_and_the_contract_import_no_part_of_the_daemon() -> None:
    # The server reads the rows and the contract; it must not pay for the daemon's imports.
    code = (
        "import sys, ssebench.checks, ssebench.contract, ssebench.phrases, ssebench.difficulty; "
        "print(sorted(m for m in sys.modules if m.startswith('ssebench.daemon')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


# -- the shape of the parts -------------------------------------------------------------------


def _daemon_modules() -> list[str]:
    return sorted(f"ssebench.daemon.{m.name}" for m in pkgutil.iter_modules(ssebench.daemon.__path__))


def _imports(module: str) -> set[str]:
    """The daemon modules *module* imports, at its top or inside a function."""
    path = ROOT / (module.replace(".", "/") + ".py")
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n.startswith("ssebench.daemon.") and n != module}
    return found & set(_daemon_modules())


def test_the_daemons_modules_import_each_other_without_a_circle() -> None:
    graph = {m: _imports(m) for m in _daemon_modules()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph[start]:
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert [m for m in graph if reaches(m, m, set())] == []


def test_no_daemon_class_has_more_than_one_project_class_under_it() -> None:
    for name in _daemon_modules():
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if inspect.isclass(cls) and cls.__module__ == name:
                ours = [b for b in cls.__mro__[1:] if b.__module__.startswith("ssebench")]
                assert len(ours) <= 1, (cls, ours)
