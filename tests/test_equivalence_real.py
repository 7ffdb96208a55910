"""incremental = fresh on real projects (issue 34): 500 random steps in CI, over two upstream
trees (cJSON 1.7.15 and giflib 5.2.1, plain make; Debian bookworm's tarballs, cached by
tests/helpers/realtasks.py), 250 steps each.

A seeded agent edits each tree from a small vocabulary (a line of a library source or a
program, a header every source includes, a touch, a compile flag in the Makefile, an
edit that breaks the build, a file put back as it was); after each edit one long-lived
Runner answers a call (build + functional), and the answer must equal a fresh Runner's
on the same tree: every check's state, and the functional log, which prints the md5 of
every object and archive and what the programs print, so the two agree only when the
incremental build's objects and archives are a clean build's, byte for byte, and its
programs behave as a clean build's.

Why it fits in CI: the tree's content is a function of the agent's choices (each file is
one of a few variants), and a fresh build of a content starts from an empty mirror, so
its answer depends on the content only (neither tree keeps a generated file beside its
input: no mtime decides anything in a clean build). So the fresh answer of a content is
computed once and reused when the agent comes back to it; every long-lived call is real.
The long run on synthetic projects is benchmarks/bench_equivalence.py; on zstd,
benchmarks/bench_equivalence_zstd.py.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from ssebench.daemon import procs, sandbox_setup
from ssebench.daemon.runner import Runner
from ssebench.difficulty import Check
from ssebench.task import load_task
from tests.helpers.debsrc import FetchError
from tests.helpers.realtasks import task_folder
from tests.helpers.tasks import make_task

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

STEPS = 250  # per project: 500 in all
CHECKS = [Check.BUILD, Check.FUNCTIONAL]
Answer = dict[str, tuple[str, str]]


@dataclass(frozen=True)
class Real:
    """A project: its build, what the functional check prints, the files the agent edits."""

    build: str
    functional: str
    sources: tuple[str, ...]  # edited by a line, broken, put back
    header: str
    makefile: str
    flags: tuple[str, str]  # a compile flag line of the Makefile and its variant
    reuse: int = STEPS // 4  # at least this many answers from an incremental build


# Objects and archives are compared byte for byte; a program gcc compiles and links in one
# command embeds its temporary object's random name, so programs are compared by what they print.
_MD5 = "find . -type f \\( -name '*.o' -o -name '*.a' \\) -print0 | LC_ALL=C sort -z | xargs -0 md5sum"
PROJECTS = {
    "cjson": Real(
        # Serial: cJSON 1.7.15's Makefile links libcjson_utils.so with cJSON.o without
        # depending on it, so under -j2 a clean build fails or passes by the race
        # ("ld: cannot find cJSON.o"), in a fresh daemon as in a long-lived one.
        "make all",
        _MD5 + " && ./cJSON_test",
        ("cJSON.c", "cJSON_Utils.c", "test.c"),
        "cJSON.h",
        "Makefile",
        ("R_CFLAGS = $(PIC_FLAGS)", "R_CFLAGS = -DSSE_FLAG=1 $(PIC_FLAGS)"),
        # Its Makefile's own incremental build fails whenever it relinks a library (`ln -s`
        # without -f), so most repeat calls are rightly clean builds: 15 of 250 were
        # incremental in one CI run. Enough to exercise the incremental path.
        reuse=10,
    ),
    "giflib": Real(
        "make -j2 libgif.a libutil.a gif2rgb gifbuild giftext",
        _MD5 + " && ./giftext pic/porsche.gif | head -5 && ./gifbuild -d pic/porsche.gif | md5sum",
        ("dgif_lib.c", "egif_lib.c", "gifbuild.c", "gif_hash.c"),
        "gif_lib.h",
        "Makefile",
        ("OFLAGS  = -O2", "OFLAGS  = -O1"),
    ),
}
LINES = ("", "/* edit a */\n", "/* edit b */\n", "#error the agent broke the build\n")


def _call(runner: Runner) -> Answer:
    async def go() -> Answer:
        run = await runner.prepare()
        async for _ in runner.execute(run, CHECKS):
            pass
        # A failed build's log is not compared: make -j2 interleaves, an incremental build
        # prints less (the rule of tests/helpers/equivalence.py); a passed functional's is.
        out = {
            c.value: (r.state, r.log.read_text() if r.log and c is Check.FUNCTIONAL else "")
            for c, r in run.results.items()
        }
        return out

    return asyncio.run(go())


def _menu(real: Real) -> list[dict[str, int]]:
    """The tree's possible contents, each a variant per edited file (0: as released; of a
    source 1, 2: a line added, 3: a line that breaks the build; of the Makefile 1: the
    other flag). Few on purpose: each content is built fresh once."""
    a, b, c = real.sources[:3]
    h, m = real.header, real.makefile
    return [{}, {a: 1}, {a: 2}, {b: 1}, {h: 1}, {m: 1}, {a: 1, h: 1}, {c: 3}, {a: 2, m: 1}, {b: 2, c: 1}]


class Agent:
    """The seeded agent: moves the tree between the contents of :func:`_menu` (writing
    only the files that differ, with fresh mtimes) and touches files in between."""

    def __init__(self, tree: Path, real: Real, seed: int) -> None:
        self.tree, self.real, self.rng = tree, real, random.Random(seed)
        self.original = {rel: (tree / rel).read_text() for rel in (*real.sources, real.header, real.makefile)}
        self.menu = _menu(real)
        self.at = 0

    def key(self) -> int:
        return self.at

    def _text(self, rel: str, variant: int) -> str:
        text = self.original[rel]
        if rel == self.real.makefile:
            old, new = self.real.flags
            return text.replace(old, new) if variant else text
        return text + LINES[variant]

    def edit(self) -> str:
        if self.rng.random() < 0.3:
            rel = self.rng.choice([*self.real.sources, self.real.header])
            os.utime(self.tree / rel)
            return f"touch {rel}"
        target = self.rng.choice([i for i in range(len(self.menu)) if i != self.at])
        old, new = self.menu[self.at], self.menu[target]
        changed = sorted(rel for rel in set(old) | set(new) if old.get(rel, 0) != new.get(rel, 0))
        for rel in changed:
            (self.tree / rel).write_text(self._text(rel, new.get(rel, 0)))
        self.at = target
        return f"content {target}: {', '.join(changed)}"


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_incremental_answers_equal_fresh_ones_on_a_real_project(name):
    procs.enable_subreaper()
    try:
        src = task_folder(name) / "src"
    except FetchError as exc:  # pragma: no cover - the machine cannot reach Debian's archive
        pytest.skip(str(exc))
    # Its own folder in the temp folder, not tmp_path: a root daemon's checks (uid 65534)
    # must traverse to their trees for the whole run, and another pytest starting on the
    # machine makes pytest-of-<user> 0700 again.
    with tempfile.TemporaryDirectory(prefix="ssebench-equiv-real-") as tmp:
        os.chmod(tmp, 0o711)
        _run(Path(tmp), PROJECTS[name], src)


def _run(tmp_path: Path, real: Real, src: Path) -> None:
    files = make_task(tmp_path / "task", build=real.build, functional=real.functional, pocs=None, tree_files={})
    shutil.rmtree(files.tree)
    shutil.copytree(src, files.tree, symlinks=True)
    task, box = load_task(files.file), sandbox_setup.detect()
    (tmp_path / "ws-long").mkdir()
    long = Runner(task, files.tree, tmp_path / "ws-long", heartbeat=3600, sandbox=box)
    agent = Agent(files.tree, real, seed=34)
    fresh: dict[int, Answer] = {}
    log, mismatches, decisions = [], [], []
    for step in range(STEPS + 1):
        what = "first call" if step == 0 else agent.edit()
        ours = _call(long)
        decisions.append(long.last_build)
        key = agent.key()
        if key not in fresh:
            ws = tmp_path / f"ws-fresh-{len(fresh)}"
            ws.mkdir()
            fresh[key] = _call(Runner(task, files.tree, ws, heartbeat=3600, sandbox=box))
            shutil.rmtree(ws, ignore_errors=True)
        log.append(f"{step}: {what} -> {long.last_build}")
        if ours != fresh[key]:
            mismatches.append(f"step {step} ({what}):\n  long-lived {ours}\n  fresh      {fresh[key]}")
    assert mismatches == [], "\n".join(mismatches + log)
    passed = [k for k, a in fresh.items() if a["build"][0] == "passed"]
    assert passed and len(passed) < len(fresh)  # the agent both built and broke the build
    assert fresh[passed[0]]["functional"][1].count(".o\n") >= 2  # the md5s were printed
    assert sum(d == "incremental" for d in decisions) >= real.reuse  # the engine still reuses work
