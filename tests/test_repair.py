"""The repair's checks (repair.py) on a build graph written by hand over real files: which
steps are stale, which outputs it may delete, and when the two builds are kept. The
whole repair under ninja, against a fresh daemon, is tests/test_equivalence_restat.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ssebench.daemon import buildgraph, repair
from ssebench.daemon.traceparse import Step, TraceRecord
from ssebench.daemon.workspace import FILE, SourceEntry

SOURCES = {"q.c": SourceEntry(FILE, 0o644, "x", 1)}


def _step(key: str, reads: set[str], writes: set[str]) -> Step:
    return Step(key, reads=set(reads), writes=set(writes), wrote=bool(writes))


def _graph(tree: Path) -> buildgraph.Graph:
    """q.c -> q.o -> libq.so -> prog -> out, as the last kept build left them."""
    steps = [
        _step("cc", {"q.c"}, {"q.o"}),
        _step("lib", {"q.o"}, {"libq.so"}),
        _step("link", {"main.o", "libq.so"}, {"prog"}),
        _step("run", {"prog"}, {"out"}),
    ]
    for rel in ("q.o", "libq.so", "main.o", "prog", "out"):
        (tree / rel).write_text(f"old {rel}")
    graph = buildgraph.Graph({s.key: s for s in steps})
    graph.digests = {rel: hashlib.sha256(f"old {rel}".encode()).hexdigest() for rel in ("q.o", "libq.so", "prog")}
    return graph


def _first(tree: Path, *extra: Step) -> TraceRecord:
    """The incremental build: q.c changed, q.o and libq.so rewritten with other bytes."""
    (tree / "q.o").write_text("new q.o")
    (tree / "libq.so").write_text("new libq.so")
    steps = [_step("cc", {"q.c"}, {"q.o"}), _step("lib", {"q.o"}, {"libq.so"}), *extra]
    return TraceRecord({s.key: s for s in steps})


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "m").mkdir()
    return tmp_path / "m"


def test_the_stale_link_is_found_and_only_its_output_deleted(tree):
    graph, first = _graph(tree), _first(tree)
    fix = repair.Repair(graph, first, {"q.c"}, {"q.o", "libq.so"}, SOURCES, tree, "why")
    before = fix.prepare({})
    assert before is not None and fix.keys == {"link"} and fix.deleted == {"prog"}
    assert not (tree / "prog").exists() and (tree / "out").read_text() == "old out"
    (tree / "prog").write_text("new prog")  # the second build links it, then runs it
    (tree / "out").write_text("new out")
    second = TraceRecord(
        {"link": _step("link", {"main.o", "libq.so"}, {"prog"}), "run": _step("run", {"prog"}, {"out"})}
    )
    assert fix.check(second, before) is None
    assert set(fix.record.steps) == {"cc", "lib", "link", "run"}
    assert {"q.o", "libq.so", "prog", "out"} <= fix.wrote
    assert first.steps.keys() == {"cc", "lib"}  # the first build's record is not changed


def test_the_two_builds_are_refused_where_a_clean_build_could_differ(tree):
    graph = _graph(tree)
    # A step of the first build read prog before the second build rewrote it, and did not run again.
    first = _first(tree, _step("run", {"prog"}, {"out"}))
    fix = repair.Repair(graph, first, {"q.c"}, {"q.o", "libq.so", "out"}, SOURCES, tree, "why")
    before = fix.prepare({})
    assert before is not None
    (tree / "prog").write_text("new prog")
    link = _step("link", {"main.o", "libq.so"}, {"prog"})
    assert fix.check(TraceRecord({"link": link}), before) == (
        "a step that read 'prog' ran before the second build rewrote it"
    )
    assert fix.check(TraceRecord({}), before) == "a stale step did not run in the second build"
    (tree / "prog").unlink()
    assert fix.check(TraceRecord({"link": link}), before) == "'prog' was deleted and not made again"
    assert fix.check(TraceRecord({"link": link}, complete=False, problem="p"), before) == "p"


def test_nothing_is_deleted_for_a_source_another_writer_or_a_changed_input(tree):
    graph = _graph(tree)
    first = _first(tree)
    args = ({"q.c"}, {"q.o", "libq.so"})
    sources = {**SOURCES, "prog": SourceEntry(FILE, 0o644, "y", 1)}
    fix = repair.Repair(graph, first, *args, sources, tree, "why")
    assert fix.prepare({}) is None and fix.why == "a stale step's output is a source or has another writer"
    graph.steps["strip"] = _step("strip", set(), {"prog"})
    fix = repair.Repair(graph, first, *args, SOURCES, tree, "why")
    assert fix.prepare({}) is None and fix.why == "a stale step's output is a source or has another writer"
    del graph.steps["strip"]
    graph.steps["gen"] = _step("gen", {"q.c"}, {"q.h"})  # read the changed source, did not run
    fix = repair.Repair(graph, first, *args, SOURCES, tree, "why")
    assert fix.prepare({}) is None and fix.why.startswith("not only steps that read an output")
    assert (tree / "prog").read_text() == "old prog"
