"""buildgraph.plan on a snapshot with no change (issue 34, item 4): the shortcut for the
very entries the mirror holds decides as the full comparison does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ssebench.daemon import buildgraph
from ssebench.daemon.workspace import DIR, FILE, LINK, SourceEntry

NOW = 5_000

entries = st.builds(
    SourceEntry,
    kind=st.sampled_from([FILE, FILE, LINK, DIR]),
    mode=st.sampled_from([0o644, 0o755]),
    data=st.sampled_from(["a", "b"]),
    mtime_ns=st.integers(0, 2 * NOW),  # some in the future
)


@given(st.dictionaries(st.sampled_from([f"p{i}" for i in range(12)]), entries, min_size=1))
def test_the_same_entries_decide_as_equal_copies_do(manifest: dict[str, SourceEntry]) -> None:
    graph = buildgraph.Graph()
    same = dict(manifest)  # the very entries: the shortcut
    copies = {rel: SourceEntry(e.kind, e.mode, e.data, e.mtime_ns) for rel, e in manifest.items()}
    assert buildgraph.plan(manifest, same, graph, NOW) == buildgraph.plan(manifest, copies, graph, NOW)
    future = sorted(rel for rel, e in manifest.items() if e.kind != DIR and e.mtime_ns > NOW)
    expected = f"'{future[0]}' has an mtime in the future" if future else None
    assert buildgraph.plan(manifest, same, graph, NOW) == (expected, set())
