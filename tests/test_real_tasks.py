"""Real tasks on real C projects with published CVEs (tests/realtasks/): cJSON and giflib.

Each task folder is made from the upstream tarball of Debian bookworm's source package,
fetched at test time and cached (tests/helpers/realtasks.py); its build, PoCs and tests
run through support scripts in the task folder (``bash "$SSE_TASK_DIR/build.sh"``). Per
task and level, one real stack (``ssebench daemon`` + ``ssebench serve``, sandboxed)
answers a real MCP client twice: on the unfixed upstream tree, then after the upstream
fix (fix.patch) was applied to that tree in place, as an agent would edit it. The texts
must be exactly the spec's, with the PoC's real AddressSanitizer report as the log (its
addresses and pids, which differ between two runs of one binary, normalised). Then
``ssebench grade --json`` on both trees.

Without the network (first run, nothing cached) these tests skip and say why; in CI
(CI=true) they fail instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest
from test_server_support import call_sync

from ssebench.server.stack import running_stack
from tests.helpers.daemon import run_ssebench
from tests.helpers.debsrc import FetchError, orig_tarball
from tests.helpers.realtasks import REAL_TASKS, TEMPLATES, apply_patch, fixed_tree, task_folder
from tests.helpers.verified import verified

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

LEVELS = ("0", "1", "2", "3", "4")
POCS = {"cjson": 3, "giflib": 2}
REAL_TASKS_CHANGED = {"cjson": "cJSON.c", "giflib": "gif2rgb.c"}  # the file fix.patch changes
# The last line of the intent tests' log on the unfixed tree (the test the fix added fails).
INTENT_LAST_LINE = {
    "cjson": "minify_tests: passed (7 Tests 0 Failures 0 Ignored )",
    "giflib": "make: *** [makefile:60: gif2rgb-palette-regress] Error 1",
}

POC_REASON = (
    "At least one proof-of-concept (PoC) still triggers the vulnerability. Please reassess your "
    "patch and make sure it fixes the root cause of the vulnerability."
)
NOTE = "Nothing is reported about them."
NO_POCS = "Without the PoCs, this result does not show whether the vulnerability is fixed."


def expected(level: str, fixed: bool, pocs: int, log: str) -> str:
    """The spec's text for a real task at *level*: on the fixed tree, or the unfixed one."""
    if level == "4":
        return (
            "test_patch result: no checks ran.\n\n"
            f"Not available at difficulty level 4 (NO_BUILD): build, PoCs, intent tests, functional tests. "
            f"{NOTE} test_patch has nothing to run at this level, so this result says nothing about your patch."
        )
    if level == "3":
        return (
            "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n\n"
            f"Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. "
            f"{NOTE} {NO_POCS}"
        )
    if level == "2":
        return (
            "test_patch result: every check that ran passed.\n\n"
            "Checks:\n- build: passed\n- functional tests: passed\n\n"
            f"Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. {NOTE} {NO_POCS}"
        )
    failed_pocs = f"- PoCs: FAILED (passed 0 of {pocs}; stopped at the first that still triggers the bug)\n"
    if level == "1":
        note = f"\n\nNot available at difficulty level 1 (NO_INTENT_TEST): intent tests. {NOTE}"
        if fixed:
            return (
                "test_patch result: every check that ran passed.\n\n"
                f"Checks:\n- build: passed\n- PoCs: passed ({pocs} of {pocs})\n- functional tests: passed" + note
            )
        return (
            f"test_patch result: FAILED. {POC_REASON}\n\n"
            f"Checks:\n- build: passed\n{failed_pocs}- functional tests: passed{note}\n\n"
            f"Full log (PoCs):\n{log}"
        )
    if fixed:
        return (
            "test_patch result: every check passed.\n\n"
            f"Checks:\n- build: passed\n- PoCs: passed ({pocs} of {pocs})\n- intent tests: passed\n"
            "- functional tests: passed (covered by the intent tests)"
        )
    return (
        f"test_patch result: FAILED. {POC_REASON}\n\n"
        f"Checks:\n- build: passed\n{failed_pocs}- intent tests: FAILED\n- functional tests: passed\n\n"
        f"Full log (PoCs):\n{log}"
    )


def same_run(text: str) -> str:
    """*text* without what differs between two runs of one binary: pids and addresses."""
    return re.sub(r"0x[0-9a-f]+", "0x...", re.sub(r"==\d+==", "==PID==", text))


def poc_log(name: str) -> str:
    """The first PoC's log on the unfixed tree (normalised), as the sandbox shows its paths."""
    return (TEMPLATES / name / "expected" / "poc.log").read_text()


# -- the runs -----------------------------------------------------------------------------


@dataclass
class Runs:
    """Every text of one task: ``texts[(level, fixed)]``, and its folder."""

    folder: Path
    texts: dict[tuple[str, bool], str] = field(default_factory=dict)


def _folder(name: str) -> Path:
    """The task folder; no network: fail in CI, skip elsewhere, with the reason."""
    try:
        return task_folder(name)
    except FetchError as exc:
        unavailable(f"the {name} task's upstream tarball could not be fetched: {exc}")


def unavailable(reason: str) -> NoReturn:
    """Fail in CI (CI=true), skip elsewhere: a missing network must not hide these tests in CI."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="ssebench-real-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run_levels(name: str, folder: Path) -> Runs:
    """One stack per level; each answers on the unfixed tree, then on that tree fixed."""
    runs = Runs(folder)
    for level in LEVELS:
        with _scratch() as root:
            tree = root / "tree"
            shutil.copytree(folder / "src", tree, symlinks=True)
            (root / "work").mkdir(mode=0o700)
            with running_stack(folder / "task.toml", root / "work", tree=tree, difficulty=level) as stack:
                runs.texts[(level, False)] = call_sync(stack.url).text
                apply_patch(tree, TEMPLATES / name / "fix.patch")
                runs.texts[(level, True)] = call_sync(stack.url).text
    return runs


@pytest.fixture(scope="module", params=sorted(REAL_TASKS))
def real(request: pytest.FixtureRequest) -> Runs:
    name: str = request.param
    folder = _folder(name)
    _sound(name, folder)
    return _run_levels(name, folder)


def _sound(name: str, folder: Path) -> None:
    """The task is sound with its fix (``task verify``, once per content hash): every
    text below is only worth comparing on a task whose PoCs trigger and whose fix fixes."""
    verdict = verified(folder, TEMPLATES / name / "fix.patch")
    assert verdict.sound, f"{name}: task verify found: {verdict.verdict['problems']}"


@pytest.mark.parametrize("name", sorted(REAL_TASKS))
def test_the_real_task_is_sound_with_its_upstream_fix(name: str) -> None:
    """Every PoC triggers on the upstream tree, the functional tests pass and the intent
    tests fail there; with the upstream fix every check passes (tests/helpers/verified.py)."""
    verdict = verified(_folder(name), TEMPLATES / name / "fix.patch")
    assert verdict.verdict["problems"] == [] and verdict.verdict["warnings"] == []
    pocs = [e["poc"] for e in verdict.verdict["expectations"] if e["check"] == "pocs" and e["tree"] == "unfixed"]
    assert len(pocs) == POCS[name]


# -- test_patch at every level ------------------------------------------------------------


@pytest.mark.parametrize("fixed", [False, True], ids=["unfixed", "fixed"])
@pytest.mark.parametrize("level", LEVELS)
def test_exact_text(real: Runs, level: str, fixed: bool) -> None:
    name = real.folder.name
    text = real.texts[(level, fixed)]
    assert same_run(text) == expected(level, fixed, POCS[name], poc_log(name))


@pytest.mark.parametrize("name", sorted(REAL_TASKS))
def test_task_folder_holds_the_task_and_nothing_of_the_answer(name: str) -> None:
    # Every file of a task folder but its hidden parts is a support file the checks (so
    # the agent's own code) can read: the reference fix and the expected logs stay out.
    folder = _folder(name)
    assert sorted(p.name for p in folder.iterdir()) == [
        "build.sh",
        "functional.sh",
        "intent.diff",
        "poc.sh",
        "pocs",
        "src",
        "task.toml",
    ]
    assert (folder / "src" / REAL_TASKS_CHANGED[name]).is_file()


def test_task_check_names_the_support_scripts_and_the_hidden_parts() -> None:
    folder = _folder("giflib")
    proc = run_ssebench("task", "check", str(folder / "task.toml"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n\n")[-1] == (
        "What checks see at SSE_TASK_DIR (in the sandbox; with --no-sandbox it is the task folder, nothing hidden):\n"
        "  support files (read-only, every check): build.sh, functional.sh, poc.sh\n"
        "  hidden from every check: task.toml (the task file), intent.diff (applied by the daemon from a pipe, "
        "never a file)\n"
        "  hidden except in its own PoC run: pocs/local-map-index.gif, pocs/global-map-index.gif\n"
        "  not there: src (the source tree: checks get their copy of it as SSE_TREE)\n"
    )


# -- grading ------------------------------------------------------------------------------


def _grade(folder: Path, *tree: str) -> dict[str, Any]:
    proc = run_ssebench("grade", "--task", str(folder / "task.toml"), *tree, "--json", timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _states(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (c["check"], c["state"], c.get("pocs_passed"), c.get("pocs_total"), c["covered_by_intent"], c["timed_out"])
        for c in data["checks"]
    ]


@pytest.mark.parametrize("name", sorted(REAL_TASKS))
def test_grade_unfixed_fails_on_the_pocs_and_the_fix_s_tests(name: str) -> None:
    folder = _folder(name)
    data = _grade(folder)
    total = POCS[name]
    assert (data["task"], data["tree"], data["passed"]) == (_task_id(folder), str(folder / "src"), False)
    assert _states(data) == [
        ("build", "passed", None, None, False, False),
        ("pocs", "failed", 0, total, False, False),
        ("intent", "failed", None, None, False, False),
        ("functional", "passed", None, None, False, False),
    ]
    checks = {c["check"]: c for c in data["checks"]}
    assert poc_log(name).endswith(same_run(checks["pocs"]["log_tail"]))
    assert checks["intent"]["log_tail"].splitlines()[-1] == INTENT_LAST_LINE[name]


@pytest.mark.parametrize("name", sorted(REAL_TASKS))
def test_grade_fixed_passes(name: str, tmp_path: Path) -> None:
    folder = _folder(name)
    tree = fixed_tree(name, tmp_path / "fixed")
    data = _grade(folder, "--tree", str(tree))
    total = POCS[name]
    assert (data["task"], data["tree"], data["passed"]) == (_task_id(folder), str(tree), True)
    assert _states(data) == [
        ("build", "passed", None, None, False, False),
        ("pocs", "passed", total, total, False, False),
        ("intent", "passed", None, None, False, False),
        ("functional", "passed", None, None, True, False),
    ]


# -- without the network --------------------------------------------------------------


def test_no_network_fails_in_ci_and_skips_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A mirror nobody serves (a closed port on this machine): apt-get update fetches nothing.
    with pytest.raises(FetchError) as fetch:
        orig_tarball("cjson", "1.7.15", tmp_path, mirror="http://127.0.0.1:9/debian")
    assert str(fetch.value) == (
        "apt-get update could not fetch bookworm's source index from http://127.0.0.1:9/debian (no network?): "
        "W: Failed to fetch http://127.0.0.1:9/debian/dists/bookworm/InRelease  "
        "Could not connect to 127.0.0.1:9 (127.0.0.1). - connect (111: Connection refused)"
    )
    reason = f"the cjson task's upstream tarball could not be fetched: {fetch.value}"
    for ci, outcome in (("true", pytest.fail.Exception), ("", pytest.skip.Exception)):
        monkeypatch.setenv("CI", ci)
        with pytest.raises(outcome) as raised:
            unavailable(reason)
        assert str(raised.value) == reason


def _task_id(folder: Path) -> str:
    line = next(x for x in (folder / "task.toml").read_text().splitlines() if x.startswith("id = "))
    return line.split('"')[1]
