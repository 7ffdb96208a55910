"""Incremental checks (workspace.py + runner): one build mirror, fresh views, sources only.

Real runner, real make and cc, real sandbox where the machine allows one (every test
runs with the sandbox off, and again with it on, where overlays are the views).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest

from ssebench.daemon import sandbox as sb
from ssebench.daemon import sandbox_setup
from ssebench.daemon.runner import Runner
from ssebench.daemon.workspace import SourceStore
from ssebench.difficulty import Check
from ssebench.task import load_task
from tests.helpers.tasks import make_task

pytestmark = pytest.mark.timeout(120)

MAKEFILE = """\
prog: a.o b.o
\tcc -o prog a.o b.o
%.o: %.c
\tcc -c $< -o $@
test: prog
\t./prog
"""
A_C = "#include <stdio.h>\nvoid b(void);\nint main(void) { b(); return 0; }\n"
B_C = '#include <stdio.h>\nvoid b(void) { puts("b one"); }\n'
ALL = [Check.BUILD, Check.POCS, Check.INTENT, Check.FUNCTIONAL]


def _sandbox(mode: str) -> sb.Sandbox:
    if mode == "off":
        return sb.Sandbox(None)
    try:
        return sandbox_setup.detect()
    except sb.SandboxUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(params=["off", "sandbox"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


class Engine:
    """One Runner (one daemon's state) on a task; ``run`` does one call."""

    def __init__(self, tmp: Path, mode: str, **task_kw: object) -> None:
        self.files = make_task(tmp / "task", **task_kw)  # type: ignore[arg-type]
        self.tree = self.files.tree
        self.workspace = tmp / "ws"
        self.workspace.mkdir()
        self.runner = Runner(
            load_task(self.files.file), self.tree, self.workspace, heartbeat=3600, sandbox=_sandbox(mode)
        )

    def run(self, checks: list[Check] | None = None) -> dict[str, tuple[str, str]]:
        """One call: {check: (state, log text)}."""

        async def go() -> dict[str, tuple[str, str]]:
            run = await self.runner.prepare()
            async for _ in self.runner.execute(run, checks or ALL):
                pass
            return {c.value: (r.state, r.log.read_text() if r.log else "") for c, r in run.results.items()}

        return asyncio.run(go())


def compiled(log: str) -> list[str]:
    return sorted(line.split()[2] for line in log.splitlines() if line.startswith("cc -c "))


def test_repeat_call_rebuilds_only_the_changed_object(tmp_path, mode):
    e = Engine(
        tmp_path,
        mode,
        build="make prog",
        functional="make -q prog && ./prog",
        tree_files={"Makefile": MAKEFILE, "a.c": A_C, "b.c": B_C},
    )
    first = e.run()
    assert first["build"][0] == "passed"
    assert compiled(first["build"][1]) == ["a.c", "b.c"]
    e.run()  # nothing changed: nothing is compiled
    (e.tree / "b.c").write_text(B_C.replace("b one", "b two"))
    third = e.run()
    assert third["build"][0] == "passed"
    assert compiled(third["build"][1]) == ["b.c"]
    assert third["functional"] == ("passed", "b two\n\n")


def test_a_touched_file_is_a_change_make_re_decides(tmp_path):
    # Was "a touch rebuilds nothing": a fresh daemon gives make the agent's mtimes, so a
    # touched file must be newer than what was built from it here too (issue 17).
    e = Engine(tmp_path, "off", build="make prog", tree_files={"Makefile": MAKEFILE, "a.c": A_C, "b.c": B_C})
    e.run([Check.BUILD])
    os.utime(e.tree / "a.c")  # same content, a new mtime (now)
    second = e.run([Check.BUILD])
    assert second["build"][0] == "passed"
    assert compiled(second["build"][1]) == ["a.c"]
    assert e.runner.last_build == "incremental"


def test_an_mtime_in_the_future_builds_clean(tmp_path):
    e = Engine(tmp_path, "off", build="make prog", tree_files={"Makefile": MAKEFILE, "a.c": A_C, "b.c": B_C})
    e.run([Check.BUILD])
    later = time.time() + 3600
    os.utime(e.tree / "b.c", (later, later))
    second = e.run([Check.BUILD])
    assert second["build"][0] == "passed"
    assert compiled(second["build"][1]) == ["a.c", "b.c"]
    assert e.runner.last_build == "clean: 'b.c' has an mtime in the future"


def test_a_planted_object_never_reaches_the_binary(tmp_path, mode):
    e = Engine(
        tmp_path,
        mode,
        build="make prog",
        functional="./prog",
        tree_files={"Makefile": MAKEFILE, "a.c": A_C, "b.c": B_C},
    )
    planted = tmp_path / "planted.c"
    planted.write_text('#include <stdio.h>\nvoid b(void) { puts("PLANTED"); }\n')
    # Newer than b.c, so make would take it in place; also as a library and a renamed ELF.
    subprocess.run(["cc", "-c", str(planted), "-o", str(e.tree / "b.o")], check=True)
    subprocess.run(["cc", "-c", str(planted), "-o", str(e.tree / "b.notobj")], check=True)
    assert e.run()["functional"] == ("passed", "b one\n\n")
    store = SourceStore(e.tree, tmp_path / "store")
    assert sorted(store.sync().manifest) == ["Makefile", "a.c", "b.c"]


def test_a_deleted_file_disappears_from_the_mirror(tmp_path, mode):
    e = Engine(
        tmp_path,
        mode,
        build="ls extra.txt sub/inner.txt 2>&1; true",
        tree_files={"extra.txt": "x\n", "sub/inner.txt": "y\n", "keep.txt": "k\n"},
    )
    assert "No such file" not in e.run([Check.BUILD])["build"][1]
    (e.tree / "extra.txt").unlink()
    (e.tree / "sub" / "inner.txt").unlink()
    (e.tree / "sub").rmdir()
    log = e.run([Check.BUILD])["build"][1]
    assert "'extra.txt': No such file" in log and "'sub/inner.txt': No such file" in log


def test_a_failing_incremental_build_is_retried_clean(tmp_path, mode):
    # A build that breaks on its own leftovers: the incremental build fails, a clean one passes.
    e = Engine(
        tmp_path,
        mode,
        build='if [ -e leftover ]; then echo "stale state" >&2; exit 1; fi; touch leftover; echo "built $(cat v)"',
        tree_files={"v": "1\n"},
    )
    assert e.run([Check.BUILD])["build"] == ("passed", "built 1\n\n")
    (e.tree / "v").write_text("2\n")
    assert e.run([Check.BUILD])["build"] == ("passed", "built 2\n\n")


def test_a_build_that_also_fails_clean_reports_the_clean_log(tmp_path):
    e = Engine(
        tmp_path,
        "off",
        build='test "$(cat v)" = 1 || { echo "broken: $(cat v)" >&2; exit 1; }',
        tree_files={"v": "1\n"},
    )
    assert e.run([Check.BUILD])["build"][0] == "passed"
    (e.tree / "v").write_text("2\n")
    assert e.run([Check.BUILD])["build"] == ("failed", "\nbroken: 2\n")
    # A first (clean) build that fails is not retried.
    e2 = Engine(tmp_path / "two", "off", build="echo no >&2; exit 1")
    assert e2.run([Check.BUILD])["build"] == ("failed", "\nno\n")


def test_functional_and_pocs_do_not_rebuild(tmp_path, mode):
    # make -q fails if anything would be remade; the binary must be the one the build made.
    e = Engine(
        tmp_path,
        mode,
        build="make prog && cp prog prog.built",
        functional="make -q prog && cmp prog prog.built && echo up-to-date",
        pocs=["fixed"],
        poc_run="make -q prog && cmp prog prog.built",
        tree_files={"Makefile": MAKEFILE, "a.c": A_C, "b.c": B_C},
    )
    r = e.run([Check.BUILD, Check.POCS, Check.FUNCTIONAL])
    assert r["pocs"][0] == "passed"
    assert r["functional"] == ("passed", "up-to-date\n\n")


def test_views_are_isolated_and_the_mirror_is_never_changed_by_checks(tmp_path, mode):
    e = Engine(
        tmp_path,
        mode,
        build="test ! -e from-check && echo built > artefact",
        pocs=["fixed"],
        poc_run="test ! -e from-check && echo poc > from-check",
        intent="test ! -e from-check && echo intent > from-check && rm artefact && exit 1",
        functional="test ! -e from-check && test ! -e intent-added.txt && cat artefact && echo functional > from-check",
    )
    for _ in range(2):  # the second build runs in the same mirror: no check's write is there
        r = e.run()
        assert {k: v[0] for k, v in r.items()} == {
            "build": "passed",
            "pocs": "passed",
            "intent": "failed",
            "functional": "passed",
        }
        assert r["functional"][1] == "built\n\n"
    assert not (e.runner.mirror.path / "from-check").exists()
    assert (e.runner.mirror.path / "artefact").exists()


def test_the_agents_tree_is_never_written(tmp_path, mode):
    e = Engine(
        tmp_path,
        mode,
        build="make prog && echo x > new-file && rm -f a.c",
        functional="echo y >> b.c",
        intent="touch z",
        pocs=["fixed"],
        poc_run="rm -f Makefile",
        tree_files={"Makefile": MAKEFILE, "a.c": A_C, "b.c": B_C},
    )

    def state() -> dict[str, tuple[int, int, bytes]]:
        return {p.name: (p.stat().st_mtime_ns, p.stat().st_mode, p.read_bytes()) for p in e.tree.iterdir()}

    before = state()
    e.run()
    e.run()
    assert state() == before


def test_a_queued_call_tests_the_tree_as_it_was_when_it_arrived(tmp_path):
    e = Engine(tmp_path, "off", build="cat v", tree_files={"v": "first\n"})

    async def go() -> list[str]:
        one = await e.runner.prepare()
        (e.tree / "v").write_text("second\n")
        two = await e.runner.prepare()
        logs = []
        for run in (one, two):
            async for _ in e.runner.execute(run, [Check.BUILD]):
                pass
            logs.append(run.results[Check.BUILD].log.read_text())  # type: ignore[union-attr]
        return logs

    assert asyncio.run(go()) == ["first\n\n", "second\n\n"]


def test_sources_rule(tmp_path):
    tree = tmp_path / "tree"
    (tree / ".git").mkdir(parents=True)
    (tree / ".git" / "config").write_text("[core]\n")
    (tree / "lib").mkdir()
    for name in ("x.o", "lib/libx.a", "lib/libx.so.1", "x.lo", "x.la"):
        (tree / name).write_text("not really\n")
    (tree / "Makefile").write_text("all:\n")
    (tree / "ld.so.conf").write_text("not an output\n")
    (tree / "link").symlink_to("Makefile")
    (tree / "dangling").symlink_to("/nowhere")
    os.mkfifo(tree / "fifo")
    (tree / "empty").mkdir()
    manifest = SourceStore(tree, tmp_path / "store").sync().manifest
    assert sorted(manifest) == ["Makefile", "dangling", "empty", "ld.so.conf", "lib", "link"]
    assert manifest["link"].data == "Makefile"


def test_an_object_committed_in_git_is_a_source(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "vendor.a").write_bytes(b"!<arch>\nprebuilt")
    (tree / "stray.o").write_bytes(b"\x7fELF planted")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    for argv in (["git", "init", "-q"], ["git", "add", "vendor.a"], ["git", "commit", "-qm", "v"]):
        subprocess.run(argv, cwd=tree, env=env, check=True)
    assert sorted(SourceStore(tree, tmp_path / "store").sync().manifest) == ["vendor.a"]


def test_a_build_that_removed_a_changed_sources_folder_gets_a_fresh_mirror(tmp_path):
    e = Engine(tmp_path, "off", build="cat sub/x; rm -rf sub", tree_files={"sub/x": "one\n"})
    assert e.run([Check.BUILD])["build"] == ("passed", "one\n\n")
    (e.tree / "sub" / "x").write_text("two\n")
    assert e.run([Check.BUILD])["build"] == ("passed", "two\n\n")


def test_a_changed_file_is_the_builds_own_as_in_a_fresh_mirror(tmp_path):
    """The mirror's update writes changed files as the checks' uid (no walk of the whole
    mirror after it): the build may write them, as it may every file of a fresh mirror."""
    box = _sandbox("sandbox")
    if box.check_user is None:
        pytest.skip("the checks run as the daemon's own uid here")
    build = "make prog && test -w b.c && test -w a.c && echo writable"
    e = Engine(tmp_path, "sandbox", build=build, tree_files={"Makefile": MAKEFILE, "a.c": A_C, "b.c": B_C})
    assert e.run([Check.BUILD])["build"][0] == "passed"
    (e.tree / "b.c").write_text(B_C.replace("b one", "b two"))
    os.chmod(e.tree / "b.c", 0o4755)  # a set-uid bit: dropped, as the chown of a fresh mirror drops it
    again = e.run([Check.BUILD])
    assert e.runner.last_build.startswith("clean")  # a mode changed
    (e.tree / "b.c").write_text(B_C.replace("b one", "b three"))
    third = e.run([Check.BUILD])
    assert (again["build"][0], third["build"][0], e.runner.last_build) == ("passed", "passed", "incremental")
    assert "writable" in third["build"][1] and compiled(third["build"][1]) == ["b.c"]
    mirror = e.runner.workspace.mirror.path
    owners = {p.relative_to(mirror).as_posix(): p.lstat().st_uid for p in [mirror, *mirror.rglob("*")]}
    assert set(owners.values()) == {box.check_user[0]}, owners
    assert (mirror / "b.c").stat().st_mode & 0o7777 == 0o755
