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


def _plan_by_the_union(old: dict[str, SourceEntry], new: dict[str, SourceEntry]) -> tuple[str | None, set[str]]:
    """The comparison as it was written before it stopped building a set of all paths:
    every path of both, in order; the first that was added, removed or changed kind,
    mode or link target decides (graph rules left out: an empty graph has none)."""
    changed: set[str] = set()
    for rel in sorted(set(old) | set(new)):
        a, b = old.get(rel), new.get(rel)
        if a is None or b is None:
            return f"'{rel}' was {'added' if a is None else 'removed'}", changed
        if a.kind != b.kind or a.mode != b.mode:
            return f"'{rel}' changed kind or mode", changed
        if b.kind == LINK and a.data != b.data:
            return f"symlink '{rel}' changed", changed
        if b.kind != DIR and b.mtime_ns > NOW:
            return f"'{rel}' has an mtime in the future", changed
        if b.kind == FILE and (a.data != b.data or a.mtime_ns != b.mtime_ns):
            changed.add(rel)
    return None, changed


MANIFESTS = st.dictionaries(st.sampled_from([f"p{i}" for i in range(12)]), entries)


@given(MANIFESTS, MANIFESTS)
def test_added_removed_and_changed_paths_decide_as_a_comparison_of_all_paths(old, new) -> None:
    why, changed = buildgraph.plan(old, new, buildgraph.Graph(), NOW)
    want_why, want_changed = _plan_by_the_union(old, new)
    assert changed == want_changed
    if want_why is not None or not changed:  # else only the order rule may object
        assert why == want_why
