"""The daemon's own file operations on what the agent controls (issue 18, part 1), and
workspace faults. Real daemons on real sockets, a real bwrap sandbox, real git.

- the agent swaps folders and files of its tree for symlinks (to the task folder, to a
  host folder with a secret) while the daemon snapshots it: nothing of them is read;
- a build replaces folders and files of the build mirror by symlinks to a host folder:
  the next call's mirror update writes, deletes, chmods nothing there;
- a hostile ``.git`` (promisor remote, remote helper, upload-pack, fsmonitor, hooks,
  config include, alternates): the daemon's git never runs the agent's program outside
  the sandbox;
- the workspace removed under the daemon, a 5 GiB sparse file, SIGTERM mid-snapshot.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.daemon import run_ssebench
from tests.helpers.tasks import make_task

pytestmark = pytest.mark.timeout(300)

LEVEL_CHECKS = {
    0: ["build", "pocs", "intent", "functional"],
    1: ["build", "pocs", "functional"],
    2: ["build", "functional"],
    3: ["build"],
}
# Prints everything the check's tree holds (so whatever the snapshot took is in the log).
DUMP = "ls -laR . 2>&1; find . -type f -not -path './.git/*' -exec cat {} + 2>&1; true"


def _git(tree: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(tree), "-c", "user.email=a@b", "-c", "user.name=n", *args], check=True, capture_output=True
    )


def _events_text(d: Any, events: list[dict[str, Any]]) -> str:
    """Every event line and every log of the run: all the agent gets to see."""
    text = json.dumps(events)
    last = events[-1]
    if last["event"] == "result":
        for c in last["checks"]:
            if c["has_log"]:
                text += d.log(last["run_id"], c["check"])
    return text


# -- a racing swapper ------------------------------------------------------------------------

SWAPPER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
RENAME_EXCHANGE = 2
def exchange(a, b):
    libc.renameat2(-100, a.encode(), -100, b.encode(), RENAME_EXCHANGE)
pairs = [p.split("=") for p in sys.argv[1:]]
end = time.monotonic() + 600
while time.monotonic() < end:
    for a, b in pairs:
        exchange(a, b)      # atomic: the folder and the symlink change places
    for a, b in pairs:
        exchange(a, b)
    # and the slow way: rename away, symlink in its place, back again
    a, b = pairs[0]
    try:
        os.rename(a, a + ".away")
        os.symlink(os.readlink(b) if os.path.islink(b) else b, a)
        os.unlink(a)
        os.rename(a + ".away", a)
    except OSError:
        pass
"""


class Swapper:
    """A process that keeps swapping folders/files of the tree with symlinks to secrets."""

    def __init__(self, tree: Path, task_dir: Path, host: Path) -> None:
        pairs = []
        for name, target in (
            ("sub", task_dir),
            ("deep/er", host),
            ("file.txt", host / "secret.txt"),
            ("pocsdir", task_dir / "pocs"),
        ):
            link = tree / f"{name}.alt"
            link.symlink_to(target)
            pairs.append(f"{tree / name}={link}")
        self.proc = subprocess.Popen([sys.executable, "-c", SWAPPER, *pairs])

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _race_task(root: Path) -> tuple[Any, dict[str, str], Path]:
    marks = {n: f"{n.upper()}-{secrets.token_hex(8)}" for n in ("poc1", "poc2", "intent", "taskfile", "host")}
    host = root / "host"
    host.mkdir()
    (host / "secret.txt").write_text(marks["host"] + "\n")
    (host / "nested").mkdir()
    (host / "nested" / "more.txt").write_text(marks["host"] + "\n")
    diff = (
        "diff --git a/intent-added.txt b/intent-added.txt\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/intent-added.txt\n@@ -0,0 +1 @@\n+{marks['intent']}\n"
    )
    task = make_task(
        root / "task",
        pocs=[marks["poc1"], marks["poc2"]],
        poc_run=DUMP,
        build=DUMP,
        functional=DUMP,
        intent=DUMP,
        intent_diff=diff,
        top_toml=f"# {marks['taskfile']}",
        tree_files={"sub/a.txt": "a\n", "deep/er/b.txt": "b\n", "file.txt": "f\n", "pocsdir/c.txt": "c\n"},
    )
    return task, marks, host


def _assert_clean(text: str, marks: dict[str, str], where: str, check: str | None = None) -> None:
    allowed = {"pocs": {"poc1"}, "intent": {"intent"}}.get(check or "", set())
    for name, mark in marks.items():
        if name not in allowed:
            assert mark not in text, f"{name} marker leaked into {where}"
    assert "diff --git" not in text, f"the intent diff leaked into {where}"


def _tree_state(root: Path) -> dict[str, tuple[int, int, bytes | str]]:
    """Every entry under *root*: (mode, mtime_ns, content or link target)."""
    out: dict[str, tuple[int, int, bytes | str]] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            st = path.lstat()
            body: bytes | str = (
                os.readlink(path) if path.is_symlink() else (path.read_bytes() if path.is_file() else "")
            )
            out[str(path.relative_to(root))] = (st.st_mode, st.st_mtime_ns, body)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_a_tree_swapped_for_symlinks_while_snapshotted_leaks_nothing(level, tmp_path, daemon_factory):
    task, marks, host = _race_task(tmp_path)
    host_before, task_before = _tree_state(host), _tree_state(task.dir)
    d = daemon_factory(task.file, difficulty=str(level))
    swapper = Swapper(task.tree, task.dir, host)
    try:
        for _ in range(4):
            events = d.run()
            assert events[-1]["event"] == "result", events
            last = events[-1]
            for c in last["checks"]:
                if c["has_log"]:
                    _assert_clean(d.log(last["run_id"], c["check"]), marks, f"the {c['check']} log", c["check"])
            _assert_clean(json.dumps(events), marks, "the result")
    finally:
        swapper.stop()
    _assert_clean(d.stderr(), marks, "the daemon's stderr")
    assert _tree_state(host) == host_before
    task_after = {k: v for k, v in _tree_state(task.dir).items() if not k.startswith("src")}
    assert task_after == {k: v for k, v in task_before.items() if not k.startswith("src")}
    assert d.result()["build"]["state"] == "passed"


@pytest.mark.slow
def test_a_tree_swapped_for_symlinks_under_grade_leaks_nothing(tmp_path):
    task, marks, host = _race_task(tmp_path)
    swapper = Swapper(task.tree, task.dir, host)
    try:
        for _ in range(2):
            done = run_ssebench("grade", "--task", str(task.file), "--json", env={"SSE_DIFFICULTY": "4"}, timeout=240)
            assert done.returncode in (0, 1), done.stderr
            _assert_clean(done.stdout + done.stderr, marks, "grade's output")
    finally:
        swapper.stop()


# -- symlinks a build leaves in the mirror ---------------------------------------------------

# The first build replaces folders and files of the mirror by symlinks to a host folder
# (absolute links: what the daemon would follow outside the sandbox).
PLANT = """\
if [ -f planted ]; then exit 0; fi
V={victim}
rm -rf d && ln -s $V d
rm -rf keep && ln -s $V keep
rm -f f.txt && ln -s $V/file.txt f.txt
rm -f m.txt && ln -s $V/mode.txt m.txt
rm -rf e/gone && ln -s $V e/gone
touch planted
"""


def _victim(root: Path) -> Path:
    victim = root / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "x.c").write_text("victim x\n")
    (victim / "file.txt").write_text("victim file\n")
    (victim / "mode.txt").write_text("victim mode\n")
    (victim / "y.c").write_text("victim y\n")
    (victim / "sub" / "z.c").write_text("victim z\n")
    (victim / "mode.txt").chmod(0o644)
    old = time.time_ns() - 3600 * 10**9
    for path in victim.rglob("*"):
        os.utime(path, ns=(old, old))
    return victim


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["sandbox", "no sandbox"])
def test_a_mirror_full_of_symlinks_to_the_host_is_never_written_through(tmp_path, daemon_factory, sandbox):
    victim = _victim(tmp_path)
    before = _tree_state(victim)
    task = make_task(
        tmp_path / "task",
        build=PLANT.format(victim=victim),
        tree_files={
            "d/x.c": "x\n",
            "d/y.c": "y\n",
            "d/sub/z.c": "z\n",
            "f.txt": "f\n",
            "m.txt": "m\n",
            "keep/x.c": "keep\n",
            "e/gone/y.c": "g\n",
            "e/k": "k\n",
        },
    )
    env = {"SSE_NO_SANDBOX": "1"} if sandbox == "no sandbox" else {}
    d = daemon_factory(task.file, difficulty="3", env=env)
    assert d.result()["build"]["state"] == "passed"
    assert victim.is_dir() and _tree_state(victim) == before
    # The agent edits, deletes, chmods exactly what the build turned into links.
    (task.tree / "d" / "x.c").write_text("x two\n")
    (task.tree / "d" / "y.c").unlink()
    (task.tree / "d" / "sub" / "z.c").unlink()
    (task.tree / "d" / "new.c").write_text("new\n")
    (task.tree / "f.txt").write_text("f two\n")
    (task.tree / "m.txt").chmod(0o600)
    (task.tree / "keep").chmod(0o700)
    (task.tree / "e" / "gone" / "y.c").unlink()
    (task.tree / "e" / "gone").rmdir()
    for _ in range(2):
        r = d.result()
        assert r["build"]["state"] == "passed"
        assert _tree_state(victim) == before, "the mirror update wrote through a symlink"
    assert "internal error" not in d.stderr()


# -- a hostile .git ----------------------------------------------------------------------------


def _marker_program(folder: Path, name: str) -> tuple[Path, Path]:
    marker = folder / f"MARK-{name}"
    prog = folder / f"prog-{name}"
    prog.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    prog.chmod(0o755)
    return prog, marker


def _hostile_repo(tree: Path, kind: str, variant: int, outside: Path) -> list[Path]:
    """Make *tree* a git work tree whose repository tries to run a program; the markers."""
    (tree / "prebuilt.o").write_text("not an object\n")  # a build output: the daemon asks git
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-qm", "x")
    prog, marker = _marker_program(outside, f"{kind}-{variant}")
    git = tree / ".git"
    _git(tree, "config", "protocol.allow", "always")  # the agent allows every transport
    if kind == "promisor":
        _git(tree, "config", "core.repositoryformatversion", "1")
        _git(tree, "config", "extensions.partialClone", "origin")
        _git(tree, "config", "remote.origin.promisor", "true")
        if variant == 0:
            _git(tree, "config", "remote.origin.url", f"ext::{prog} %S")
        elif variant == 1:
            _git(tree, "config", "remote.origin.url", f"file://{outside}")
            _git(tree, "config", "remote.origin.uploadpack", str(prog))
        else:
            helper = outside / "bin" / "git-remote-evil"
            helper.parent.mkdir(exist_ok=True)
            helper.write_text(prog.read_text())
            helper.chmod(0o755)
            _git(tree, "config", "remote.origin.url", "evil::somewhere")
        tree_id = subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "HEAD^{tree}"], check=True, capture_output=True, text=True
        ).stdout.strip()
        (git / "objects" / tree_id[:2] / tree_id[2:]).unlink()  # missing: a lazy fetch is due
    elif kind == "fsmonitor":
        if variant == 0:
            _git(tree, "config", "core.fsmonitor", str(prog))
        else:  # the hook-style fsmonitor, a program in the repository itself
            (git / "hooks" / "query-watchman").write_text(prog.read_text())
            (git / "hooks" / "query-watchman").chmod(0o755)
            _git(tree, "config", "core.fsmonitor", ".git/hooks/query-watchman")
    elif kind == "include":
        inc = outside / f"include-{variant}.cfg"
        _git(tree, "config", "core.repositoryformatversion", "1")
        if variant == 0:  # a promisor remote whose upload-pack is the program, by include.path
            inc.write_text(
                f"[core]\n\tfsmonitor = {prog}\n\tpager = {prog}\n[extensions]\n"
                f'\tpartialClone = origin\n[remote "origin"]\n\tpromisor = true\n'
                f"\turl = file://{outside}\n\tuploadpack = {prog}\n"
            )
            _git(tree, "config", "include.path", str(inc))
        else:  # the same by includeIf, with an ext:: remote
            inc.write_text(
                f'[core]\n\tfsmonitor = {prog}\n[remote "origin"]\n\tpromisor = true\n\turl = ext::{prog} %S\n'
            )
            _git(tree, "config", "extensions.partialClone", "origin")
            _git(tree, "config", f"includeIf.gitdir:{git}/.path", str(inc))
        tree_id = subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "HEAD^{tree}"], check=True, capture_output=True, text=True
        ).stdout.strip()
        (git / "objects" / tree_id[:2] / tree_id[2:]).unlink()
    elif kind == "hooks":
        hooks = git / "hooks" if variant == 0 else outside / "hooks"
        hooks.mkdir(exist_ok=True)
        for hook in (
            "pre-commit",
            "post-checkout",
            "post-index-change",
            "reference-transaction",
            "fsmonitor-watchman",
            "pre-auto-gc",
        ):
            (hooks / hook).write_text(prog.read_text())
            (hooks / hook).chmod(0o755)
        if variant == 1:
            _git(tree, "config", "core.hooksPath", str(hooks))
    elif kind == "alternates":
        other = outside / f"other-{variant}"
        other.mkdir()
        _git(other, "init", "-q")
        (git / "objects" / "info").mkdir(exist_ok=True)
        (git / "objects" / "info" / "alternates").write_text(f"{other / '.git' / 'objects'}\n")
        _git(tree, "config", "core.repositoryformatversion", "1")
        _git(tree, "config", "extensions.partialClone", "origin")
        _git(tree, "config", "remote.origin.promisor", "true")
        _git(tree, "config", "remote.origin.url", f"ext::{prog} %S" if variant == 0 else "evil::x")
        tree_id = subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "HEAD^{tree}"], check=True, capture_output=True, text=True
        ).stdout.strip()
        (git / "objects" / tree_id[:2] / tree_id[2:]).unlink()
    return [marker]


HOSTILE = [
    (kind, v)
    for kind, n in (("promisor", 3), ("fsmonitor", 2), ("hooks", 2), ("include", 2), ("alternates", 2))
    for v in range(n)
]


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["sandbox", "no sandbox"])
def test_a_hostile_git_repository_never_runs_its_program_outside_the_sandbox(tmp_path, daemon_factory, sandbox):
    outside = tmp_path / "outside"
    outside.mkdir()
    markers: list[Path] = []
    daemons = []
    env_base = {"PATH": f"{outside / 'bin'}:{os.environ['PATH']}"}  # a remote helper on the PATH
    if sandbox == "no sandbox":
        env_base["SSE_NO_SANDBOX"] = "1"
    for kind, variant in HOSTILE:
        task = make_task(tmp_path / f"task-{kind}-{variant}", build="true", tree_files={"a.c": "int a;\n"})
        markers += _hostile_repo(task.tree, kind, variant, outside)
        # Plain git does run these (the attack is real): checked for the promisor variants.
        d = daemon_factory(task.file, difficulty="3", env=env_base)
        daemons.append(d)
        assert d.result()["build"]["state"] == "passed"
        assert d.result()["build"]["state"] == "passed"
    for marker in markers:
        assert not marker.exists(), f"{marker.name}: the repository's program ran outside the sandbox"


def test_the_promisor_attack_is_real_with_plain_git(tmp_path):
    # The same repositories make a plain ``git ls-tree`` run the program: the test above
    # would catch a daemon that runs git as it used to.
    outside = tmp_path / "outside"
    outside.mkdir()
    for kind, variant in (("promisor", 1), ("promisor", 2), ("include", 0)):
        tree = tmp_path / f"t-{kind}-{variant}"
        tree.mkdir()
        (tree / "a.c").write_text("int a;\n")
        (marker,) = _hostile_repo(tree, kind, variant, outside)
        env = {**os.environ, "PATH": f"{outside / 'bin'}:{os.environ['PATH']}"}
        subprocess.run(
            ["git", "-C", str(tree), "ls-tree", "-r", "HEAD"],
            env=env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert marker.exists()


# -- workspace faults ------------------------------------------------------------------------


def _workspace_of(d: Any, tmp: Path) -> Path:
    (ws,) = [
        p
        for p in tmp.iterdir()
        if p.name.startswith("ssebench-daemon-") and json.loads((p / "owner.json").read_text())["pid"] == d.proc.pid
    ]
    return ws


@pytest.mark.slow
def test_the_workspace_removed_under_the_daemon_is_made_again(tmp_path, daemon_factory):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    task = make_task(
        tmp_path / "task", build="cat a.c > built && cat built", functional="cat built", tree_files={"a.c": "int a;\n"}
    )
    d = daemon_factory(task.file, difficulty="2", env={"TMPDIR": str(tmp)})
    first = d.result()
    assert first["build"]["state"] == "passed" and first["functional"]["state"] == "passed"
    ws = _workspace_of(d, tmp)
    for path in tmp.iterdir():  # a tmp cleaner: everything of ours in the temp folder
        subprocess.run(["rm", "-rf", str(path)], check=True)
    (task.tree / "a.c").write_text("int b;\n")
    r = d.result()
    assert r["build"]["state"] == "passed" and r["functional"]["state"] == "passed"
    assert d.log(r["_run"], "functional") == "int b;\n\n"
    assert ws.is_dir() and (ws / "owner.json").is_file()
    assert d.result()["functional"]["state"] == "passed"
    assert "internal error" not in d.stderr()


@pytest.mark.slow
def test_a_removed_workspace_whose_name_is_taken_is_one_clear_line(tmp_path, daemon_factory):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    task = make_task(tmp_path / "task", build="true", tree_files={"a.c": "int a;\n"})
    d = daemon_factory(task.file, difficulty="3", env={"TMPDIR": str(tmp)})
    assert d.result()["build"]["state"] == "passed"
    ws = _workspace_of(d, tmp)
    subprocess.run(["rm", "-rf", str(ws)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws.symlink_to(elsewhere)  # someone else took the name
    events = d.run()
    assert events == [
        {
            "event": "error",
            "message": "the daemon's workspace was removed and cannot be "
            "made again: its name is taken by something not ours",
        }
    ]
    assert list(elsewhere.iterdir()) == []
    ws.unlink()
    assert d.result()["build"]["state"] == "passed"


def _disk_use(folder: Path) -> int:
    total = 0
    for dirpath, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


@pytest.mark.slow
def test_a_5_gib_sparse_file_costs_next_to_nothing(tmp_path, daemon_factory):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    task = make_task(
        tmp_path / "task",
        build="stat -c '%s' big.bin && head -c 5 big.bin | od -An -c",
        functional="tail -c 4 big.bin",
        tree_files={"a.c": "int a;\n"},
    )
    with open(task.tree / "big.bin", "wb") as f:
        f.write(b"head")
        f.seek(5 << 30)
        f.write(b"tail")
    d = daemon_factory(task.file, difficulty="2", env={"TMPDIR": str(tmp)})
    start = time.monotonic()
    r = d.result()
    elapsed = time.monotonic() - start
    assert r["build"]["state"] == "passed" and r["functional"]["state"] == "passed"
    assert d.log(r["_run"], "build").startswith(f"{(5 << 30) + 4}\n")
    assert d.log(r["_run"], "functional") == "tail\n\n"
    used = _disk_use(_workspace_of(d, tmp))
    assert used < 16 << 20, f"the workspace holds {used} bytes"
    assert elapsed < 10, f"the call took {elapsed:.1f} s"
    (task.tree / "a.c").write_text("int b;\n")  # an incremental update keeps it sparse too
    assert d.result()["build"]["state"] == "passed"
    assert _disk_use(_workspace_of(d, tmp)) < 16 << 20


@pytest.mark.slow
def test_sigterm_during_a_big_snapshot_stops_without_finishing_it(tmp_path, daemon_factory):
    """The snapshot of these 1.5 GB takes about 47 s; SIGTERM ends the daemon in 0.2-0.4 s
    on an idle machine. The bound is 5 s, half of ``docker stop``'s grace: the cleanup's
    unlinks wait on the filesystem's journal, and with two ``dd`` writing GBs beside it
    the same stop took 5.4 s (4.3 s of it removing two small folders at exit); a loaded
    CI machine took 1.4 s."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    task = make_task(tmp_path / "task", build="true", tree_files={"a.c": "int a;\n"})
    block = os.urandom(1 << 20)  # incompressible: the snapshot takes a while (~47 s)
    for i in range(6):
        with open(task.tree / f"data-{i}.bin", "wb") as f:
            for _ in range(256):
                f.write(block)
    d = daemon_factory(task.file, difficulty="3", env={"TMPDIR": str(tmp)})
    blobs = _workspace_of(d, tmp) / "engine" / "blobs"
    caller = threading.Thread(target=lambda: _quiet(d.run), daemon=True)
    caller.start()
    deadline = time.monotonic() + 30
    while _copied(blobs) < 16 << 20:  # well into the snapshot: 16 MiB of it copied
        assert time.monotonic() < deadline
        time.sleep(0.01)
    start = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    d.proc.wait(10)
    took = time.monotonic() - start
    assert took < 5.0, f"the daemon took {took:.2f} s to stop"
    assert d.proc.returncode == 0
    assert not any(p.name.startswith("ssebench-daemon-") for p in tmp.iterdir())


def _copied(blobs: Path) -> int:
    """Bytes the snapshot under way has written into the blob store so far."""
    total = 0
    for blob in blobs.iterdir():
        with contextlib.suppress(FileNotFoundError):  # a blob being renamed into place
            total += blob.stat().st_size
    return total


def _quiet(func: Any) -> None:
    try:
        func()
    except Exception:
        pass
