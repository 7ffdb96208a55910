"""The strace side of the build engine: how a build is traced (the command, the probe).

Why apart from :mod:`ssebench.daemon.buildgraph`: what strace runs and how its trace
reaches the daemon (never the build) is kept in one place. The trace is parsed by
:mod:`ssebench.daemon.traceparse` (re-exported here: ``tracefile.parse_trace``,
``tracefile.TraceRecord``); the graph and its rules (plan, verify) live in buildgraph.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from ssebench.daemon.traceparse import Step, TraceParser, TraceRecord, normalise_key, parse_trace

# The syscalls the record needs: process tree, programs, opened files, working folders.
SYSCALLS = "execve,execveat,open,openat,openat2,creat,clone,clone3,fork,vfork,chdir,fchdir"
# Every string in hex (-xx), fds with their paths (-y): nothing in the text the build
# controls can look like structure (quotes, brackets, ' = ').
STRACE_FLAGS = (
    "-f",
    "-q",
    "-z",
    "--seccomp-bpf",
    "-y",
    "-xx",
    "-s",
    "4096",
    "-e",
    "signal=none",
    "-e",
    f"trace={SYSCALLS}",
)


# -- is tracing possible here? -----------------------------------------------------------------


def find_strace() -> str | None:
    return shutil.which("strace")


# Why a supervisor: ``strace -f`` ends with its last tracee, so a build leaving a process
# behind (``sleep 300 &``, a compiler server) would hold the check until that ends, where
# an untraced one ends with its shell (its pid namespace takes the rest). So the traced
# root reports its status through a pipe the build cannot see; the supervisor kills what
# strace still traces (by TracerPid: nothing else, sandbox or not) while strace records
# it, and exits with the build's status. Stderr is /dev/null: no bash "Killed" notes.
_SUPERVISOR = """exec {out}>&2 2>/dev/null
coproc {{ IFS= read -r rc && printf '%s\\n' "$rc"; }}
exec {done}>/proc/self/fd/"${{COPROC[1]}}"
"$@" 2>&{out} {out}>&- &
tracer=$!
exec {{ended}}</proc/self/fd/"${{COPROC[0]}}"
eval "exec {done}>&- {fd}>&- {out}>&- ${{COPROC[1]}}>&-"
if IFS= read -r rc <&"$ended"; then
  while left=$(grep -l "^TracerPid:[[:space:]]*$tracer\\$" /proc/[0-9]*/status); [ -n "$left" ]; do
    for p in $left; do p=${{p#/proc/}}; kill -KILL "${{p%/status}}"; done
  done
  wait "$tracer"; exit "$rc"
fi
wait "$tracer"
"""
# The traced root: the build without the trace fd or the pipe, then its status.
_ROOT = 'exec {fd}>&- {out}>&2 2>/dev/null; "$@" 2>&{out} {out}>&- {done}>&-; rc=$?; echo "$rc" >&{done}; exit "$rc"'


def command(strace: str, argv: list[str], fd: int) -> list[str]:
    """*argv* under strace writing to the daemon's fd *fd* (strace reopens it, close-on-exec);
    the build itself runs with *fd* closed, so it can neither read nor forge its trace.
    The check ends when *argv* does, with its status, as an untraced one would."""
    # The supervisor's own two fds: below 10, which bash keeps for its scripts (it saves
    # and moves fds at 10 and above itself), and not the trace's.
    done, out = [n for n in range(3, 10) if n != fd][:2]
    return [
        "bash",
        "-c",
        _SUPERVISOR.format(fd=fd, done=done, out=out),
        "ssebench-trace",
        strace,
        *STRACE_FLAGS,
        "-o",
        f"/proc/self/fd/{fd}",
        "--",
        "bash",
        "-c",
        _ROOT.format(fd=fd, done=done, out=out),
        "bash",
        *argv,
    ]


def probe(
    run: Callable[[list[str], tuple[int, ...]], subprocess.CompletedProcess[str]],
    workdir: Path,
    owner: tuple[int, int] | None = None,
) -> tuple[str | None, str]:
    """(strace path or None, what /health shows): a real traced ``true``, run the way
    builds run (*run*: argv and the fds it inherits, through the sandbox, as the checks'
    uid *owner*, who must be able to reopen the trace file). Blocking; once per daemon."""
    strace = find_strace()
    if strace is None:
        return None, "off: no strace, every build is clean"
    trace = workdir / f".trace-probe-{os.getpid()}"
    ok, why = False, ""
    try:
        fd = os.open(trace, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            if owner is not None:
                os.fchown(fd, *owner)
            done = run(command(strace, ["true"], fd), (fd,))
        finally:
            os.close(fd)
        record = parse_trace(trace, "/", "/")
        ok = done.returncode == 0 and record.complete and bool(record.steps)
        why = (done.stderr.strip().splitlines() or [record.problem or f"exit {done.returncode}"])[-1]
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = str(exc)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(trace)
    if not ok:
        return None, f"off: strace cannot trace here ({why}), every build is clean"
    return strace, f"strace {_version(strace)}"


def _version(strace: str) -> str:
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        out = subprocess.run([strace, "-V"], capture_output=True, text=True, timeout=10).stdout.split()
        if len(out) >= 4:
            return out[3]
    return "?"


__all__ = ["TraceRecord", "Step", "TraceParser", "command", "find_strace", "normalise_key", "parse_trace", "probe"]
