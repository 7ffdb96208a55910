"""A blob's name as a source entry keeps it in memory (blobs.in_memory): the file name
comes back exactly, and a name that is no digest is kept as it is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ssebench.daemon import blobs

DIGESTS = st.binary(min_size=32, max_size=32).map(bytes.hex)


@given(st.one_of(DIGESTS, DIGESTS.map("s".__add__), st.text(max_size=70)))
def test_the_name_comes_back_exactly(name: str) -> None:
    kept = blobs.in_memory(name)
    assert blobs.name_of(kept) == name
    if isinstance(kept, bytes):
        assert len(kept) in (32, 33)
    else:
        assert kept == name


def test_a_digest_is_kept_as_its_32_bytes() -> None:
    name = "ab" * 32
    assert blobs.in_memory(name) == bytes.fromhex(name)
    assert blobs.in_memory("s" + name) == b"s" + bytes.fromhex(name)
