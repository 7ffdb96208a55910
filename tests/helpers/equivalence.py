"""The equivalence driver (issue 17): one long-lived Runner vs a fresh one, edit after edit.

A small multi-file C project (automatic header dependencies with -MMD, a generated header
made by a rule from an input, a plain header with no dependency, a Makefile; and zstd's
library build in small, issue 34: a sub-make in lib/ compiling each source twice, static
and -fPIC shared, with -MMD -MP -MF .d files it includes, an ar archive and a shared
library, one program linked against each) in a git work tree is edited by a seeded random agent; after each edit a call runs on the
long-lived Runner (one daemon's state) and on a fresh Runner (an empty workspace) on the
same tree, and the two results must be equal: every check's state, and the log of every
failed check, word for word, except make's "modification time N s in the future" (a
number that differs between two runs of the same build a moment apart).

Used by tests/test_equivalence.py (a fixed seed, a bounded number of steps) and by
benchmarks/bench_equivalence.py (the long run).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ssebench.daemon import sandbox as sb
from ssebench.daemon import sandbox_setup
from ssebench.daemon.runner import Runner
from ssebench.difficulty import Check
from ssebench.task import load_task
from tests.helpers.tasks import make_task

MAKEFILE = """\
CFLAGS = -O0
OBJS = main.o util.o calc.o
all: prog qstat qdyn
prog: $(OBJS)
\t$(CC) -o $@ $(OBJS)
main.o util.o: %.o: %.c
\t$(CC) $(CFLAGS) -MMD -MP -I. -c $< -o $@
calc.o: calc.c
\t$(CC) $(CFLAGS) -I. -c calc.c -o calc.o
gen.h: gen.def gen.sh
\t./gen.sh gen.def > gen.h
main.o: gen.h
-include main.d util.d qmain.d
qmain.o: qmain.c
\t$(CC) $(CFLAGS) -MMD -MP -Ilib -c qmain.c -o qmain.o
qstat: qmain.o lib/libq.a
\t$(CC) -o $@ qmain.o lib/libq.a
qdyn: qmain.o lib/libq.so
\t$(CC) -o $@ qmain.o -Llib -lq -Wl,-rpath,'$$ORIGIN/lib'
.PHONY: libq
libq:
\t$(MAKE) --no-print-directory -C lib CFLAGS="$(CFLAGS)"
lib/libq.a lib/libq.so: libq ;
clean:
\trm -f prog qstat qdyn qmain.o $(OBJS) *.d gen.h
\t$(MAKE) --no-print-directory -C lib clean
"""
# zstd's lib/Makefile in small (issue 34): a sub-make in its own folder compiles each
# source twice, static and -fPIC shared (other flags, other objects), each with its
# -MMD -MP -MF .d file that the Makefile includes, into an ar archive and a shared
# library; the top Makefile links one program against each.
LIB_MAKEFILE = """\
CFLAGS ?= -O0
SRCS = q.c qx.c
STATIC = $(SRCS:%.c=obj/static/%.o)
DYNAMIC = $(SRCS:%.c=obj/dynamic/%.o)
all: libq.a libq.so
obj/static/%.o: %.c
\t@mkdir -p obj/static
\t$(CC) $(CFLAGS) -c -MT $@ -MMD -MP -MF $(@:.o=.d) -o $@ $<
obj/dynamic/%.o: %.c
\t@mkdir -p obj/dynamic
\t$(CC) $(CFLAGS) -fPIC -DQ_SHARED -c -MT $@ -MMD -MP -MF $(@:.o=.d) -o $@ $<
libq.a: $(STATIC)
\tar rcs $@ $^
libq.so: $(DYNAMIC)
\t$(CC) -shared -o $@ $^
-include $(STATIC:.o=.d) $(DYNAMIC:.o=.d)
clean:
\trm -rf obj libq.a libq.so
"""
Q_H = "#define Q_BASE 7\nint q(void);\nint qx(void);\n"
Q_C = '#include "q.h"\n#ifdef Q_SHARED\n#define Q_KIND 1000\n#else\n#define Q_KIND 0\n#endif\nint q(void) { return Q_KIND + Q_BASE + 3; }\n'
QX_C = '#include "q.h"\nint qx(void) { return Q_BASE * 2; }\n'
QMAIN_C = '#include <stdio.h>\n#include "q.h"\nint main(void) { printf("q=%d qx=%d\\n", q(), qx()); return 0; }\n'
MAIN_C = """\
#include <stdio.h>
#include <string.h>
#include "util.h"
#include "gen.h"
int calc(void);
int main(int argc, char **argv) {
    printf("util=%d gen=%d calc=%d\\n", util(), GEN_VALUE, calc());
#ifdef FIX
    if (argc > 1 && strcmp(argv[1], "poc") == 0) return 0;
#endif
    return argc > 1 ? 1 : 0;
}
"""
UTIL_H = "#define UTIL_BASE 10\nint util(void);\n"
UTIL_C = '#include "util.h"\nint util(void) { return UTIL_BASE + 1; }\n'
ALT_C = '#include "util.h"\nint util(void) { return UTIL_BASE + 100; }\n'
PLAIN_H = "#define PLAIN 5\n"
CALC_C = '#include "plain.h"\nint calc(void) { return PLAIN * 2; }\n'
GEN_SH = '#!/bin/sh\necho "#define GEN_VALUE $(cat "$1")"\n'
FILES = {
    "Makefile": MAKEFILE,
    "main.c": MAIN_C,
    "util.h": UTIL_H,
    "util.c": UTIL_C,
    "alt/util_alt.c": ALT_C,
    "plain.h": PLAIN_H,
    "calc.c": CALC_C,
    "gen.def": "42\n",
    "gen.sh": GEN_SH,
    "notes.txt": "notes\n",
    "qmain.c": QMAIN_C,
    "lib/Makefile": LIB_MAKEFILE,
    "lib/q.h": Q_H,
    "lib/q.c": Q_C,
    "lib/qx.c": QX_C,
}
LIB_SOURCES = ("lib/q.h", "lib/q.c", "lib/qx.c")
CHECKS = [Check.BUILD, Check.POCS, Check.FUNCTIONAL]
_FUTURE = re.compile(r"modification time [-+0-9.e]+ s in the future")
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@a",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@a",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

Result = dict[str, tuple[str, str]]


def normalise(text: str) -> str:
    return _FUTURE.sub("modification time N s in the future", text)


def sandbox(mode: str) -> sb.Sandbox:
    if mode == "off":
        return sb.Sandbox(None)
    try:
        return sandbox_setup.detect()
    except sb.SandboxUnavailable:
        return sb.Sandbox(None)


def _sh(argv: list[str], cwd: Path) -> None:
    subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **_GIT_ENV},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


@dataclass
class Driver:
    """The agent's tree, the long-lived Runner, and the edits a random agent makes."""

    root: Path
    seed: int
    mode: str = "sandbox"
    rng: random.Random = field(init=False)
    log: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    steps: int = 0
    # Per step: (the edit's name, did the call before it build?, the engine's decision).
    edits: list[tuple[str, bool, str]] = field(default_factory=list)
    _built: bool = False

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.box = sandbox(self.mode)
        self.files = make_task(
            self.root / "task",
            build="make",
            functional="./prog; ./qstat; ./qdyn; exit 3",
            pocs=["x"],
            poc_run="./prog poc",
            tree_files=FILES,
        )
        self.tree = self.files.tree
        os.chmod(self.tree / "gen.sh", 0o755)
        self.backup = self.root / "backup"  # old versions with old mtimes, for cp -p
        shutil.copytree(self.tree, self.backup, symlinks=True)
        old = time.time() - 5000
        for p in self.backup.rglob("*"):
            os.utime(p, (old, old), follow_symlinks=False)
        for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "start"]):
            _sh(argv, self.tree)
        self.task = load_task(self.files.file)
        self.runner = self._runner("long")
        self._fresh = 0

    def _runner(self, name: str) -> Runner:
        ws = self.root / f"ws-{name}"
        ws.mkdir()
        return Runner(self.task, self.tree, ws, heartbeat=3600, sandbox=self.box)

    # -- calls ----------------------------------------------------------------------------------

    def call(self, runner: Runner, during: Callable[[], None] | None = None) -> Result:
        async def go() -> Result:
            run = await runner.prepare()
            if during is not None:
                during()  # the agent edits while the call runs: the call tests the tree as it was
            async for _ in runner.execute(run, CHECKS):
                pass
            out: Result = {}
            for check, result in run.results.items():
                text = result.log.read_text() if result.log and result.state == "failed" else ""
                out[check.value] = (result.state, normalise(text))
            return out

        return asyncio.run(go())

    def fresh_call(self, tree: Path) -> Result:
        self._fresh += 1
        ws = self.root / f"ws-fresh-{self._fresh}"
        ws.mkdir()
        runner = Runner(self.task, tree, ws, heartbeat=3600, sandbox=self.box)
        try:
            return self.call(runner)
        finally:
            shutil.rmtree(ws, ignore_errors=True)

    def step(self) -> None:
        """One random edit (or an edit during the call), a call on each Runner, compared."""
        self.steps += 1
        edit = self.rng.choice(EDITS)
        if edit is edit_while_running:
            name, action = self._pick_edit()
            seen = self.root / f"seen-{self.steps}"
            ours = self.call(self.runner, during=lambda: (_copy_tree(self.tree, seen), action(self)))
            what, name = f"during the call: {name}", f"during the call: {name}"
            fresh = self.fresh_call(seen)
            shutil.rmtree(seen, ignore_errors=True)
        else:
            name, what = edit.__name__, edit(self)
            ours = self.call(self.runner)
            fresh = self.fresh_call(self.tree)
        self.log.append(f"{self.steps}: {what} -> {self.runner.last_build}")
        self.edits.append((name, self._built, self.runner.last_build))
        self._built = ours.get(Check.BUILD.value, ("", ""))[0] == "passed"
        if ours != fresh:
            self.mismatches.append(
                f"step {self.steps} ({what}; {self.runner.last_build}):\n  long-lived: {ours}\n  fresh:      {fresh}"
            )

    def _pick_edit(self) -> tuple[str, Callable[[Driver], str]]:
        edit = self.rng.choice([e for e in EDITS if e is not edit_while_running])
        return edit.__name__, edit

    # -- helpers for edits ----------------------------------------------------------------------

    def write(self, rel: str, text: str) -> None:
        path = self.tree / rel
        if path.is_symlink():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def pick(self, *rels: str) -> str:
        return self.rng.choice(
            [r for r in rels if (self.tree / r).exists() or (self.tree / r).is_symlink()] or list(rels)
        )


def _copy_tree(src: Path, dst: Path) -> None:
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)


# -- the edits (each returns what it did) ------------------------------------------------------------


def edit_number(d: Driver) -> str:
    rel = d.pick("util.h", "util.c", "plain.h", "calc.c", "alt/util_alt.c", "gen.def", *LIB_SOURCES)
    path = d.tree / rel
    if not path.exists():
        return f"(no {rel})"
    n = d.rng.choice([1, 2, 3, 5, 42])
    text = re.sub(r"\b(\d+)\b(?!.*\d)", str(n), path.read_text(), count=1, flags=re.S)
    d.write(rel, text) if not path.is_symlink() else path.write_text(text)
    return f"number in {rel} = {n}"


def edit_syntax(d: Driver) -> str:
    rel = d.pick("util.c", "calc.c")
    good = {"util.c": UTIL_C, "calc.c": CALC_C}[rel]
    text = good.replace("return", "return +") if d.rng.random() < 0.5 else good
    d.write(rel, text)
    return f"{'broke' if text != good else 'restored'} {rel}"


def edit_flags(d: Driver) -> str:
    flags = d.rng.choice(["-O0", "-O0 -DFIX", "-O1", "-O0 -DFIX -DUNUSED"])
    d.write("Makefile", MAKEFILE.replace("CFLAGS = -O0", f"CFLAGS = {flags}"))
    return f"Makefile CFLAGS = {flags}"


def edit_symlink(d: Driver) -> str:
    path = d.tree / "util.c"
    if path.is_symlink():
        d.write("util.c", UTIL_C)
        return "util.c back to a file"
    path.unlink(missing_ok=True)
    path.symlink_to("alt/util_alt.c")
    return "util.c -> alt/util_alt.c"


def edit_rename(d: Driver) -> str:
    pairs = [("notes.txt", "notes.md"), ("plain.h", "plain2.h")]
    a, b = d.rng.choice(pairs)
    if (d.tree / a).exists():
        os.rename(d.tree / a, d.tree / b)
        return f"renamed {a} -> {b}"
    if (d.tree / b).exists():
        os.rename(d.tree / b, d.tree / a)
        return f"renamed {b} -> {a}"
    return f"(no {a})"


def edit_delete_restore(d: Driver) -> str:
    rel = d.rng.choice(["plain.h", "gen.def", "notes.txt", "util.h"])
    path = d.tree / rel
    if path.exists():
        path.unlink()
        return f"deleted {rel}"
    subprocess.run(["cp", "-p", str(d.backup / rel), str(path)], check=True)
    return f"restored {rel} with its old mtime (cp -p)"


def edit_chmod(d: Driver) -> str:
    path = d.tree / "gen.sh"
    mode = 0o644 if os.stat(path).st_mode & 0o100 else 0o755
    os.chmod(path, mode)
    return f"chmod {mode:o} gen.sh"


def edit_old_mtime(d: Driver) -> str:
    rel = d.pick("gen.def", "plain.h", "util.h", "util.c", "gen.h", "calc.c", "lib/qx.c")
    if d.rng.random() < 0.5 and (d.backup / rel).exists():
        subprocess.run(["cp", "-p", str(d.backup / rel), str(d.tree / rel)], check=True)
        return f"cp -p old {rel}"
    if not (d.tree / rel).exists():
        return f"(no {rel})"
    past = time.time() - d.rng.choice([10, 3000, 90000])
    os.utime(d.tree / rel, (past, past), follow_symlinks=False)
    return f"mtime of {rel} into the past"


def edit_future_mtime(d: Driver) -> str:
    rel = d.pick("util.h", "calc.c", "gen.def")
    if not (d.tree / rel).exists():
        return f"(no {rel})"
    future = time.time() + 3600
    os.utime(d.tree / rel, (future, future), follow_symlinks=False)
    return f"mtime of {rel} in the future"


def edit_touch(d: Driver) -> str:
    # Build files and a program the build runs too (issue 34): the same bytes, a new mtime.
    rel = d.pick("util.h", "plain.h", "gen.def", "main.c", "lib/q.h", "lib/q.c", "Makefile", "lib/Makefile", "gen.sh")
    if (d.tree / rel).exists():
        os.utime(d.tree / rel)
    return f"touch {rel}"


def agent_make(d: Driver) -> str:
    target = d.rng.choice(["prog", "all", "clean", "gen.h"])
    _sh(["make", target], d.tree)
    return f"the agent ran make {target} in its tree"


def agent_git(d: Driver) -> str:
    action = d.rng.choice(["stash", "pop", "checkout", "commit"])
    argv = {
        "stash": ["git", "stash", "-q"],
        "pop": ["git", "stash", "pop", "-q"],
        "checkout": ["git", "checkout", "-q", "--", "."],
        "commit": ["git", "commit", "-qam", "wip"],
    }[action]
    _sh(argv, d.tree)
    return f"git {action}"


def repair(d: Driver) -> str:
    """The agent fixes what it broke: missing files back, gen.sh executable, no syntax
    error, no mtime in the future."""
    fixed = []
    for rel in ("util.h", "plain.h", "gen.def", "util.c", "calc.c"):
        path = d.tree / rel
        if not path.exists() and not path.is_symlink():
            d.write(rel, FILES[rel])
            fixed.append(rel)
        elif not path.is_symlink() and "return +" in path.read_text():
            d.write(rel, FILES[rel])
            fixed.append(rel)
    if (d.tree / "plain2.h").exists():
        (d.tree / "plain2.h").unlink()
    os.chmod(d.tree / "gen.sh", 0o755)
    now = time.time()
    for path in d.tree.rglob("*"):  # what its clock put in the future, it touches
        if ".git" not in path.parts and not path.is_symlink() and path.stat().st_mtime > now:
            os.utime(path)
            fixed.append(f"mtime of {path.relative_to(d.tree)}")
    return "repaired " + (", ".join(fixed) or "nothing")


def edit_lib_line(d: Driver) -> str:
    """The zstd loop of issue 34: one line of a library source (compiled static and
    shared) changed, nothing else."""
    rel = d.rng.choice(LIB_SOURCES)
    text = (d.tree / rel).read_text().split("/* edit")[0]
    d.write(rel, text + f"/* edit {d.steps} */\n")
    return f"one line of {rel}"


def edit_while_running(d: Driver) -> str:  # marker: Driver.step handles it
    return "during"


EDITS: list[Callable[[Driver], str]] = [
    repair,
    repair,
    repair,
    edit_number,
    edit_number,
    edit_number,
    edit_number,
    edit_lib_line,
    edit_syntax,
    edit_flags,
    edit_symlink,
    edit_rename,
    edit_delete_restore,
    edit_chmod,
    edit_old_mtime,
    edit_future_mtime,
    edit_touch,
    agent_make,
    agent_make,
    agent_git,
    edit_while_running,
]
