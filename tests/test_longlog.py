"""The long-log rule: the tail, the saved file, and the folder's safety."""

from __future__ import annotations

import io
import os
import re
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssebench.difficulty import Check
from ssebench.server import longlog
from ssebench.server.logdir import LogDir
from ssebench.server.longlog import capture, tail_start


def reference_tail_start(data: bytes, max_lines: int, max_words: int) -> int:
    """The rule written the obvious way, on the whole log in memory."""
    body = data[:-1] if data.endswith(b"\n") else data
    newline_ends = [m.end() for m in re.finditer(rb"\n", body)]
    line_start = newline_ends[-max_lines] if len(newline_ends) >= max_lines else 0
    word_starts = [m.start() for m in re.finditer(rb"\S+", data)]
    word_start = word_starts[-max_words] if len(word_starts) >= max_words else 0
    return max(line_start, word_start)


pieces = st.lists(
    st.sampled_from([b"a", b"bb", b"w\xc3\xa9", b" ", b"  ", b"\n", b"\t", b"\r\n", b"x\n", b"\n\n"]),
    max_size=300,
).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(
    data=pieces,
    max_lines=st.integers(1, 12),
    max_words=st.integers(1, 30),
    block=st.integers(1, 17),
)
def test_tail_start_matches_reference(data: bytes, max_lines: int, max_words: int, block: int) -> None:
    got = tail_start(io.BytesIO(data), len(data), max_lines=max_lines, max_words=max_words, block=block)
    assert got == reference_tail_start(data, max_lines, max_words)


@settings(max_examples=100, deadline=None)
@given(data=pieces, cut=st.integers(0, 40))
def test_streaming_word_count(data: bytes, cut: int) -> None:
    chunks = [data[i : i + cut + 1] for i in range(0, len(data), cut + 1)]
    words, ends = 0, False
    for chunk in chunks:
        n, ends = longlog.count_words_upto(chunk, 10**9, ends)
        words += n
    assert words == len(data.split())


def _chunks(data: bytes, size: int = 7919):
    """A ``fill`` for :func:`capture`: feeds ``data`` in odd-sized chunks."""

    def fill(feed) -> None:
        for i in range(0, len(data), size):
            feed(data[i : i + size])

    return fill


@pytest.fixture
def log_dir(tmp_path: Path) -> LogDir:
    d = LogDir.prepare(tmp_path / "mcp" / "logs")
    assert d.problem is None
    yield d
    d.close()


def test_short_log_is_returned_whole_and_not_kept(log_dir: LogDir) -> None:
    data = b"word " * 9_999 + b"\n\nlast"
    section = capture(_chunks(data), log_dir, Check.BUILD)
    assert not section.truncated and section.text == data.decode()
    assert os.listdir(log_dir.path) == []


def test_long_log_is_saved_whole_with_its_tail(log_dir: LogDir) -> None:
    lines = [f"line {i} {'w ' * (i % 7)}".encode() for i in range(5000)]
    data = b"\n".join(lines) + b"\n"
    section = capture(_chunks(data), log_dir, Check.FUNCTIONAL)
    assert section.truncated and section.saved_path is not None
    saved = Path(section.saved_path)
    assert saved.parent == Path(log_dir.path)
    assert re.fullmatch(r"[0-9a-f-]{36}\.txt", saved.name)
    assert saved.read_bytes() == data
    assert stat.S_IMODE(saved.stat().st_mode) == 0o644
    assert section.text == b"\n".join(lines[-100:]).decode() + "\n"


def test_tail_is_words_when_lines_are_long(log_dir: LogDir) -> None:
    data = b"\n".join(b"x " * 1000 for _ in range(30))  # 30,000 words on 30 lines
    section = capture(_chunks(data), log_dir, Check.BUILD)
    assert len(section.text.split()) == 10_000
    assert section.text.startswith("x ")


def test_unusable_folder_gives_tail_without_file(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir()
    (tmp_path / "mcp").symlink_to(real)
    d = LogDir.prepare(tmp_path / "mcp" / "logs")
    assert d.fd is None and "symlink" in (d.problem or "")
    data = b"w " * 20_000
    section = capture(_chunks(data), d, Check.BUILD)
    assert section.truncated and section.saved_path is None
    assert len(section.text.split()) == 10_000
    assert list(real.iterdir()) == []


def test_folder_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to make a folder owned by another user")
    (tmp_path / "mcp").mkdir()
    os.chown(tmp_path / "mcp", 4242, 4242)
    d = LogDir.prepare(tmp_path / "mcp" / "logs")
    assert d.fd is None and "owned by uid 4242" in (d.problem or "")
    assert not (tmp_path / "mcp" / "logs").exists()


def test_final_folder_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "target").mkdir()
    (tmp_path / "logs").symlink_to(tmp_path / "target")
    d = LogDir.prepare(tmp_path / "logs")
    assert d.fd is None


def test_group_writable_ancestor_without_sticky_is_refused(tmp_path: Path) -> None:
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o777)
    assert LogDir.prepare(tmp_path / "open" / "logs").fd is None
    os.chmod(tmp_path / "open", 0o1777)
    ok = LogDir.prepare(tmp_path / "open" / "logs")
    assert ok.fd is not None
    assert stat.S_IMODE((tmp_path / "open" / "logs").stat().st_mode) == 0o755
    ok.close()


def test_created_folders_let_the_agent_reach_the_files(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        d = LogDir.prepare(tmp_path / "mcp" / "logs")
    finally:
        os.umask(old)
    assert d.fd is not None
    d.close()
    assert stat.S_IMODE((tmp_path / "mcp").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "mcp" / "logs").stat().st_mode) == 0o755


def test_env_var_names_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_LOG_DIR", str(tmp_path / "x"))
    d = LogDir.prepare()
    assert d.path == str(tmp_path / "x") and d.fd is not None
    d.close()


def test_a_failing_download_leaves_no_file(log_dir: LogDir) -> None:
    def fill(feed) -> None:
        feed(b"w " * 20_000)
        raise OSError("the daemon went away")

    with pytest.raises(OSError):
        capture(fill, log_dir, Check.BUILD)
    assert os.listdir(log_dir.path) == []
