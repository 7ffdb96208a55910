"""``ssebench task verify``: each expectation is a real check result of the daemon's runner,
in the real sandbox (no mocks); the texts, the JSON and the exit statuses users see.

The small tasks here are made with tests/helpers/tasks.py: the tree holds ``state``
("buggy"); a PoC triggers while it says so; the fix (a -p1 diff) makes it "fixed". The
demo, ``task new``'s skeleton and the real tasks are verified too (the real ones in
tests/test_real_tasks.py, once per content hash: tests/helpers/verified.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.daemon import run_ssebench
from tests.helpers.tasks import make_task

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "tasks"
FIX = """\
diff --git a/state b/state
--- a/state
+++ b/state
@@ -1 +1 @@
-buggy
+fixed
"""
INTENT_DIFF = """\
diff --git a/intent-check.sh b/intent-check.sh
new file mode 100644
--- /dev/null
+++ b/intent-check.sh
@@ -0,0 +1 @@
+grep -q fixed state
"""
# A PoC triggers (exits non-zero) while the tree's state is buggy, unless its content says "harmless".
POC_RUN = 'grep -q fixed state || test "$(cat "$SSE_POC")" = harmless'


def small_task(root: Path, *, pocs: list[str], functional: str = "test -f state", intent: bool = True):
    task = make_task(
        root / "t",
        task_id="small",
        pocs=pocs,
        poc_run=POC_RUN,
        functional=functional,
        intent="sh intent-check.sh" if intent else None,
        intent_diff=INTENT_DIFF,
        tree_files={"state": "buggy\n"},
    )
    fix = root / "t.fix.patch"
    fix.write_text(FIX)
    return task, fix


def verify(*args: str | Path, cache: Path) -> tuple[int, str, str]:
    done = run_ssebench("task", "verify", *map(str, args), env={"SSEBENCH_CACHE": str(cache)}, timeout=300)
    return done.returncode, done.stdout, done.stderr


def timeless(text: str) -> str:
    return re.sub(r"\d+\.\d(-\d+\.\d)? s", "T s", text)


def test_a_sound_task_passes_every_expectation(tmp_path: Path) -> None:
    task, fix = small_task(tmp_path, pocs=["crash-a", "crash-b"])
    code, out, err = verify(task.dir, "--fix", fix, cache=tmp_path / "cache")
    assert (code, err) == (0, "")
    assert timeless(out) == (
        f"Verify of task 'small' ({task.file}), with fix {fix}, 1 run of each check:\n"
        "  tree     check             PoC         expected  got     time\n"
        "  unfixed  build             -           passed    passed  T s\n"
        "  unfixed  PoCs              pocs/poc-1  failed    failed  T s\n"
        "  unfixed  PoCs              pocs/poc-2  failed    failed  T s\n"
        "  unfixed  intent tests      -           failed    failed  T s\n"
        "  unfixed  functional tests  -           passed    passed  T s\n"
        "  fixed    build             -           passed    passed  T s\n"
        "  fixed    PoCs              pocs/poc-1  passed    passed  T s\n"
        "  fixed    PoCs              pocs/poc-2  passed    passed  T s\n"
        "  fixed    intent tests      -           passed    passed  T s\n"
        "  fixed    functional tests  -           passed    passed  T s\n"
        "TaskVerdict: sound\n"
    )
    # The task and the fix are as they were: verify only reads them.
    assert (task.tree / "state").read_text() == "buggy\n"


def test_every_problem_is_named(tmp_path: Path) -> None:
    """A PoC that does not trigger (the second: the PoC step alone would stop at the
    first), functional tests that fail without any change, and intent tests that pass
    without the fix (a warning)."""
    task = make_task(
        tmp_path / "t",
        task_id="bad",
        pocs=["crash", "harmless"],
        poc_run=POC_RUN,
        functional="false",
        intent="true",
        tree_files={"state": "buggy\n"},
    )
    code, out, err = verify(task.file, cache=tmp_path / "cache")
    assert (code, err) == (1, "")
    assert timeless(out) == (
        f"Verify of task 'bad' ({task.file}), without a fix, 1 run of each check:\n"
        "  tree     check             PoC         expected  got     time\n"
        "  unfixed  build             -           passed    passed  T s\n"
        "  unfixed  PoCs              pocs/poc-1  failed    failed  T s\n"
        "  unfixed  PoCs              pocs/poc-2  failed    passed  T s\n"
        "  unfixed  intent tests      -           failed    passed  T s\n"
        "  unfixed  functional tests  -           passed    failed  T s\n"
        "TaskVerdict: UNSOUND (2 problems)\n"
        "  - PoC pocs/poc-2 does not trigger the bug on the unfixed tree (its check passes)\n"
        "  - the functional tests fail on the unfixed tree, without any change\n"
        "Warnings:\n"
        "  - the intent tests pass on the unfixed tree: they do not test the fix\n"
        "  - no --fix given: only the unfixed tree was verified\n"
    )


def test_a_fix_that_does_not_fix(tmp_path: Path) -> None:
    task, fix = small_task(tmp_path, pocs=["crash"], intent=False)
    fix.write_text(FIX.replace("+fixed", "+still buggy"))
    code, out, _ = verify(task.dir, "--fix", fix, cache=tmp_path / "cache")
    assert code == 1
    assert out.split("TaskVerdict: ")[1] == (
        "UNSOUND (1 problem)\n  - PoC pocs/poc-1 still triggers the bug with the fix applied\n"
    )


def test_a_build_that_fails_names_the_build_and_what_did_not_run(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", task_id="nobuild", build="exit 3", pocs=["x"], functional="true")
    code, out, _ = verify(task.file, cache=tmp_path / "cache")
    assert code == 1
    assert out.split("TaskVerdict: ")[1].split("Warnings:")[0] == (
        "UNSOUND (3 problems)\n"
        "  - the build fails on the unfixed tree\n"
        "  - PoC pocs/poc-1 did not run on the unfixed tree (the build failed)\n"
        "  - functional tests did not run on the unfixed tree (the build failed)\n"
    )


def test_json_is_the_same_verdict_as_one_object(tmp_path: Path) -> None:
    task, fix = small_task(tmp_path, pocs=["crash"], intent=False)
    code, out, _ = verify(task.dir, "--fix", fix, "--json", cache=tmp_path / "cache")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"task", "file", "fix", "repeat", "sound", "expectations", "problems", "warnings", "image"}
    assert (data["task"], data["file"], data["fix"], data["repeat"], data["sound"]) == (
        "small",
        str(task.file),
        str(fix),
        1,
        True,
    )
    assert (data["problems"], data["warnings"], data["image"]) == ([], [], None)
    rows = [(e["tree"], e["check"], e["poc"], e["expected"], e["got"], e["met"]) for e in data["expectations"]]
    assert rows == [
        ("unfixed", "build", None, "passed", ["passed"], True),
        ("unfixed", "pocs", "pocs/poc-1", "failed", ["failed"], True),
        ("unfixed", "functional", None, "passed", ["passed"], True),
        ("fixed", "build", None, "passed", ["passed"], True),
        ("fixed", "pocs", "pocs/poc-1", "passed", ["passed"], True),
        ("fixed", "functional", None, "passed", ["passed"], True),
    ]
    assert all(len(e["seconds"]) == 1 and e["seconds"][0] >= 0 for e in data["expectations"])


def test_repeat_names_a_flaky_check(tmp_path: Path) -> None:
    """The functional tests pass on every other run (a counter outside the sandbox: this
    one check runs with --no-sandbox, so it can keep state between runs)."""
    counter = tmp_path / "count"
    flip = f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; [ $((n % 2)) = 0 ]"
    task, _ = small_task(tmp_path, pocs=["crash"], functional=flip, intent=False)
    code, out, _ = verify(task.dir, "--repeat", "2", "--no-sandbox", cache=tmp_path / "cache")
    assert code == 1
    assert timeless(out).split("\n", 1)[1] == (
        "  tree     check             PoC         expected  got             time\n"
        "  unfixed  build             -           passed    passed x2       T s\n"
        "  unfixed  PoCs              pocs/poc-1  failed    failed x2       T s\n"
        "  unfixed  functional tests  -           passed    passed, failed  T s\n"
        "TaskVerdict: UNSOUND (1 problem)\n"
        "  - flaky: functional tests on the unfixed tree gave passed, failed in 2 runs\n"
        "Warnings:\n"
        "  - no --fix given: only the unfixed tree was verified\n"
    )


@pytest.mark.parametrize(
    ("fix_text", "message"),
    [
        (
            FIX.replace("state", "other"),
            "ssebench task verify: --fix {fix}: does not apply to {src}: error: other: No such file or directory\n",
        ),
        (
            FIX.replace("-buggy", "-something else"),
            "ssebench task verify: --fix {fix}: does not apply to {src}: error: patch failed: state:1 "
            "error: state: patch does not apply\n",
        ),
    ],
)
def test_a_fix_for_another_tree_is_a_usage_error_with_gits_message(tmp_path: Path, fix_text: str, message: str) -> None:
    task, fix = small_task(tmp_path, pocs=["crash"])
    fix.write_text(fix_text)
    code, out, err = verify(task.dir, "--fix", fix, cache=tmp_path / "cache")
    assert (code, out) == (2, "")
    assert err == message.format(fix=fix, src=task.tree)


def test_usage_errors(tmp_path: Path) -> None:
    task, _ = small_task(tmp_path, pocs=["crash"])
    assert verify(task.dir, "--fix", tmp_path / "nope.patch", cache=tmp_path / "c")[1:] == (
        "",
        f"ssebench task verify: --fix {tmp_path / 'nope.patch'}: no such file\n",
    )
    assert verify(task.dir, "--repeat", "0", cache=tmp_path / "c")[2] == (
        "ssebench task verify: --repeat must be at least 1, got 0\n"
    )
    (task.dir / "pocs" / "poc-1").unlink()  # a PoC file that is missing: the loader's line
    code, out, err = verify(task.dir, cache=tmp_path / "c")
    assert (code, out) == (2, "")
    assert err == (
        f"{task.file}: key 'pocs.files[0]': file 'pocs/poc-1' does not exist (resolved to {task.dir / 'pocs/poc-1'})\n"
    )


def test_the_demo_is_sound_with_its_fix(tmp_path: Path) -> None:
    code, out, err = verify(
        EXAMPLES / "demo-overflow", "--fix", EXAMPLES / "demo-overflow.fix.patch", cache=tmp_path / "cache"
    )
    assert (code, err) == (0, ""), out
    assert out.endswith("TaskVerdict: sound\n")
    assert "  unfixed  PoCs              pocs/sixteen-chars  failed    failed" in out


def test_task_new_writes_a_task_that_verify_proves_sound(tmp_path: Path) -> None:
    target = tmp_path / "my-task"
    assert run_ssebench("task", "new", str(target)).returncode == 0
    fix = tmp_path / "my-task.fix.patch"
    code, out, err = verify(target, "--fix", fix, cache=tmp_path / "cache")
    assert (code, err) == (0, ""), out
    assert timeless(out) == (
        f"Verify of task 'my-task' ({target / 'task.toml'}), with fix {fix}, 1 run of each check:\n"
        "  tree     check             PoC             expected  got     time\n"
        "  unfixed  build             -               passed    passed  T s\n"
        "  unfixed  PoCs              pocs/no-equals  failed    failed  T s\n"
        "  unfixed  functional tests  -               passed    passed  T s\n"
        "  fixed    build             -               passed    passed  T s\n"
        "  fixed    PoCs              pocs/no-equals  passed    passed  T s\n"
        "  fixed    functional tests  -               passed    passed  T s\n"
        "TaskVerdict: sound\n"
    )
