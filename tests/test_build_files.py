"""Build files and the build engine (issue 34, item 5): a build file whose content did not
change never forces a clean build; one whose content changed still does.

A real daemon on a real socket, in the real sandbox where the machine has one, on an
autotools-like project: a ``configure`` that writes ``config.status``, which makes
``Makefile`` from ``Makefile.in`` and ``config.h`` from ``config.h.in`` (left alone when
unchanged, as autoconf's is), and a ``Makefile`` with automake's rebuild rules for
itself and ``config.status`` (none for ``configure.ac``: automake's with
``AM_MAINTAINER_MODE``), so ``make`` in place does nothing after ``touch configure.ac``.
"""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from ssebench.daemon.tracefile import find_strace
from tests.helpers.daemon import DaemonProcess

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(find_strace() is None, reason="no strace: every build is clean"),
]

CONFIGURE_AC = "AC_INIT([hello], [1.0])\nAC_CONFIG_HEADERS([config.h])\nAC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n"
CONFIGURE = """\
#!/bin/sh
# A stand-in for autoconf's output: writes config.status and runs it.
echo "checking for a C compiler... cc"
cat > config.status <<'EOF'
#!/bin/sh
if [ "$1" = --recheck ]; then exec ./configure; fi
sed -e 's|@CC@|cc|' Makefile.in > Makefile.tmp && mv Makefile.tmp Makefile
sed -e 's|@GREETING@|"hello"|' config.h.in > config.h.tmp
if cmp -s config.h.tmp config.h; then rm -f config.h.tmp; echo "config.h is unchanged"; else mv config.h.tmp config.h; fi
EOF
chmod +x config.status
./config.status
"""
MAKEFILE_IN = """\
CC = @CC@
all: hello
hello: hello.o greet.o
\t$(CC) -o $@ hello.o greet.o
%.o: %.c config.h
\t$(CC) -c $< -o $@
Makefile: Makefile.in config.status
\t./config.status
config.status: configure
\t./config.status --recheck
"""
FILES = {
    "configure.ac": CONFIGURE_AC,
    "configure": CONFIGURE,
    "Makefile.in": MAKEFILE_IN,
    "config.h.in": "#define GREETING @GREETING@\n",
    "hello.c": "#include <stdio.h>\nconst char *greet(void);\nint main(void) { puts(greet()); return 0; }\n",
    "greet.c": '#include "config.h"\nconst char *greet(void) { return GREETING " world"; }\n',
}
BUILD = "{ test -f config.status || ./configure; } && make"


def _compiled(log: str) -> list[str]:
    return sorted(m.group(1) for m in re.finditer(r"^cc -c (\S+)", log, re.M))


def _call(d: DaemonProcess) -> tuple[dict[str, Any], str, str]:
    """One call: (the result's checks, the build log, /health's last build)."""
    result = d.result(["build", "functional"])
    log = d.log(result["_run"], "build")
    return result, log, d.get("/health").json()["builds"]["last"]


def test_touching_build_files_stays_incremental_and_an_edit_builds_clean(task_factory, daemon_factory):
    t = task_factory(build=BUILD, functional="./hello", tree_files=FILES)
    os.chmod(t.tree / "configure", 0o755)
    d = daemon_factory(t.file, difficulty="0")
    result, log, last = _call(d)
    assert (result["build"]["state"], last) == ("passed", "clean: no mirror yet")
    assert "checking for a C compiler" in log and _compiled(log) == ["greet.c", "hello.c"]
    assert d.log(result["_run"], "functional") == "hello world\n\n"

    # touch configure.ac: nothing reads it, make has no rule on it: make does nothing.
    os.utime(t.tree / "configure.ac")
    result, log, last = _call(d)
    assert (result["build"]["state"], result["functional"]["state"], last) == ("passed", "passed", "incremental")
    assert "checking" not in log and _compiled(log) == []

    # touch Makefile.in: make runs config.status (same Makefile, config.h unchanged), compiles nothing.
    os.utime(t.tree / "Makefile.in")
    result, log, last = _call(d)
    assert (result["build"]["state"], last) == ("passed", "incremental")
    assert "config.h is unchanged" in log and _compiled(log) == []

    # touch configure: config.status --recheck reruns configure, as make in place does.
    os.utime(t.tree / "configure")
    result, log, last = _call(d)
    assert (result["build"]["state"], last) == ("passed", "incremental")
    assert "checking for a C compiler" in log and _compiled(log) == []

    # An edit of a build file is still a clean build, and its answer is the new one.
    (t.tree / "config.h.in").write_text('#define GREETING @GREETING@ ", again"\n')
    result, log, last = _call(d)
    assert (result["build"]["state"], last) == ("passed", "clean: build file 'config.h.in' changed")
    assert d.log(result["_run"], "functional") == "hello, again world\n\n"

    # A source edit after it: incremental, one object.
    (t.tree / "greet.c").write_text(FILES["greet.c"].replace('" world"', '" there"'))
    result, log, last = _call(d)
    assert (result["build"]["state"], last) == ("passed", "incremental")
    assert _compiled(log) == ["greet.c"]
    assert d.log(result["_run"], "functional") == "hello, again there\n\n"


def test_a_call_with_no_change_answers_from_the_last_build(task_factory, daemon_factory):
    # Issue 34: a call with no change at all does not run the build again: its answer and
    # its log are the last build's, which was a clean build's of this very tree. The
    # build here is not idempotent (it appends), as a fresh daemon's answer shows.
    build = "echo built >> count; " + BUILD
    functional = 'test "$(wc -l < count)" = 1 && ./hello'
    t = task_factory(build=build, functional=functional, tree_files=FILES)
    os.chmod(t.tree / "configure", 0o755)
    d = daemon_factory(t.file, difficulty="0")
    first, first_log, last = _call(d)
    assert (first["build"]["state"], first["functional"]["state"], last) == ("passed", "passed", "clean: no mirror yet")
    for _ in range(2):
        result, log, last = _call(d)
        assert (result["build"]["state"], result["functional"]["state"]) == ("passed", "passed")
        assert last == "unchanged: nothing the build read changed, the last build's answer"
        assert log == first_log  # configure's and both compiles' lines: the first build's
        assert d.log(result["_run"], "functional") == "hello world\n\n"
    builds = d.get("/health").json()["builds"]
    assert (builds["clean"], builds["incremental"], builds["unchanged"]) == (1, 0, 2)
    # A touch is a change: the build runs again.
    os.utime(t.tree / "greet.c")
    result, log, last = _call(d)
    assert (result["build"]["state"], last, _compiled(log)) == ("passed", "incremental", ["greet.c"])
    assert d.get("/health").json()["builds"]["unchanged"] == 2
