"""Every answer of a long-lived daemon equals a fresh daemon's on the same tree (issue 17).

A property test (a seeded random agent, tests/helpers/equivalence.py) over a real C
project with a real runner, make and gcc, in the real sandbox where the machine has one;
and one deterministic test for each case the issue reported. The long run is
benchmarks/bench_equivalence.py.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from ssebench.daemon import procs
from tests.helpers.equivalence import CALC_C, MAKEFILE, Q_C, Driver

pytestmark = pytest.mark.timeout(300)

SEED = 17
# What ./qstat and ./qdyn print on the library as written (static: Q_KIND 0, shared: 1000).
LIB_OUT = "q=10 qx=14\nq=1010 qx=14\n\n"
STEPS = 45


@pytest.fixture(autouse=True)
def _subreaper() -> None:
    procs.enable_subreaper()


def _check(d: Driver) -> None:
    d.step()
    assert not d.mismatches, "\n".join(d.mismatches + d.log)


@pytest.mark.slow
def test_random_edits_give_the_fresh_daemons_answers(tmp_path):
    d = Driver(tmp_path, SEED)
    for _ in range(STEPS):
        d.step()
    assert d.mismatches == [], "\n".join(d.mismatches + ["", *d.log])
    decisions = [line.rsplit("-> ", 1)[1] for line in d.log]
    assert "incremental" in decisions  # the engine still reuses work
    assert any(x.startswith("clean: ") for x in decisions)


def _call(d: Driver) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    return d.call(d.runner), d.fresh_call(d.tree)


def test_a_makefile_flag_change_rebuilds(tmp_path):
    # Issue 17 case 1: CFLAGS gains -DFIX; make alone would not rebuild the objects.
    d = Driver(tmp_path, 0)
    ours, fresh = _call(d)
    assert ours["pocs"][0] == "failed"
    d.write("Makefile", MAKEFILE.replace("CFLAGS = -O0", "CFLAGS = -O0 -DFIX"))
    ours, fresh = _call(d)
    assert ours == fresh
    assert ours["pocs"] == ("passed", "")
    assert d.runner.last_build == "clean: build file 'Makefile' changed"


def test_a_source_replaced_by_a_symlink_to_an_older_file(tmp_path):
    # Issue 17 case 2: the target's old mtime would hide the change from make.
    d = Driver(tmp_path, 0)
    _call(d)
    old = time.time() - 3000
    os.utime(d.tree / "alt" / "util_alt.c", (old, old))
    (d.tree / "util.c").unlink()
    (d.tree / "util.c").symlink_to("alt/util_alt.c")
    ours, fresh = _call(d)
    assert ours == fresh
    assert ours["functional"] == ("failed", "util=110 gen=42 calc=10\n" + LIB_OUT)
    assert d.runner.last_build == "clean: 'util.c' changed kind or mode"


def test_a_generated_headers_input_restored_with_an_older_mtime(tmp_path):
    # Issue 17 case 3: the agent's own build left a newer gen.h in its tree; then gen.def
    # is restored (cp -p) from an old copy with other content.
    d = Driver(tmp_path, 0)
    (d.tree / "gen.def").write_text("7\n")
    subprocess.run(["make", "gen.h"], cwd=d.tree, check=True, capture_output=True)
    ours, fresh = _call(d)
    assert ours == fresh
    assert ours["functional"] == ("failed", "util=11 gen=7 calc=10\n" + LIB_OUT)
    subprocess.run(["cp", "-p", str(d.backup / "gen.def"), str(d.tree / "gen.def")], check=True)
    ours, fresh = _call(d)
    assert ours == fresh
    assert ours["functional"] == ("failed", "util=11 gen=7 calc=10\n" + LIB_OUT)  # gen.h is newer: kept


def test_a_header_only_change_without_dependencies(tmp_path):
    # Issue 17 case 4: calc.o has no rule on plain.h; a clean build sees the new value.
    d = Driver(tmp_path, 0)
    _call(d)
    (d.tree / "plain.h").write_text("#define PLAIN 50\n")
    ours, fresh = _call(d)
    assert ours == fresh
    assert ours["functional"] == ("failed", "util=11 gen=42 calc=100\n" + LIB_OUT)
    assert d.runner.last_build == "clean: a step that read 'plain.h' did not run again"


def test_an_ordinary_edit_stays_incremental(tmp_path):
    d = Driver(tmp_path, 0)
    _call(d)
    (d.tree / "calc.c").write_text(CALC_C.replace("* 2", "* 3"))
    ours, fresh = _call(d)
    assert ours == fresh
    assert ours["functional"] == ("failed", "util=11 gen=42 calc=15\n" + LIB_OUT)
    assert d.runner.last_build == "incremental"


def test_a_library_source_built_twice_stays_incremental(tmp_path):
    # Issue 34, zstd's loop: one line of a source the sub-make in lib/ compiles twice
    # (static and -fPIC shared, each with its .d file) into an archive and a shared
    # library, changed call after call. Each answer is a fresh daemon's, and each build
    # incremental: make reran every step that depends on the change.
    d = Driver(tmp_path, 0)
    _call(d)
    for n in range(1, 5):
        (d.tree / "lib" / "q.c").write_text(Q_C.replace("Q_BASE + 3", f"Q_BASE + 3 + {n}"))
        ours, fresh = _call(d)
        assert ours == fresh
        lines = f"q={10 + n} qx=14\nq={1010 + n} qx=14\n"
        assert ours["functional"] == ("failed", "util=11 gen=42 calc=10\n" + lines + "\n")
        assert d.runner.last_build == "incremental", n


def test_a_touched_build_file_stays_incremental(tmp_path):
    # Issue 34, item 5: the same bytes give make the same rules; the new mtime is make's
    # to follow (gen.sh is run by the build: gen.h and main.o are made again).
    d = Driver(tmp_path, 0)
    _call(d)
    for rel in ("Makefile", "lib/Makefile", "gen.sh"):
        os.utime(d.tree / rel)
        ours, fresh = _call(d)
        assert ours == fresh
        assert d.runner.last_build == "incremental", rel
    d.write("lib/Makefile", (d.tree / "lib" / "Makefile").read_text().replace("-fPIC", "-fPIC -DQ_EXTRA"))
    ours, fresh = _call(d)
    assert ours == fresh
    assert d.runner.last_build == "clean: build file 'lib/Makefile' changed"
