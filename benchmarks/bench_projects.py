"""The real-projects benchmark (issue 34, item 1): test_patch vs the same work in place,
on five upstream projects, written to docs/performance.md, section "Real projects".

One command (about 20 minutes on 2 shared cores; ``--quick``: one run each, curl left out):

    .venv/bin/python benchmarks/bench_projects.py [--quick] [--runs 3] [--project NAME ...] [--no-write]
        [--code-change]

The projects (benchmarks/projects.py: each is the upstream tarball of Debian bookworm's
source package, fetched with ``apt-get source --download-only`` through a private sources
list and cached in ``~/.cache/ssebench/bench-projects``): curl and libogg (autotools,
libtool), cJSON (CMake + ctest), fribidi (Meson + meson test; needs ``meson``, e.g. the
Debian package), giflib (a plain Makefile). Each build configures only in the first build
of a tree (``config.status``/``build`` missing), as a task author's command would.

For each project, ``--runs`` times, in fresh copies, a fresh stack (``ssebench daemon`` +
``ssebench serve``, the MCP client as an agent's, level 2: build + functional tests), the
in-place work interleaved with the daemon's so that load drifts hit both:
- first call vs configure + build + tests in place;
- after a one-line change of a source (the same in both trees): test_patch vs the
  incremental build + tests in place;
- with no change: test_patch vs build + tests in place (make finds nothing to do).
The changed line is a comment; ``--code-change`` makes it a function definition
(``int ssebench_bench_code_N(void) { return N; }``: other object bytes, for fribidi
(hidden visibility) the same exports) and only prints the section.
Ratios are of medians. The fallback rate is clean builds / calls over the repeat calls
(``/health``'s ``builds.last``); the phases are the daemon's own timings of each call
(``/health``'s ``last_run``, medians), and "outside the daemon" is the client's time
minus the daemon's phases (server, transport, the report's text).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.bench_incremental import one_line_change, test_patch, timed, write_task
from benchmarks.projects import PROJECTS, Project, tree
from ssebench.agents.files import atomic_write
from ssebench.server.stack import Stack, running_stack
from ssebench.supervise import wait_for_daemon

DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
SECTION = "## Real projects"
KINDS = ("first", "change", "nochange")


@dataclass
class Samples:
    """One project's measurements: seconds by kind, ours and in place; decisions; phases."""

    ours: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    inplace: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    decisions: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in KINDS})
    phases: dict[str, list[dict[str, float]]] = field(default_factory=lambda: {k: [] for k in KINDS})


def health(stack: Stack) -> dict[str, object]:
    answer, _ = wait_for_daemon(stack.socket, what="the daemon", timeout=30)
    return answer


def call(stack: Stack, samples: Samples, kind: str) -> None:
    """One test_patch, its decision and the daemon's phases."""
    samples.ours[kind].append(test_patch(stack.url))
    h = health(stack)
    samples.decisions[kind].append(str(h["builds"]["last"]))  # type: ignore[index]
    samples.phases[kind].append(dict(h["last_run"]))  # type: ignore[arg-type]


def inplace(project: Project, cwd: Path) -> float:
    return timed(project.build, cwd) + timed(project.functional, cwd)


def measure(project: Project, runs: int, tmp: Path, code: bool = False) -> Samples:
    """*runs* rounds of first call, a one-line change, no change; in place and ours.
    *code*: the changed line is a function, not a comment."""
    samples = Samples()
    pristine = tree(project)
    for r in range(runs):
        base = tmp / f"{project.name}-{r}"
        ip, agent = base / "inplace", base / "agent"
        base.mkdir()
        for dst in (ip, agent):
            subprocess.run(["cp", "-a", str(pristine), str(dst)], check=True)
        task = write_task(base / "task", agent, project.build, project.functional)
        (base / "daemon-tmp").mkdir()
        env = {**os.environ, "TMPDIR": str(base / "daemon-tmp")}
        with running_stack(task, Path(tempfile.mkdtemp(dir=base)), difficulty="2", env=env) as stack:
            samples.inplace["first"].append(inplace(project, ip))
            call(stack, samples, "first")
            for t in (ip, agent):
                one_line_change(t, project.changed, r + 1, code=code)
            samples.inplace["change"].append(inplace(project, ip))
            call(stack, samples, "change")
            samples.inplace["nochange"].append(inplace(project, ip))
            call(stack, samples, "nochange")
        shutil.rmtree(base, ignore_errors=True)
        print(
            f"  {project.name} run {r + 1}: ours {[round(s[-1], 2) for s in samples.ours.values()]} in place "
            f"{[round(s[-1], 2) for s in samples.inplace.values()]} {[d[-1] for d in samples.decisions.values()]}",
            flush=True,
        )
    return samples


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def ratio_row(project: Project, s: Samples) -> str:
    cells = []
    for kind in KINDS:
        ours, ip = median(s.ours[kind]), median(s.inplace[kind])
        cells.append(f"{ours:.2f} / {ip:.2f} = **{ours / ip:.2f}x**" if ip > 0 else "-")
    repeat = s.decisions["change"] + s.decisions["nochange"]
    clean = sum(d.startswith("clean") for d in repeat)
    whys = sorted({d.removeprefix("clean: ") for d in repeat if d.startswith("clean")})
    fallback = f"{clean}/{len(repeat)}" + (f" ({'; '.join(whys)})" if whys else "")
    return f"| {project.label} | " + " | ".join(cells) + f" | {fallback} |"


def phase_rows(project: Project, s: Samples) -> list[str]:
    """The daemon's phases by call kind, medians; 'outside the daemon' is the rest."""
    rows = []
    for kind in KINDS:
        names: list[str] = []
        for p in s.phases[kind]:
            names += [n for n in p if n not in names]
        meds = {n: median([p.get(n, 0.0) for p in s.phases[kind]]) for n in names}
        inside = sum(v for n, v in meds.items() if n in ("snapshot", "report") or ":" not in n)
        parts = ", ".join(f"{n} {v:.2f}" for n, v in meds.items())
        rows.append(
            f"| {project.label} | {kind} | {median(s.ours[kind]):.2f} | {parts} | {median(s.ours[kind]) - inside:.2f} |"
        )
    return rows


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "?",
    )
    return f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}"


def section(results: list[tuple[Project, Samples]], runs: int, started: str, loads: tuple[str, str]) -> str:
    lines = [
        SECTION,
        "",
        f"Measured {started} UTC on {machine()}; load average (1 min) {loads[0]} at the start, "
        f"{loads[1]} at the end (the machine is shared: in-place work and the daemon's calls are "
        f"interleaved so that load drifts hit both). Medians of {runs} run(s) each, every call "
        "through the real stack (daemon + MCP server + MCP client) at level 2 (build + functional "
        "tests). Command: `.venv/bin/python benchmarks/bench_projects.py"
        + "".join(f" {a}" for a in sys.argv[1:] if a != "--no-write")
        + "`.",
        "",
        "Seconds test_patch / in place = ratio. *First*: configure + build + tests in a fresh tree "
        "(goal <= 1.2x). *Change*: after a one-line change of a source, vs the incremental build + "
        "tests (goal <= 1.1x). *No change*: the same call again, vs build + tests in place. "
        "Fallback: clean builds / repeat calls (goal 0).",
        "",
        "| project | first | change | no change | fallback |",
        "|---|---|---|---|---|",
        *(ratio_row(p, s) for p, s in results),
        "",
        "Where each call's time goes: the daemon's own timings (`/health`'s `last_run`, "
        "docs/daemon-api.md), medians, seconds. A check's total includes its view; `build: command` "
        "is the build in the sandbox (sandbox start, strace and the build itself); *outside* is the "
        "client's time minus the daemon's (server, transport, the report's text).",
        "",
        "| project | call | total | daemon phases | outside |",
        "|---|---|---|---|---|",
        *(row for p, s in results for row in phase_rows(p, s)),
        "",
        "The projects (upstream tarballs of Debian bookworm's source packages; benchmarks/projects.py):",
        "",
        *(f"- {p.label}: build `{p.build}`; tests `{p.functional}`; change `{p.changed}`" for p, _ in results),
        "",
    ]
    return "\n".join(lines)


def write_doc(text: str) -> None:
    """Replace (or add) the section in docs/performance.md; every other section kept."""
    old = DOC.read_text() if DOC.exists() else "# Performance\n\n"
    head, sep, rest = old.partition(SECTION + "\n")
    tail = ""
    if sep:
        nxt = rest.find("\n## ")
        tail = rest[nxt + 1 :] if nxt >= 0 else ""
    else:
        head = old.rstrip("\n") + "\n\n"
    atomic_write(DOC, (head + text + ("\n" + tail if tail else "")).encode(), 0o644)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one run per project, curl left out")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--project", action="append", choices=sorted(PROJECTS), default=[])
    ap.add_argument("--no-write", action="store_true", help="print the section, leave docs/performance.md")
    ap.add_argument(
        "--code-change", action="store_true", help="change a line of code, not a comment (implies --no-write)"
    )
    args = ap.parse_args()
    runs = args.runs or (1 if args.quick else 3)
    names = args.project or [n for n in PROJECTS if not (args.quick and n == "curl")]
    if any(PROJECTS[n].needs and shutil.which(PROJECTS[n].needs) is None for n in names):
        sys.exit("bench_projects: fribidi needs meson (apt-get install meson, or pip install meson)")
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")
    load0 = f"{os.getloadavg()[0]:.1f}"
    results = []
    with tempfile.TemporaryDirectory(prefix="ssebench-bench-projects-") as tmp:
        os.chmod(tmp, 0o711)  # a root daemon's checks (uid 65534) must traverse to their trees
        for name in names:
            results.append((PROJECTS[name], measure(PROJECTS[name], runs, Path(tmp), args.code_change)))
    text = section(results, runs, started, (load0, f"{os.getloadavg()[0]:.1f}"))
    print(text)
    if not (args.no_write or args.code_change):
        write_doc(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
