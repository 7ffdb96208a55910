"""The official MCP conformance suite (configs/conformance/, pinned with its Node) against
``ssebench serve`` on both revisions, 2025-11-25 and 2026-07-28, and the tasks extension's
scenarios: every check passes with no warning, except the checks configs/conformance/
exclusions.yml excuses (each a fixture of the suite's reference server this server does not
have), and each of those still fails or warns (a stale entry fails the test). Offline once
installed: the suite only talks to the server on loopback."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ssebench.server.stack import Stack, running_stack
from tests.e2e.conftest import CONFORMANCE_BINS, CONFORMANCE_PINS, REPO, install_clis

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

EXCLUSIONS = CONFORMANCE_PINS / "exclusions.yml"
DEMO = REPO / "examples" / "tasks" / "demo-overflow" / "task.toml"
REVISIONS = ("2025-11-25", "2026-07-28")


def exclusions() -> dict[str, dict[str, dict[str, Any]]]:
    return yaml.safe_load(EXCLUSIONS.read_text())


@pytest.fixture(scope="module")
def suite() -> Path:
    if shutil.which("npm") is None:
        pytest.skip("npm not found: the conformance suite cannot be installed here")
    return install_clis(pins=CONFORMANCE_PINS, bins=CONFORMANCE_BINS)


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    work = Path(tempfile.mkdtemp(prefix="ssebench-conformance-"))
    try:
        with running_stack(DEMO, work, difficulty="2") as served:
            yield served
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(bin_dir: Path, url: str, args: list[str], baseline: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    cmd = [str(bin_dir / "conformance"), "server", "--url", url, "-o", str(out), "--expected-failures", str(baseline)]
    return subprocess.run(
        [*cmd, *args], env=env, capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL
    )


def extension_scenarios(bin_dir: Path) -> list[str]:
    """The tasks extension's server scenarios, as the pinned suite lists them."""
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    listed = subprocess.run([str(bin_dir / "conformance"), "list"], env=env, capture_output=True, text=True, check=True)
    return re.findall(r"^\s+- (tasks-[a-z-]+) \[extension\]$", listed.stdout, re.MULTILINE)


def results(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Scenario -> its checks, from the suite's ``server-<scenario>-<time>/checks.json``."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name).removeprefix("server-")
        found[scenario] = json.loads(checks.read_text())
    return found


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_conformance_suite_passes(suite: Path, stack: Stack, revision: str, tmp_path: Path) -> None:
    excused = exclusions()[revision]
    baseline = tmp_path / "baseline.yml"
    entries = [f"{s}:{c}" for s, e in excused.items() for c in (*e.get("fails", []), *e.get("warns", []))]
    baseline.write_text(yaml.safe_dump({"server": entries}))
    out = tmp_path / "results"
    runs = [["--spec-version", revision, "--suite", "all"]]
    if revision == "2026-07-28":  # the tasks extension's scenarios are run by name
        runs += [["--scenario", name] for name in extension_scenarios(suite)]
    for args in runs:
        proc = run(suite, stack.url, args, baseline, out)
        # the suite's own verdict (a baseline entry of a scenario not run is not stale to it)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    seen = results(out)
    assert len(seen) >= (30 if revision == "2025-11-25" else 50), sorted(seen)
    problems = []
    for scenario, checks in seen.items():
        excuse = excused.get(scenario, {})
        for kind, status in (("fails", "FAILURE"), ("warns", "WARNING")):
            got = sorted(c["id"] for c in checks if c["status"] == status)
            if got != sorted(excuse.get(kind, [])):
                problems.append(f"{scenario}: {status} {got}, excused {excuse.get(kind, [])}")
    problems += [f"{s}: excused but not run" for s in excused if s not in seen]
    assert not problems, "\n".join(problems)
    if revision == "2025-11-25":  # resumable streams: the two checks the issue started from
        polling = {c["id"]: c["status"] for c in seen["server-sse-polling"]}
        assert polling["server-sse-priming-event"] == polling["server-sse-retry-field"] == "SUCCESS"
