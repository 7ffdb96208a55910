"""``ssebench task new DIR``: a small complete task (a C program with one bug, a PoC that
triggers it, functional tests) and its reference fix beside it (``DIR.fix.patch``, outside
the task folder, where no check can read it), to be edited into a real one. It passes
``task check`` and ``task verify --fix DIR.fix.patch``. The skeleton's files are strings
here, not package data, so a plain wheel install has them."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from ssebench import ui

TASK_TOML = (
    """\
# A task for ssebench: one vulnerability to fix in one source tree.
# The format, key by key: docs/task-format.md. Paths are relative to this folder.
# Check it with: ssebench task check task.toml
id = "{id}"
source = "src"                      # the tree the agent edits
description = "app prints the value of each KEY=VALUE line it reads. """
    """A line without '=' crashes it; fix that without changing the output for valid lines."

[build]
run = "make"                        # bash -c, in the build tree (incremental between calls)
timeout = 300                       # seconds (default 1800)

[pocs]                              # hidden from the agent
run = './app < "$SSE_POC"'          # once per file, in a fresh view of the built tree; """
    """exit 0 = the PoC no longer triggers the bug
files = ["pocs/no-equals"]
timeout = 60                        # per PoC (default 300)

[functional]                        # the project's own regression tests
run = "make test"
timeout = 300                       # default 1800

# The tests that came with the upstream fix, if you have them (hidden from the agent):
# [intent]
# diff = "intent.diff"              # git apply -p1, in a fresh view of the built tree
# run = "make test"
# timeout = 300
# files = ["intent/"]               # optional: support files only the intent tests see
"""
)

APP_C = """\
/* A tiny program with one bug, as a starting point: replace src/ with the project. */
#include <stdio.h>
#include <string.h>

/* Prints the value of each KEY=VALUE line read from standard input. The bug: for a line
   without '=', strchr returns NULL, and NULL + 1 is dereferenced (a crash). */
int main(void) {
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        char *eq = strchr(line, '=');
        fputs(eq + 1, stdout);
    }
    return 0;
}
"""

MAKEFILE = """\
CC ?= cc
CFLAGS ?= -O0 -g

app: app.c
\t$(CC) $(CFLAGS) -o $@ app.c

test: app
\t./tests/run-tests.sh

clean:
\trm -f app

.PHONY: test clean
"""

RUN_TESTS = """\
#!/bin/sh
# The functional tests: valid input gives the expected output.
cd "$(dirname "$0")/.." || exit 2
expected="$(printf '1\\n2\\n')"
if [ "$(printf 'a=1\\nb=2\\n' | ./app)" = "$expected" ]; then
    echo "PASS two values"
else
    echo "FAIL two values"
    exit 1
fi
"""

POC = "a line without an equals sign\n"

# The reference fix, a -p1 diff against src/ (``task verify --fix``; ``git apply -p1`` in src/).
FIX = """\
diff --git a/app.c b/app.c
--- a/app.c
+++ b/app.c
@@ -8,7 +8,8 @@ int main(void) {
     char line[256];
     while (fgets(line, sizeof line, stdin)) {
         char *eq = strchr(line, '=');
-        fputs(eq + 1, stdout);
+        if (eq != NULL)  /* a line without '=' has no value: skip it */
+            fputs(eq + 1, stdout);
     }
     return 0;
 }
"""

README = """\
# {id}

A task skeleton written by `ssebench task new`. Edit it into the real task:

- `src/`: the tree the agent edits (here a C program, `app`, that crashes on a line without
  `=`), with its build (`make`) and its functional tests (`make test`).
- `pocs/`: inputs that trigger the bug, run by `[pocs] run` with `$SSE_POC` set to each.
  Hidden from the agent.
- `task.toml`: what to build and run; see docs/task-format.md.
- `../{id_dir}.fix.patch` (beside this folder, not in it: every file here is readable by
  the checks, so by the agent's own code): the reference fix, a `-p1` diff against `src/`.

Then:

    ssebench task check task.toml
    ssebench grade --task task.toml      # unfixed: the PoC still crashes the program
    ssebench task verify . --fix ../{id_dir}.fix.patch   # sound: the PoC triggers, the fix fixes it
"""

_EXECUTABLE = {"src/tests/run-tests.sh"}


def skeleton(task_id: str, folder: str = "my-task") -> dict[str, str]:
    """The skeleton's files, by path relative to the task folder (named *folder*)."""
    return {
        "task.toml": TASK_TOML.format(id=task_id),
        "README.md": README.format(id=task_id, id_dir=folder),
        "src/app.c": APP_C,
        "src/Makefile": MAKEFILE,
        "src/tests/run-tests.sh": RUN_TESTS,
        "pocs/no-equals": POC,
    }


def _default_id(folder: Path) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", folder.name).strip("-")
    return cleaned or "new-task"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fix_path(target: Path) -> Path:
    """Where the reference fix goes: beside the task folder, ``<folder>.fix.patch``."""
    return target.parent / f"{target.name}.fix.patch"


def new(args: argparse.Namespace) -> int:
    target = Path(os.path.abspath(args.dir))
    task_id = args.id if args.id is not None else _default_id(target)
    problem = _refusal(target, task_id)
    if problem is not None:
        print(f"ssebench task new: {problem}", file=sys.stderr)
        return 2
    try:
        _write(target, task_id)
    except OSError as exc:
        print(f"ssebench task new: {exc.filename or target}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    task_file, fix = target / "task.toml", fix_path(target)
    ui.echo(("Wrote task '" + task_id + "' to " + str(target) + ":", "ok"))
    for line in (
        "  task.toml               what to build and run (docs/task-format.md)",
        "  src/                    the tree the agent edits: app.c, Makefile, tests/run-tests.sh",
        "  pocs/no-equals          a PoC (hidden from the agent)",
        "  README.md               what to edit next",
        f"and its reference fix beside it (outside the task folder): {fix}",
        "Next:",
        f"  ssebench task check {task_file}",
        f"  ssebench grade --task {task_file}",
        f"  ssebench task verify {target} --fix {fix}",
    ):
        ui.echo(line)
    return 0


def _refusal(target: Path, task_id: str) -> str | None:
    """Why DIR cannot be written (None: it can); the user's files are never replaced."""
    if not re.fullmatch(r"[A-Za-z0-9._-]+", task_id):
        return f"--id must match [A-Za-z0-9._-]+, got {task_id!r}"
    if target.exists() and not target.is_dir():
        return f"{target} exists and is not a folder"
    if target.is_dir() and any(target.iterdir()):
        return f"{target} is not empty; give a new or empty folder"
    if os.path.lexists(fix_path(target)):
        return f"{fix_path(target)} exists; it would be the new task's reference fix (move it away)"
    return None


def _write(target: Path, task_id: str) -> None:
    """The task folder and its fix, whole or not at all: written beside DIR and renamed
    into place, so an interrupted run leaves no half task."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for rel, text in skeleton(task_id, target.name).items():
            path = staging / "task" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if rel in _EXECUTABLE:
                path.chmod(0o777 & ~_umask())
        (staging / "task").chmod(0o777 & ~_umask())
        (staging / "fix.patch").write_text(FIX)
        (staging / "fix.patch").chmod(0o666 & ~_umask())
        os.rename(staging / "task", target)  # replaces DIR only while it is empty
        try:
            os.link(staging / "fix.patch", fix_path(target))  # never replaces a file
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
