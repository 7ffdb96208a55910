"""``ssebench dialog show``: the exact text a user sees, and ``--follow`` on a live file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SESSION = Path(__file__).parent / "fixtures" / "dialog" / "session.jsonl"
ENV = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"}

LOG_LINES = [f"name.c:{i}: error: expected ';'" for i in range(1, 46)]
PAD = " " * 20


def show(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from ssebench.cli import main; main()", "dialog", "show", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
    )


def expected(log_lines: list[str], tail: str) -> str:
    return (
        "\n".join(
            [
                "03:45:11 ● init     claude (model claude-opus-5-5, session 3b1efa67, 2 tools)",
                "03:45:12 ▶ prompt   Fix the stack overflow in parse_name.",
                PAD + "Use the test_patch tool to check your patch.",
                "03:45:13 … thinking The buffer is 16 bytes; the copy is unbounded.",
                '03:45:14 ⚙ tool     Edit running [toolu_01] {"file": "name.c"}',
                "03:45:15 ✗ tool     Edit error [toolu_01]",
                PAD + "File has not been read yet.",
                "03:45:16 ⚙ tool     mcp__ssebench__test_patch running [toolu_02]",
                "03:45:17 ✓ tool     mcp__ssebench__test_patch success [toolu_02]",
                PAD
                + "test_patch result: FAILED. The project failed to build. Please reassess the correctness of your patch.",
                "",
                PAD + "Checks:",
                PAD + "- build: FAILED",
                PAD + "- functional tests: not run (the build failed)",
                "",
                PAD + "Full log (build):",
                *[PAD + line for line in log_lines],
                *([tail] if tail else []),
                "03:45:18 ◆ message  The build fails; I stop here.",
                "03:45:19 ■ complete error · 3 turns · 12.2 s · tokens 5120 in, 210 out, 64 cached · exit 1",
                PAD + "max turns reached",
            ]
        )
        + "\n"
    )


def test_show_renders_each_event_and_cuts_long_bodies():
    result = show(str(SESSION))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    # the tool output has 52 lines: 40 are shown, then a note
    assert result.stdout == expected(LOG_LINES[:33], PAD + "… 12 more lines (--full shows all)")


def test_show_full_shows_everything():
    result = show("--full", str(SESSION))
    assert result.returncode == 0
    assert result.stdout == expected(LOG_LINES, "")


def test_bad_lines_are_named_and_make_the_status_1(tmp_path: Path):
    path = tmp_path / "dialog.jsonl"
    lines = SESSION.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{broken", '["a list"]', lines[7]]) + "\n")
    result = show(str(path))
    assert result.returncode == 1
    assert result.stdout == (
        "03:45:11 ● init     claude (model claude-opus-5-5, session 3b1efa67, 2 tools)\n"
        "03:45:18 ◆ message  The build fails; I stop here.\n"
    )
    assert result.stderr == (f"{path}:2: not a dialog event, skipped\n{path}:3: not a dialog event, skipped\n")


def test_missing_file(tmp_path: Path):
    result = show(str(tmp_path / "nope.jsonl"))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"ssebench dialog show: {tmp_path / 'nope.jsonl'}: no such file\n"


def test_follow_shows_lines_as_they_arrive_and_stops_at_complete(tmp_path: Path):
    path = tmp_path / "dialog.jsonl"  # does not exist yet: --follow waits for it
    lines = SESSION.read_text().splitlines(keepends=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from ssebench.cli import main; main()", "dialog", "show", "--follow", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        time.sleep(0.5)
        with path.open("w") as out:
            out.write(lines[0])
            out.flush()
            assert proc.stdout.readline() == (
                "03:45:11 ● init     claude (model claude-opus-5-5, session 3b1efa67, 2 tools)\n"
            )
            # half a line is held back until its end arrives
            out.write(lines[7][:20])
            out.flush()
            time.sleep(0.6)
            out.write(lines[7][20:])
            out.flush()
            assert proc.stdout.readline() == "03:45:18 ◆ message  The build fails; I stop here.\n"
            assert proc.poll() is None  # still following: no complete line yet
            out.write(lines[8])
            out.flush()
        assert proc.wait(timeout=10) == 0
        assert proc.stdout.read() == (
            "03:45:19 ■ complete error · 3 turns · 12.2 s · tokens 5120 in, 210 out, "
            "64 cached · exit 1\n" + PAD + "max turns reached\n"
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "opencode"])
def test_show_reads_what_the_converters_write(tmp_path: Path, agent: str):
    """The converted real streams render: headline per event, the tool result indented."""
    from ssebench.dialog.convert import DialogPipeline, load_converter
    from ssebench.dialog.writer import DialogWriter

    path = tmp_path / "dialog.jsonl"
    writer = DialogWriter.create(path)
    pipeline = DialogPipeline(writer, load_converter(agent), prompt="Fix the bug. Use test_patch.")
    with (Path(__file__).parent / "fixtures" / "streams" / f"{agent}.jsonl").open() as stream:
        pipeline.feed_stream(stream)
    pipeline.close(exit_code=0)
    writer.close()
    out = show(str(path)).stdout.splitlines()
    kinds = [line[11:20].strip() for line in out if not line.startswith(PAD) and line]
    assert kinds == ["init", "prompt", "tool", "tool", "message", "complete"]
    assert PAD + "test_patch result: every check that ran passed." in out
    assert json.loads(path.read_text().splitlines()[-1])["status"] == "success"
