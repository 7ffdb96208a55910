"""ssebench.supervise with real processes: the tail of a log, the one wait, the one stop."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from ssebench.supervise import StartupError, exited, popen, spawn, stop, tail_lines, wait_until


def test_tail_reads_only_the_end_and_drops_the_cut_line(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"".join(b"line %d\n" % n for n in range(10000)))
    assert tail_lines(log, 2) == ["line 9998", "line 9999"]
    window = tail_lines(log, None, max_bytes=25)  # "ne 9997\nline 9998\nline 9999\n": the cut line goes
    assert window == ["line 9998", "line 9999"]
    assert tail_lines(tmp_path / "missing") == []
    (tmp_path / "empty").write_bytes(b"")
    assert tail_lines(tmp_path / "empty") == []


def test_a_child_that_dies_while_we_wait_is_reported_at_once_with_its_last_lines(tmp_path: Path) -> None:
    child = spawn(
        "server",
        [sys.executable, "-c", "import sys; print('bad flag'); sys.exit(3)"],
        env={},
        log=tmp_path / "server.log",
    )
    started = time.monotonic()
    with pytest.raises(StartupError) as error:
        wait_until(lambda: None, what="the server", timeout=30, gone=exited(child.proc), tail=child.tail)
    assert time.monotonic() - started < 10
    assert str(error.value) == (
        "the server exited with status 3 before it was ready\nLast lines of its log:\n  bad flag"
    )


def test_a_silent_child_times_out_and_stop_ends_its_whole_group() -> None:
    proc = popen([sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', '60']); time.sleep(60)"])
    try:
        with pytest.raises(StartupError, match=r"^the daemon did not answer on x\.sock within 0 s$"):
            wait_until(lambda: False, what="the daemon", where="on x.sock", timeout=0.2, gone=exited(proc))
    finally:
        assert stop(proc, grace=5) == -15
