"""The build engine's trace (tracefile.py): real strace, hostile names, broken lines, and
a build that can neither see nor write its own trace."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from ssebench.daemon import tracefile
from ssebench.difficulty import Check
from tests.test_incremental import Engine, mode  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(120)
STRACE = tracefile.find_strace()
needs_strace = pytest.mark.skipif(STRACE is None, reason="no strace here")


def _trace(tmp_path: Path, script: str, **env: str) -> tracefile.TraceRecord:
    assert STRACE is not None
    trace = tmp_path / "trace"
    with open(trace, "wb") as f:
        subprocess.run(
            tracefile.command(STRACE, ["bash", "-c", script], f.fileno()),
            cwd=tmp_path,
            pass_fds=(f.fileno(),),
            check=True,
            capture_output=True,
            env={**os.environ, **env},
        )
    return tracefile.parse_trace(trace, str(tmp_path), str(tmp_path))


@needs_strace
def test_hostile_file_names_are_read_as_they_are(tmp_path):
    name = 'a"b> = 3<\\x41>\n) = 0.c'
    (tmp_path / name).write_text("x")
    (tmp_path / "link").symlink_to(name)
    record = _trace(tmp_path, 'cat link > out; cat "$NAME" >/dev/null', NAME=name)
    assert record.complete, record.problem
    cats = [s for s in record.steps.values() if s.program == "cat"]
    assert {r for s in cats for r in s.reads} == {name}  # the link counts as its target
    shell = next(
        s
        for s in record.steps.values()
        if s.key.split("\0")[1:4] == ["bash", "-c", 'cat link > out; cat "$NAME" >/dev/null']
    )
    assert shell.writes == {"out"} and shell.orchestrator


@needs_strace
def test_a_step_is_keyed_by_argv_and_cwd_with_temp_names_blanked(tmp_path):
    (tmp_path / "sub").mkdir()
    record = _trace(tmp_path, "cd sub && cat /tmp/ccA1b2C3.s 2>/dev/null; true")
    keys = [k.split("\0") for k in record.steps]
    assert [f"{tmp_path}/sub", "cat", "/tmp/*"] in keys


def test_a_line_that_does_not_parse_makes_the_record_incomplete(tmp_path):
    trace = tmp_path / "trace"
    trace.write_bytes(b'12 execve("\\x2f\\x62", ["\\x62"], 0x1 /* 1 vars */) = 0\n12 openat(AT_FDCWD, "x" = 3\n')
    record = tracefile.parse_trace(trace, "/t", "/t")
    assert not record.complete and record.problem == "trace line 2: unreadable call"
    trace.write_bytes(b"\xff\xfe\n")
    assert tracefile.parse_trace(trace, "/t", "/t").problem == "trace line 1: not ASCII"
    trace.write_bytes(b"")
    assert tracefile.parse_trace(trace, "/t", "/t").problem == "trace line 0: empty trace"


def test_calls_split_across_lines_are_joined(tmp_path):
    # strace -f prints "<unfinished ...>" when another process runs in between, then either
    # "<... openat resumed>" or (with -z) the rest on a line of its own, without a pid.
    hexed = "".join(f"\\x{b:02x}" for b in b"/t/a.c")
    tree = "".join(f"\\x{b:02x}" for b in b"/t")
    trace = tmp_path / "trace"
    trace.write_text(
        f'7 execve("{tree}", ["{tree}"], 0x1 /* 1 vars */) = 0\n'
        f'7 openat(AT_FDCWD<{tree}>, "{hexed}", O_RDONLY <unfinished ...>\n'
        f"8 +++ exited with 0 +++\n"
        f"7 <... openat resumed>) = 3<{hexed}>\n"
        f'7 openat(AT_FDCWD<{tree}>, "{hexed}", O_WRONLY|O_CREAT <unfinished ...>\n'
        f")                = 4<{hexed}>\n"
    )
    record = tracefile.parse_trace(trace, "/t", "/t")
    assert record.complete, record.problem
    (step,) = record.steps.values()
    assert step.reads == {"a.c"} and step.writes == {"a.c"}


@needs_strace
def test_the_build_cannot_see_or_write_its_trace(tmp_path, mode):  # noqa: F811
    # Every fd of the build beyond stdin/out/err is listed; none is the trace file.
    e = Engine(tmp_path, mode, build='for f in /proc/self/fd/*; do readlink "$f"; done; ls /proc/$$/fd')
    result = e.run([Check.BUILD])
    assert result["build"][0] == "passed"
    assert "trace" not in result["build"][1]
    assert e.runner.tracing.startswith("strace ")


def _sleepers(mark: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", mark], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


@needs_strace
@pytest.mark.parametrize("status", [0, 3])
def test_a_build_that_leaves_processes_behind_ends_with_its_shell(tmp_path, mode, status):  # noqa: F811
    # strace -f waits for its last tracee; the check must end when the build's shell does,
    # with its status and output, as an untraced build (whose sandbox takes the rest) does.
    mark = f"30{os.getpid() % 100:02d}.{status}"
    build = f"sleep {mark} & setsid sleep {mark} & (setsid sh -c 'sleep {mark}' &); echo built; exit {status}"
    e = Engine(tmp_path, mode, build=build)
    start = time.monotonic()
    state, log = e.run([Check.BUILD])["build"]
    assert time.monotonic() - start < 60
    assert (state, log.splitlines()[0]) == ("passed" if status == 0 else "failed", "built")
    assert e.runner.tracing.startswith("strace ")
    assert _sleepers(f"sleep {mark}") == []


@needs_strace
def test_the_trace_records_the_build_up_to_its_end_and_the_status_is_the_builds(tmp_path):
    assert STRACE is not None
    trace = tmp_path / "trace"
    script = "sleep 3033 & touch made; cat made; exit 4"
    with open(trace, "wb") as f:
        done = subprocess.run(
            tracefile.command(STRACE, ["bash", "-c", script], f.fileno()),
            cwd=tmp_path,
            pass_fds=(f.fileno(),),
            capture_output=True,
            timeout=60,
        )
    assert (done.returncode, done.stdout, done.stderr) == (4, b"", b"")
    record = tracefile.parse_trace(trace, str(tmp_path), str(tmp_path))
    assert record.complete, record.problem
    assert any("made" in step.writes for step in record.steps.values())
    assert _sleepers("sleep 3033") == []


@needs_strace
def test_a_build_that_runs_leaksanitizer_is_redone_untraced(tmp_path, mode):  # noqa: F811
    # LeakSanitizer refuses to run under ptrace; an untraced build (grade's) passes.
    e = Engine(
        tmp_path,
        mode,
        build="cc -fsanitize=address -o ok ok.c && ./ok && echo ran",
        tree_files={"ok.c": "int main(void) { return 0; }\n"},
    )
    assert e.run([Check.BUILD])["build"] == ("passed", "ran\n\n")
    assert e.runner.last_build == "clean: a program of the build cannot run under strace"


def _hx(text: str) -> str:
    return "".join(f"\\x{b:02x}" for b in text.encode())


def _exec(pid: int, *argv: str) -> str:
    words = ", ".join(f'"{_hx(a)}"' for a in argv)
    return f'{pid} execve("{_hx("/usr/bin/" + argv[0])}", [{words}], 0x1 /* 1 vars */) = 0'


def _open(pid: int, cwd: str, rel: str, flags: str) -> str:
    return f'{pid} openat(AT_FDCWD<{_hx(cwd)}>, "{_hx(rel)}", {flags}) = 3<{_hx(cwd + "/" + rel)}>'


VFORK = "clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, stack=0x7f, stack_size=0x9000}, 88"


def _record(tmp_path: Path, lines: list[str]) -> tracefile.TraceRecord:
    trace = tmp_path / "trace"
    trace.write_text("".join(line + "\n" for line in lines))
    return tracefile.parse_trace(trace, "/t", "/t")


def test_a_child_that_runs_before_its_fork_returns_is_keyed_in_its_parents_folder(tmp_path):
    # strace prints a (v)forked child's execve before its parent's fork returns whenever the
    # child runs first. Keyed at once, the child had the first process's folder: on zstd one
    # compile (make -C lib) became a different step from one build to the next, and the
    # check after an incremental build saw "a step that read X did not run again".
    record = _record(
        tmp_path,
        [
            _exec(10, "make"),
            f'10 chdir("{_hx("/t/lib")}") = 0',
            f"10 {VFORK} <unfinished ...>",
            _exec(11, "cc", "-c", "a.c"),  # before its fork returned in make
            f"11 {VFORK} <unfinished ...>",
            _exec(12, "as", "-o", "a.o"),  # its child, before that fork returned too
            _open(12, "/t/lib", "a.o", "O_WRONLY|O_CREAT|O_TRUNC"),
            "12 +++ exited with 0 +++",
            "11 <... clone3 resumed>) = 12",
            _open(11, "/t/lib", "a.c", "O_RDONLY"),
            "11 +++ exited with 0 +++",
            "10 <... clone3 resumed>) = 11",
            "10 clone(child_stack=0x7f, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_THREAD, tls=0x1) = 13",
            _exec(11, "ar", "rcs", "liba.a", "a.o"),  # pid 11 again: a new child, its fork still to come
            "10 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x1) = 11",
            _open(13, "/t/lib", "a.d", "O_RDONLY"),  # a thread: the same process, make
        ],
    )
    assert record.complete, record.problem
    make, cc, as_, ar = (
        "\0".join(["/t", "make"]),
        "/t/lib\0cc\0-c\0a.c",
        "/t/lib\0as\0-o\0a.o",
        "/t/lib\0ar\0rcs\0liba.a\0a.o",
    )
    assert sorted(record.steps) == sorted([make, cc, as_, ar])
    assert record.steps[cc].reads == {"lib/a.c"} and record.steps[cc].parents == {make}
    assert record.steps[as_].writes == {"lib/a.o"} and record.steps[as_].parents == {cc}
    assert record.steps[ar].parents == {make}
    assert record.steps[make].orchestrator and record.steps[cc].orchestrator
    assert record.steps[make].reads == {"lib/a.d"}


def test_a_process_whose_fork_never_returned_makes_the_record_incomplete(tmp_path):
    # Its folder and parent are unknown, so would its step's key be: no guess.
    record = _record(tmp_path, [_exec(10, "make"), f"10 {VFORK} <unfinished ...>", _exec(11, "cc", "a.c")])
    assert not record.complete and record.problem == "trace line 3: a process whose fork never returned in its parent"
    # One that only exited did nothing to key.
    record = _record(tmp_path, [_exec(10, "make"), "11 +++ exited with 0 +++"])
    assert record.complete, record.problem
