"""The daemon over its real Unix socket: checks, order and skip rules, logs, levels."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from tests.helpers.tasks import ADD_FILE_DIFF

LEVEL_NAMES = {0: "FULL_ASSISTANCE", 1: "NO_INTENT_TEST", 2: "NO_FUTURE_TEST", 3: "BUILD_ONLY", 4: "NO_BUILD"}
ENABLED = {
    0: ["build", "pocs", "intent", "functional"],
    1: ["build", "pocs", "functional"],
    2: ["build", "functional"],
    3: ["build"],
    4: [],
}
ALL = ["build", "pocs", "intent", "functional"]


def states(result: dict) -> dict[str, str]:
    return {k: v["state"] for k, v in result.items() if not k.startswith("_")}


def tree_hash(root: Path) -> str:
    """Names, modes, symlink targets and contents of everything under *root*."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = Path(dirpath, name)
            st = path.lstat()
            h.update(f"{path.relative_to(root)}\0{st.st_mode:o}\0".encode())
            if stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(path).encode())
            elif stat.S_ISREG(st.st_mode):
                h.update(path.read_bytes())
    return h.hexdigest()


# -- health and the public task view ------------------------------------------------------


def test_health(task_factory, daemon_factory):
    d = daemon_factory(task_factory().file, difficulty="3")
    assert d.get("/health").json() == {
        "status": "ok",
        "version": "0.1.0",
        "difficulty": 3,
        "busy": False,
        "queued": 0,
        "sandbox": "bwrap 0.11.0",
        "build_trace": "not probed yet",
        "builds": {"incremental": 0, "clean": 0, "unchanged": 0, "last": ""},
        "last_run": {},
    }


def test_health_says_where_the_last_runs_time_went(task_factory, daemon_factory):
    # Issue 34: each phase measured where it runs (benchmarks/bench_projects.py reads them).
    t = task_factory(build="sleep 0.3", pocs=["fixed"], functional="sleep 0.2")
    d = daemon_factory(t.file, difficulty="0")
    assert d.result()["build"]["state"] == "passed"
    phases = d.get("/health").json()["last_run"]
    assert list(phases) == [
        "snapshot",
        "build: sync",
        "build: command",
        "build: trace parse",
        "build: digests",
        "build",
        "pocs: view",
        "pocs",
        "functional: view",
        "functional",
        "report",
    ]
    assert phases["build: command"] >= 0.3 and phases["build"] >= phases["build: command"]
    assert phases["functional"] >= 0.2 + phases["functional: view"]
    d.result()  # nothing changed: the last build's answer, no command run
    again = d.get("/health").json()["last_run"]
    assert "build: command" not in again and again["build"] < 0.3


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
def test_task_view_shows_only_what_the_level_allows(task_factory, daemon_factory, level):
    t = task_factory(
        task_id="view-1",
        description="Fix the parser.",
        pocs=["SECRET-POC-1", "SECRET-POC-2"],
        intent="true",
        intent_diff=ADD_FILE_DIFF,
    )
    d = daemon_factory(t.file, difficulty=str(level))
    r = d.get("/task")
    view = r.json()
    expected = {
        "id": "view-1",
        "description": "Fix the parser.",
        "difficulty": {"level": level, "name": LEVEL_NAMES[level]},
        "checks": ENABLED[level],
        "withheld": [c for c in ALL if c not in ENABLED[level]],
    }
    if level in (0, 1):
        expected["poc_count"] = 2
    assert view == expected
    for secret in ("SECRET-POC", "poc-1", "pocs/", "intent.diff", "intent-added", "task.toml", str(t.dir)):
        assert secret not in r.text


def test_task_view_lists_only_checks_the_task_has(task_factory, daemon_factory):
    t = task_factory(functional=None)
    view = daemon_factory(t.file, difficulty="0").get("/task").json()
    assert view["checks"] == ["build", "pocs"]
    assert view["poc_count"] == 0
    assert view["withheld"] == []


# -- each check passing and failing --------------------------------------------------------


def test_everything_passes_at_level_0(task_factory, daemon_factory):
    t = task_factory(pocs=["fixed", "fixed"], intent="test -f intent-added.txt", functional="false")
    d = daemon_factory(t.file, difficulty="0")
    events = d.run()
    kinds = [e["event"] for e in events if e["event"] != "heartbeat"]  # heartbeats: every 0.2 s here
    assert kinds == [
        "started",
        "check_started",
        "check_finished",
        "check_started",
        "check_finished",
        "check_started",
        "check_finished",
        "check_finished",
        "result",
    ]
    result = events[-1]
    assert result["difficulty"] == 0
    assert [c["check"] for c in result["checks"]] == ALL
    build, pocs, intent, functional = result["checks"]
    assert build == {
        "check": "build",
        "state": "passed",
        "timed_out": False,
        "elapsed": build["elapsed"],
        "covered_by_intent": False,
        "has_log": True,
        "log_bytes": 1,
    }
    assert pocs["pocs_passed"] == 2 and pocs["pocs_total"] == 2 and pocs["state"] == "passed"
    assert intent["state"] == "passed"
    # Functional ("false") would fail: intent passing covers it, so it never ran.
    assert functional == {
        "check": "functional",
        "state": "passed",
        "timed_out": False,
        "elapsed": 0.0,
        "covered_by_intent": True,
        "has_log": False,
        "log_bytes": 0,
    }
    assert events[-2] == {"event": "check_finished", **functional}


def test_failed_build_stops_everything(task_factory, daemon_factory):
    t = task_factory(
        build="echo compiling; echo 'error: boom' >&2; exit 3", pocs=["fixed"], intent="true", functional="true"
    )
    d = daemon_factory(t.file, difficulty="0")
    r = d.result()
    assert states(r) == {"build": "failed", "pocs": "not_run", "intent": "not_run", "functional": "not_run"}
    assert r["pocs"]["has_log"] is False
    assert d.log(r["_run"], "build") == "compiling\n\nerror: boom\n"
    assert d.get(f"/runs/{r['_run']}/logs/pocs").status_code == 404


def test_pocs_run_in_order_and_stop_at_the_first_that_triggers(task_factory, daemon_factory, tmp_path):
    order = tmp_path / "order.txt"
    t = task_factory(
        build="touch built.flag",
        pocs=["fixed", "fixed", "crash", "fixed"],
        poc_run='test -f built.flag && basename "$SSE_POC" >> "$ORDER_FILE" && '
        'echo "ran $(basename "$SSE_POC")" && test "$(cat "$SSE_POC")" = fixed',
        intent="true",
        functional="true",
    )
    # Without the sandbox: the checks write ORDER_FILE on the host, which a sandbox forbids.
    d = daemon_factory(t.file, difficulty="0", env={"ORDER_FILE": str(order)}, args=("--no-sandbox",))
    r = d.result()
    assert order.read_text() == "poc-1\npoc-2\npoc-3\n"
    assert r["pocs"]["state"] == "failed"
    assert (r["pocs"]["pocs_passed"], r["pocs"]["pocs_total"]) == (2, 4)
    # Later checks still run; the log is the one of the PoC that still triggers.
    assert states(r) == {"build": "passed", "pocs": "failed", "intent": "passed", "functional": "passed"}
    assert d.log(r["_run"], "pocs") == "ran poc-3\n\n"


def test_pocs_and_functional_run_in_views_of_the_built_tree(task_factory, daemon_factory):
    # Each later check sees what the build made, and none sees another's side effects.
    t = task_factory(
        build="echo built > artefact",
        pocs=["fixed"],
        functional='test "$(cat artefact)" = built && test ! -e poc-was-here',
        poc_run='test "$(cat artefact)" = built && touch poc-was-here',
    )
    r = daemon_factory(t.file, difficulty="1").result()
    assert states(r) == {"build": "passed", "pocs": "passed", "functional": "passed"}


def test_task_without_pocs_passes_that_step(task_factory, daemon_factory):
    t = task_factory(pocs=None)
    r = daemon_factory(t.file, difficulty="0").result()
    assert r["pocs"] == {
        "check": "pocs",
        "state": "passed",
        "timed_out": False,
        "elapsed": r["pocs"]["elapsed"],
        "pocs_passed": 0,
        "pocs_total": 0,
        "covered_by_intent": False,
        "has_log": False,
        "log_bytes": 0,
    }
    assert list(states(r)) == ["build", "pocs", "functional"]  # no [intent]: left out


def test_checks_the_task_lacks_are_left_out(task_factory, daemon_factory):
    t = task_factory(functional=None, intent=None)
    r = daemon_factory(t.file, difficulty="0").result()
    assert states(r) == {"build": "passed", "pocs": "passed"}


def test_intent_failing_runs_functional_in_a_fresh_view(task_factory, daemon_factory):
    t = task_factory(
        build="touch built.flag",
        intent="test -f intent-added.txt && echo intent-ran && exit 1",
        functional="test ! -e intent-added.txt && test -e built.flag && echo functional-ran",
    )
    d = daemon_factory(t.file, difficulty="0")
    r = d.result()
    assert states(r) == {"build": "passed", "pocs": "passed", "intent": "failed", "functional": "passed"}
    assert r["functional"]["covered_by_intent"] is False
    assert d.log(r["_run"], "intent") == "intent-ran\n\n"
    assert d.log(r["_run"], "functional") == "functional-ran\n\n"


def test_functional_failing(task_factory, daemon_factory):
    t = task_factory(functional="echo 'FAIL: test_name' >&2; exit 1")
    d = daemon_factory(t.file, difficulty="2")
    r = d.result()
    assert states(r) == {"build": "passed", "functional": "failed"}
    assert d.log(r["_run"], "functional") == "\nFAIL: test_name\n"


def test_functional_runs_when_intent_is_withheld(task_factory, daemon_factory, tmp_path):
    t = task_factory(intent="true", functional="echo functional-ran")
    d = daemon_factory(t.file, difficulty="1")
    r = d.result()
    assert states(r) == {"build": "passed", "pocs": "passed", "functional": "passed"}
    assert d.log(r["_run"], "functional") == "functional-ran\n\n"


def test_intent_diff_that_does_not_apply(task_factory, daemon_factory):
    bad_diff = "diff --git a/missing.c b/missing.c\n--- a/missing.c\n+++ b/missing.c\n@@ -1 +1 @@\n-old\n+new\n"
    t = task_factory(intent="echo never", intent_diff=bad_diff, functional="echo functional-ran")
    d = daemon_factory(t.file, difficulty="0")
    events = d.run()
    assert all(e["event"] != "error" for e in events)
    r = {c["check"]: c for c in events[-1]["checks"]}
    assert r["intent"]["state"] == "failed" and r["intent"]["timed_out"] is False
    assert r["functional"]["state"] == "passed"
    log = d.log(events[-1]["run_id"], "intent")
    assert log == "\nerror: missing.c: No such file or directory\n"


def test_intent_diff_applies_to_a_tree_that_is_a_git_repository(task_factory, daemon_factory):
    import subprocess

    t = task_factory(intent='test "$(cat intent-added.txt)" = added')
    subprocess.run(["git", "init", "-q", str(t.tree)], check=True)
    r = daemon_factory(t.file, difficulty="0").result()
    assert r["intent"]["state"] == "passed"


# -- the command's environment, logs ----------------------------------------------------------


def test_environment_and_stdin_without_sandbox(task_factory, daemon_factory):
    t = task_factory(
        build='test "$SSE_TREE" = "$PWD" && test "$SSE_TASK_DIR" = "$EXPECT_TASK_DIR" && '
        'test "$SSE_TREE" != "$EXPECT_TREE" && test -z "${SSE_POC+x}" && test -z "$(cat)"',
        pocs=["fixed"],
        poc_run='test "$SSE_POC" = "$EXPECT_TASK_DIR/pocs/poc-1" && test "$SSE_TREE" = "$PWD" && test -z "$(cat)"',
        functional='test "$SSE_TREE" = "$PWD" && test -z "${SSE_POC+x}" && test -z "$(cat)"',
    )
    d = daemon_factory(
        t.file, difficulty="1", env={"EXPECT_TASK_DIR": str(t.dir), "EXPECT_TREE": str(t.tree)}, args=("--no-sandbox",)
    )
    assert states(d.result()) == {"build": "passed", "pocs": "passed", "functional": "passed"}


def test_environment_and_stdin_in_the_sandbox(task_factory, daemon_factory):
    # The sandbox's fixed paths: the tree at /sse/tree, an empty task folder at /sse/task
    # that holds only the PoC being run, at its place relative to the task folder.
    t = task_factory(
        build='test "$SSE_TREE" = /sse/tree && test "$PWD" = /sse/tree && test "$SSE_TASK_DIR" = /sse/task && '
        'test -z "$(ls -A /sse/task)" && test -z "${SSE_POC+x}" && test -z "$(cat)"',
        pocs=["fixed"],
        poc_run='test "$SSE_POC" = /sse/task/pocs/poc-1 && test "$(cat "$SSE_POC")" = fixed && '
        'test "$(cd /sse/task && find . -type f)" = ./pocs/poc-1 && test -z "$(cat)"',
        functional='test "$SSE_TREE" = "$PWD" && test -z "$(ls -A /sse/task)" && test -z "${SSE_POC+x}" && test -z "$(cat)"',
    )
    d = daemon_factory(t.file, difficulty="1")
    assert states(d.result()) == {"build": "passed", "pocs": "passed", "functional": "passed"}


def test_log_is_stdout_blank_line_stderr(task_factory, daemon_factory):
    t = task_factory(build="printf 'out1\\nout2'; printf 'err1\\n' >&2")
    d = daemon_factory(t.file, difficulty="3")
    r = d.result()
    resp = d.get(f"/runs/{r['_run']}/logs/build")
    assert resp.headers["content-type"] == "text/plain; charset=utf-8"
    assert resp.text == "out1\nout2\n\nerr1\n"
    assert r["build"]["log_bytes"] == len(resp.content) == int(resp.headers["content-length"])


def test_heartbeats_while_a_check_runs(task_factory, daemon_factory):
    t = task_factory(build="sleep 0.75")
    events = daemon_factory(t.file, difficulty="3", heartbeat=0.2).run()
    beats = [e for e in events if e["event"] == "heartbeat"]
    assert len(beats) >= 2
    assert all(b["check"] == "build" for b in beats)
    assert [b["elapsed"] for b in beats] == sorted(b["elapsed"] for b in beats)


def test_requesting_a_subset(task_factory, daemon_factory):
    t = task_factory(pocs=["crash"], intent="true", functional="true")
    d = daemon_factory(t.file, difficulty="0")
    r = d.result(["functional"])
    assert states(r) == {"build": "passed", "functional": "passed"}  # build always runs first
    r = d.result(["pocs"])
    assert states(r) == {"build": "passed", "pocs": "failed"}
    events = d.run([])
    assert events[-1]["checks"] == []


# -- levels ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
def test_withheld_checks_get_403(task_factory, daemon_factory, level):
    t = task_factory(pocs=["fixed"], intent="true")
    d = daemon_factory(t.file, difficulty=str(level))
    c = d.client()
    for check in ALL:
        run = c.post("/runs", json={"checks": [check]})
        log = c.get(f"/runs/r-1-00000000/logs/{check}")
        if check in ENABLED[level]:
            assert run.status_code == 200
            assert log.status_code == 404
        else:
            error = {
                "error": f"check '{check}' is not available at difficulty level {level} ({LEVEL_NAMES[level]})",
                "level": level,
                "name": LEVEL_NAMES[level],
            }
            assert (run.status_code, run.json()) == (403, error)
            assert (log.status_code, log.json()) == (403, error)


@pytest.mark.slow
def test_default_run_is_every_enabled_check(task_factory, daemon_factory):
    t = task_factory(pocs=["fixed"], intent="true", functional="true")
    for level in range(5):
        r = daemon_factory(t.file, difficulty=str(level)).result()
        assert list(states(r)) == ENABLED[level]


def test_logs_of_withheld_checks_are_refused_even_for_a_real_run(task_factory, daemon_factory):
    t = task_factory(pocs=["crash"], intent="true")
    d = daemon_factory(t.file, difficulty="2")
    r = d.result()
    assert d.get(f"/runs/{r['_run']}/logs/pocs").status_code == 403
    assert d.get(f"/runs/{r['_run']}/logs/functional").status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"{not json", 400, "the request body is not valid JSON"),
        (b"[]", 400, 'the request body must be an object with only the key "checks"'),
        (b'{"checks": ["build"], "level": 0}', 400, 'the request body must be an object with only the key "checks"'),
        (b'{"checks": "build"}', 400, '"checks" must be an array of check names'),
        (b'{"checks": ["lint"]}', 400, "unknown check 'lint' (known: build, pocs, intent, functional)"),
    ],
)
def test_bad_run_requests(task_factory, daemon_factory, body, status, message):
    d = daemon_factory(task_factory().file, difficulty="0")
    r = d.client().post("/runs", content=body)
    assert (r.status_code, r.json()) == (status, {"error": message})


def test_unknown_paths_and_runs(task_factory, daemon_factory):
    d = daemon_factory(task_factory().file, difficulty="0")
    c = d.client()
    assert c.get("/nope").status_code == 404
    assert c.get("/nope").json() == {"error": "Not Found"}
    r = c.get("/runs/r-9-deadbeef/logs/build")
    assert (r.status_code, r.json()) == (404, {"error": "no such run (logs are kept for the most recent runs only)"})
    assert c.get("/runs").status_code == 405


# -- the agent's tree ----------------------------------------------------------------------------


def test_agents_tree_is_byte_identical_after_a_run(task_factory, daemon_factory):
    t = task_factory(
        tree_files={
            "main.c": "int main(void){return 0;}\n",
            "sub/data.bin": bytes(range(256)),
            "Makefile": "all:\n\techo built > out.o\n\trm -f main.c\n",
        },
        build="make && chmod 000 sub && echo x >> Makefile",
        pocs=["fixed"],
        poc_run="rm -rf ./*; true",
        intent="echo more >> intent-added.txt",
        functional="touch new-file",
    )
    (t.tree / "link").symlink_to("main.c")
    before = tree_hash(t.tree)
    r = daemon_factory(t.file, difficulty="0", tree=t.tree).result()
    assert states(r) == {"build": "passed", "pocs": "passed", "intent": "passed", "functional": "passed"}
    assert tree_hash(t.tree) == before
    # Intent covered functional; run functional too, through level 1.
    r = daemon_factory(t.file, difficulty="1").result()
    assert r["functional"]["covered_by_intent"] is False
    assert tree_hash(t.tree) == before


def test_tree_option_and_tree_as_of_the_request(task_factory, daemon_factory, tmp_path):
    t = task_factory(build='echo "version $(cat VERSION)"')
    other = tmp_path / "agent-tree"
    other.mkdir()
    (other / "VERSION").write_text("1")
    d = daemon_factory(t.file, difficulty="3", tree=other)
    r1 = d.result()
    (other / "VERSION").write_text("2")
    r2 = d.result()
    assert d.log(r1["_run"], "build") == "version 1\n\n"
    assert d.log(r2["_run"], "build") == "version 2\n\n"


def test_socket_is_private(task_factory, daemon_factory):
    d = daemon_factory(task_factory().file)
    assert stat.S_IMODE(d.socket.stat().st_mode) == 0o600
    d2 = daemon_factory(task_factory().file, args=["--socket-mode", "0660"])
    assert stat.S_IMODE(d2.socket.stat().st_mode) == 0o660


def test_result_json_is_one_object_per_line(task_factory, daemon_factory):
    d = daemon_factory(task_factory().file)
    with d.client().stream("POST", "/runs") as r:
        assert r.headers["content-type"] == "application/x-ndjson"
        raw = b"".join(r.iter_raw())
    lines = raw.split(b"\n")
    assert lines[-1] == b""
    assert all(isinstance(json.loads(line), dict) for line in lines[:-1])


# -- the shipped example task ---------------------------------------------------------------------


def test_demo_task_at_level_2_passes_what_it_can_see(demo_task, daemon_factory):
    r = daemon_factory(demo_task, difficulty="2").result()
    assert states(r) == {"build": "passed", "functional": "passed"}


def test_demo_task_at_level_0_shows_the_bug(demo_task, daemon_factory):
    d = daemon_factory(demo_task, difficulty="0")
    r = d.result()
    assert states(r) == {"build": "passed", "pocs": "failed", "intent": "failed", "functional": "passed"}
    assert (r["pocs"]["pocs_passed"], r["pocs"]["pocs_total"]) == (0, 2)
    log = d.log(r["_run"], "pocs")
    assert "ERROR: AddressSanitizer: stack-buffer-overflow" in log
    assert "FAIL tests/cases/long-name.in" in d.log(r["_run"], "intent")


def test_no_api_answer_names_a_hidden_part(task_factory, daemon_factory):
    t = task_factory(pocs=["SECRET-POC"], intent="true", intent_diff=ADD_FILE_DIFF)
    d = daemon_factory(t.file, difficulty="2")
    c = d.client()
    texts = [c.get("/health").text, c.get("/task").text]
    with c.stream("POST", "/runs") as r:
        texts.append(r.read().decode())
    run_id = json.loads(texts[-1].splitlines()[-1])["run_id"]
    for check in ALL + ["nope"]:
        texts.append(c.get(f"/runs/{run_id}/logs/{check}").text)
        texts.append(c.post("/runs", json={"checks": [check]}).text if check != "build" else "")
    texts += [c.get("/runs/r-0-0/logs/build").text, c.get("/nope").text, c.post("/runs", content=b"{").text]
    joined = "\n".join(texts)
    for secret in (str(t.dir), "SECRET-POC", "poc-1", "intent.diff", "intent-added", "task.toml"):
        assert secret not in joined
