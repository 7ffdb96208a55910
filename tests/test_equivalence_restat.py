"""Incremental = fresh on a Meson-like ninja build (issue 34, item 2).

Meson links a shared library, then extracts its exported symbols into a ``.symbols``
file with ``restat = 1``: the file is rewritten only when the symbols change, and the
programs linked against the library depend on that file, not on the library. So after a
change that relinks the library, ninja does not link the programs again, although their
link read the library. The project here is that pattern in small (a handwritten
``build.ninja``; the symbols step keeps, as Meson's does, only the defined symbols).
Every call of a long-lived daemon (one Runner) is compared with a fresh one's on the same
tree: each check's state and each failed check's log, word for word.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssebench.daemon.runner import Runner
from ssebench.difficulty import Check
from ssebench.task import load_task
from tests.helpers.equivalence import sandbox
from tests.helpers.tasks import make_task

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(shutil.which("ninja") is None or shutil.which("nm") is None, reason="no ninja or nm here"),
]

BUILD_NINJA = """\
rule cc
  command = cc -O0 -fPIC -c $in -o $out
rule shlib
  command = cc -shared -Wl,-soname,libq.so -o $out $in
rule symbols
  command = sh symbols.sh $in $out
  restat = 1
rule link
  command = cc -o $out $in -L. -lq -Wl,-rpath,'$$ORIGIN'
build q.o: cc q.c
build libq.so: shlib q.o
build libq.so.symbols: symbols libq.so
build main.o: cc main.c
build prog: link main.o | libq.so.symbols
"""
# Meson's symbolextractor in small: the defined dynamic symbols, written only on a change.
SYMBOLS_SH = """\
nm -D --defined-only --format=posix "$1" | cut -d' ' -f1,2 > "$2.tmp"
if cmp -s "$2.tmp" "$2"; then rm "$2.tmp"; else mv "$2.tmp" "$2"; fi
"""
Q_C = "int q(void) { return 1; }\n"
MAIN_C = '#include <stdio.h>\nint q(void);\nint main(void) { printf("q=%d\\n", q()); return 0; }\n'
FILES = {"build.ninja": BUILD_NINJA, "symbols.sh": SYMBOLS_SH, "q.c": Q_C, "main.c": MAIN_C}
CHECKS = [Check.BUILD, Check.FUNCTIONAL]
# A build that passes incrementally and fails fresh: the library imports a symbol nobody
# defines; its exports (the symbols file) stay the same, so ninja does not link prog again.
MISSING = "int missing(void);\nint q(void) { return missing(); }\n"
Result = dict[str, tuple[str, str]]


class Pair:
    """The agent's tree, a long-lived Runner on it, and a fresh Runner per call."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # One job: a failed build's log is compared word for word, in the order ninja ran.
        self.files = make_task(root / "task", build="ninja -j1", functional="./prog", tree_files=FILES)
        self.tree = self.files.tree
        self.task = load_task(self.files.file)
        self.box = sandbox("sandbox")
        self.long = self._runner("long")
        self.n = 0
        self.decisions: list[str] = []

    def _runner(self, name: str) -> Runner:
        ws = self.root / f"ws-{name}"
        ws.mkdir()
        return Runner(self.task, self.tree, ws, heartbeat=3600, sandbox=self.box)

    def _call(self, runner: Runner) -> Result:
        async def go() -> Result:
            run = await runner.prepare()
            async for _ in runner.execute(run, CHECKS):
                pass
            return {c.value: (r.state, r.log.read_text() if r.log else "") for c, r in run.results.items()}

        return asyncio.run(go())

    def call(self) -> Result:
        """One call on the long-lived Runner, checked against a fresh Runner's."""
        ours = self._call(self.long)
        self.decisions.append(self.long.last_build)
        self.n += 1
        fresh_runner = self._runner(f"fresh-{self.n}")
        try:
            fresh = self._call(fresh_runner)
        finally:
            shutil.rmtree(self.root / f"ws-fresh-{self.n}", ignore_errors=True)
        assert _failed_logs(ours) == _failed_logs(fresh), self.decisions
        return ours

    def write(self, rel: str, text: str) -> None:
        (self.tree / rel).write_text(text)


def _failed_logs(result: Result) -> Result:
    """What must be a fresh daemon's: states, and the log of each failed check."""
    return {check: (state, log if state == "failed" else "") for check, (state, log) in result.items()}


def test_a_library_relinked_with_the_same_bytes_stays_incremental(tmp_path):
    # fribidi's one-line change of a comment: the object and the library are the same
    # bytes, ninja (restat) does not link prog again, and that is a fresh build's prog.
    p = Pair(tmp_path)
    assert p.call()["functional"] == ("passed", "q=1\n\n")
    p.write("q.c", Q_C + "/* a comment */\n")
    ours = p.call()
    assert p.long.last_build == "incremental"
    assert "cc -shared" in ours["build"][1] and "cc -o prog" not in ours["build"][1]
    assert ours["functional"] == ("passed", "q=1\n\n")


def test_a_library_with_other_bytes_but_the_same_exports_is_repaired(tmp_path, capfd):
    # The same symbols file, so ninja skips prog's link although the library's bytes
    # differ: the repair deletes prog (its link is stale) and runs ninja again, which
    # links it; no clean build, and the answer is a fresh daemon's (Pair.call).
    p = Pair(tmp_path)
    p.call()
    p.write("q.c", Q_C.replace("1", "2"))
    ours = p.call()
    assert p.long.last_build == "incremental: repaired (a step that read 'libq.so' did not run again)"
    assert p.long.build_counts == {"clean": 1, "incremental": 1}
    assert "cc -shared" in ours["build"][1] and "cc -o prog" in ours["build"][1]
    assert ours["functional"] == ("passed", "q=2\n\n")
    assert (
        "ssebench daemon: build repair (deleted 'prog', as a step that read 'libq.so' did not run again): kept\n"
        in (capfd.readouterr().err)
    )
    assert "build: repair" in p.long.last_phases
    # The graph after the repair is a fresh build's: the next code change is repaired too.
    p.write("q.c", Q_C.replace("1", "3"))
    assert p.call()["functional"] == ("passed", "q=3\n\n")
    assert p.long.build_counts == {"clean": 1, "incremental": 2}


def test_a_library_that_imports_a_missing_symbol_fails_as_a_fresh_build_does(tmp_path, capfd):
    # Why the symbols file cannot vouch for the library: it lists exports only, and a
    # fresh build's link of prog fails on the library's import (ninja in place passes).
    p = Pair(tmp_path)
    p.call()
    p.write("q.c", MISSING)
    ours = p.call()
    # The repair's second build fails (prog's link): not kept, a clean build answers.
    assert p.long.last_build == "clean: a step that read 'libq.so' did not run again"
    assert p.long.build_counts == {"clean": 2}
    assert "(deleted 'prog', as a step that read 'libq.so' did not run again): not kept (the second build failed)" in (
        capfd.readouterr().err
    )
    assert ours["build"][0] == "failed"
    assert "libq.so: undefined reference to `missing'" in ours["build"][1]


EDITS = {
    "comment": lambda text, n: text.split("/*")[0] + f"/* edit {n} */\n",
    "body": lambda text, n: f"int q(void) {{ return {n}; }}\n",
    "export": lambda text, n: Q_C + f"int q{n}(void) {{ return {n}; }}\n",
    "missing": lambda text, n: MISSING,
    "restore": lambda text, n: Q_C,
}


@pytest.mark.slow
@settings(max_examples=10, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(sorted(EDITS)), st.integers(1, 3)), min_size=3, max_size=6))
def test_any_edits_give_the_fresh_daemons_answers(edits):
    # One folder per example, in the temp folder itself: the checks' uid must reach the
    # workspaces for the whole run, and a pytest starting meanwhile (another session)
    # makes pytest-of-<user> 0700 again.
    root = Path(tempfile.mkdtemp(prefix="restat-eq-"))
    root.chmod(0o755)
    try:
        p = Pair(root)
        p.call()
        for name, n in edits:
            p.write("q.c", EDITS[name]((p.tree / "q.c").read_text(), n))
            p.call()  # asserts ours == fresh
    finally:
        shutil.rmtree(root, ignore_errors=True)
