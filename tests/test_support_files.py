"""A task's support files (task-format.md, "Support files"): every check reads the task
folder at ``SSE_TASK_DIR`` read-only, minus its hidden parts (task.toml never, each PoC
only in its own run, the intent diff never as a file, ``[intent] files`` only in the
intent step). Real daemons at levels 0-3, real ``ssebench grade``, the real sandbox.

The task is what real tasks look like: the build is ``bash "$SSE_TASK_DIR/build.sh"``,
the functional tests ``python3 "$SSE_TASK_DIR/functional.py"``. Every check also runs a
probe script from the task folder that lists what it finds there, cats every hidden part
by name and tries to write; its output is the check's log, compared exactly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.daemon import run_ssebench

pytestmark = pytest.mark.timeout(180)

PROBE = r"""#!/bin/bash
# What this check sees of the task folder, everything it can read of the hidden parts.
cd "$SSE_TASK_DIR" || exit 3
echo "$1 sees: $(find . -mindepth 1 | sort | tr '\n' ' ')"
for f in task.toml intent.diff pocs/poc-1 .poc/poc-out hardlink-to-poc toml-link intent/data.txt \
         .git/HEAD src/main.c "$TASK_HOST/task.toml" "$TASK_HOST/pocs/poc-1"; do
    if [ -r "$f" ]; then echo "  read $f: $(cat "$f")"; fi
done
echo "  notes-link: $(cat notes-link)"
touch build.sh new-file pocs/new-file 2>&1 | sed 's/^/  /'
"""

BUILD_SH = """#!/bin/bash
bash "$SSE_TASK_DIR/probe.sh" build
echo compiled > program
"""

FUNCTIONAL_PY = """import subprocess, sys
subprocess.run(["bash", sys.argv[1] + "/probe.sh", "functional"], check=True)
print("functional: program says", open("program").read().strip())
"""

# Each PoC's probe goes to the tree too (one view for all PoCs): the last PoC's log shows both.
POC_RUN = (
    'bash "$SSE_TASK_DIR/probe.sh" "PoC $(basename "$SSE_POC")" >> poc-seen; cat poc-seen; '
    'test "$(cat "$SSE_POC")" = fixed'
)
INTENT_DIFF = """diff --git a/intent-added.txt b/intent-added.txt
new file mode 100644
--- /dev/null
+++ b/intent-added.txt
@@ -0,0 +1 @@
+intent applied
"""

SUPPORT = "./build.sh ./functional.py ./notes-link ./pocs ./pocs/notes.txt ./probe.sh ./toml-link"
READ_ONLY = (
    "  touch: cannot touch 'build.sh': Read-only file system\n"
    "  touch: cannot touch 'new-file': Read-only file system\n"
    "  touch: cannot touch 'pocs/new-file': Read-only file system\n"
)


def _seen(step: str, listing: str, *reads: str) -> str:
    return f"{step} sees: {listing} \n" + "".join(f"  read {r}\n" for r in reads) + "  notes-link: notes\n" + READ_ONLY


def _task(root: Path) -> Path:
    """The task folder: support files, two PoCs (one outside the folder), an intent diff,
    intent files, a hard link and a symlink to hidden parts, a .git and the source tree."""
    task = root / "task"
    (task / "src").mkdir(parents=True)
    (task / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    (task / "pocs").mkdir()
    (task / "pocs" / "poc-1").write_text("fixed\n")
    (task / "pocs" / "notes.txt").write_text("notes\n")
    (root / "outside").mkdir()
    (root / "outside" / "poc-out").write_text("fixed\n")
    (task / "intent").mkdir()
    (task / "intent" / "data.txt").write_text("intent data\n")
    (task / "intent.diff").write_text(INTENT_DIFF)
    for name, text in (("probe.sh", PROBE), ("build.sh", BUILD_SH), ("functional.py", FUNCTIONAL_PY)):
        (task / name).write_text(text)
    os.chmod(task / "build.sh", 0o755)
    os.link(task / "pocs" / "poc-1", task / "hardlink-to-poc")
    (task / "notes-link").symlink_to("pocs/notes.txt")
    (task / "toml-link").symlink_to("task.toml")
    (task / ".git").mkdir()
    (task / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (task / "task.toml").write_text(f"""\
id = "support"
source = "src"
[build]
run = 'bash "$SSE_TASK_DIR/build.sh"'
[pocs]
run = {json.dumps(POC_RUN)}
files = ["pocs/poc-1", {json.dumps(str(root / "outside" / "poc-out"))}]
[intent]
diff = "intent.diff"
run = 'bash "$SSE_TASK_DIR/probe.sh" intent && cat intent-added.txt && test -r "$SSE_TASK_DIR/intent/data.txt"'
files = ["intent"]
[functional]
run = 'python3 "$SSE_TASK_DIR/functional.py" "$SSE_TASK_DIR"'
""")
    return task


EXPECTED = {
    "build": _seen("build", SUPPORT) + "\n",
    "pocs": (
        _seen(
            "PoC poc-1",
            "./build.sh ./functional.py ./notes-link ./pocs ./pocs/notes.txt ./pocs/poc-1 ./probe.sh ./toml-link",
            "pocs/poc-1: fixed",
        )
        + _seen("PoC poc-out", "./.poc ./.poc/poc-out " + SUPPORT, ".poc/poc-out: fixed")
        + "\n"
    ),
    "intent": (
        _seen(
            "intent",
            "./build.sh ./functional.py ./intent ./intent/data.txt ./notes-link ./pocs "
            "./pocs/notes.txt ./probe.sh ./toml-link",
            "intent/data.txt: intent data",
        )
        + "intent applied\n\n"
    ),
    "functional": _seen("functional", SUPPORT) + "functional: program says compiled\n\n",
}
LEVEL_CHECKS = {
    0: ["build", "pocs", "intent"],
    1: ["build", "pocs", "functional"],
    2: ["build", "functional"],
    3: ["build"],
}


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_checks_read_support_files_and_nothing_hidden(level, tmp_path, daemon_factory):
    task = _task(tmp_path)
    d = daemon_factory(task / "task.toml", difficulty=str(level), env={"TASK_HOST": str(task)})
    r = d.result()
    assert {k: v["state"] for k, v in r.items() if k != "_run"} == (
        {c: "passed" for c in LEVEL_CHECKS[level]} | ({"functional": "passed"} if level == 0 else {})
    )
    for check in LEVEL_CHECKS[level]:
        assert d.log(r["_run"], check) == EXPECTED[check], check
    if level == 0:
        assert r["functional"]["covered_by_intent"] is True
    # The copy is the daemon's: the task folder is untouched, a second call sees the same.
    assert sorted(p.name for p in task.iterdir()) == [
        ".git",
        "build.sh",
        "functional.py",
        "hardlink-to-poc",
        "intent",
        "intent.diff",
        "notes-link",
        "pocs",
        "probe.sh",
        "src",
        "task.toml",
        "toml-link",
    ]
    again = d.result(["build"])
    assert d.log(again["_run"], "build") == EXPECTED["build"]


def test_grade_runs_the_helpers_with_the_same_view(tmp_path):
    task = _task(tmp_path)
    done = run_ssebench("grade", "--task", str(task / "task.toml"), "--json", env={"TASK_HOST": str(task)})
    assert done.returncode == 0, done.stdout + done.stderr
    checks = {c["check"]: c["state"] for c in json.loads(done.stdout)["checks"]}
    assert checks == {"build": "passed", "pocs": "passed", "intent": "passed", "functional": "passed"}


def test_grade_logs_show_exactly_what_failing_checks_saw(tmp_path):
    # grade's log tail of a failed check: the intent step sees its files, the functional
    # tests (run because the intent tests failed) the support files only.
    task = _task(tmp_path)
    toml = task / "task.toml"
    toml.write_text(
        toml.read_text()
        .replace("/intent/data.txt\"'", "/intent/data.txt\" && false'")
        .replace('"$SSE_TASK_DIR"\'\n', '"$SSE_TASK_DIR" && false\'\n')
    )
    done = run_ssebench("grade", "--task", str(toml), "--json", env={"TASK_HOST": str(task)})
    assert done.returncode == 1, done.stderr
    checks = {c["check"]: c for c in json.loads(done.stdout)["checks"]}
    assert {k: c["state"] for k, c in checks.items()} == {
        "build": "passed",
        "pocs": "passed",
        "intent": "failed",
        "functional": "failed",
    }
    assert checks["intent"]["log_tail"] == EXPECTED["intent"][:-1]
    assert checks["functional"]["log_tail"] == EXPECTED["functional"][:-1]


def test_without_the_sandbox_task_dir_is_the_task_folder_itself(tmp_path, daemon_factory):
    task = _task(tmp_path)
    toml = task / "task.toml"
    toml.write_text(
        toml.read_text().replace(
            'bash "$SSE_TASK_DIR/build.sh"',
            'test "$SSE_TASK_DIR" = "$TASK_HOST" && test -r "$SSE_TASK_DIR/task.toml" && echo compiled > program',
        )
    )
    d = daemon_factory(toml, difficulty="1", env={"TASK_HOST": str(task)}, args=("--no-sandbox",))
    r = d.result()
    assert {k: v["state"] for k, v in r.items() if k != "_run"} == {
        "build": "passed",
        "pocs": "passed",
        "functional": "passed",
    }
    # Nothing hidden: the functional probe reads task.toml and both PoCs.
    log = d.log(r["_run"], "functional")
    assert f'  read {task}/task.toml: id = "support"\n' in log
    assert "  read pocs/poc-1: fixed\n" in log
