"""The container layers' caches are filled once (engine.fill_cache): a failed fill leaves
nothing behind, a reader never sees a half-filled folder, the first run to finish wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssebench.container.engine import DockerRunError, fill_cache


def test_a_filled_cache_appears_whole(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "agent-1.0"

    def fill(staging: Path) -> None:
        assert not target.exists()  # nobody sees it before it is whole
        (staging / "a").write_text("a\n")

    assert fill_cache(target, "agent-", fill) == target
    assert sorted(p.name for p in target.parent.iterdir()) == ["agent-1.0"]
    assert (target / "a").read_text() == "a\n"


def test_a_failed_fill_leaves_nothing_and_says_why(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "agent-1.0"

    def fill(staging: Path) -> None:
        (staging / "half").write_text("half\n")
        raise DockerRunError("npm install x@1.0 failed (exit 1)")

    with pytest.raises(DockerRunError, match=r"^npm install x@1\.0 failed \(exit 1\)$"):
        fill_cache(target, "agent-", fill)
    assert list(target.parent.iterdir()) == []


def test_the_run_that_filled_it_first_wins(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "agent-1.0"

    def fill(staging: Path) -> None:
        (staging / "mine").write_text("late\n")
        target.mkdir()  # another run finished meanwhile
        (target / "theirs").write_text("first\n")

    assert fill_cache(target, "agent-", fill) == target
    assert sorted(p.name for p in target.iterdir()) == ["theirs"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["agent-1.0"]
