"""Shared fixtures: write a task, start a real daemon subprocess.

- ``task_factory(**kw)`` -> ``TaskFiles``: :func:`tests.helpers.tasks.make_task` into a
  fresh folder under ``tmp_path`` (each call gets its own folder).
- ``daemon_factory(task_file, difficulty="2", tree=None, heartbeat=0.2, env=None,
  args=(), wait=True)`` -> ``DaemonProcess``: :func:`tests.helpers.daemon.start_daemon`;
  every daemon it started is stopped at teardown (SIGTERM, then SIGKILL), asserting
  that no process of it survives and its socket is gone.
- ``demo_task``: the shipped example task file (examples/tasks/demo-overflow/task.toml).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.daemon import DaemonProcess, remove_short_tempdirs, start_daemon
from tests.helpers.tasks import TaskFiles, make_task

REPO = Path(__file__).resolve().parent.parent
DEMO_TASK = REPO / "examples" / "tasks" / "demo-overflow" / "task.toml"

# A pytest started in the background by a non-interactive shell (scripts/pytest-all.sh's
# Kubernetes run, a CI runner's `cmd &`) inherits SIGINT ignored, and so would every CLI a
# test starts: Python installs no KeyboardInterrupt handler for an ignored SIGINT, as nohup
# expects, and the Ctrl-C tests would see a CLI that cannot be interrupted. The tests start
# their CLIs the way a terminal does.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _short_tempdirs_removed() -> Iterator[None]:
    """The /tmp/sse-* folders a test made for its sockets go with it (torn down last: the
    daemons in them are stopped first)."""
    yield
    remove_short_tempdirs()


@pytest.fixture(autouse=True)
def _checks_reach_tmp_path(request: pytest.FixtureRequest) -> None:
    """Run as root (as here), the daemon runs its checks as uid 65534, and bwrap, started
    as that uid, must traverse the folders to the trees it binds (docs/security.md): make
    a test's tmp_path and its parents traversable (0711: no listing) when a test uses it."""
    if os.geteuid() != 0 or "tmp_path" not in request.fixturenames:
        return
    path = request.getfixturevalue("tmp_path")
    top = Path(tempfile.gettempdir())
    # Up to the temp folder: pytest-of-root/pytest-N/[popen-gwK/ under pytest-xdist]/test_x0.
    for folder in (path, *list(itertools.takewhile(lambda p: p != top, path.parents))[:3]):
        if folder.stat().st_uid == 0 and folder.stat().st_mode & 0o011 != 0o011:
            folder.chmod(folder.stat().st_mode & 0o7777 | 0o011)


@pytest.fixture
def task_factory(tmp_path: Path) -> Callable[..., TaskFiles]:
    counter = itertools.count(1)

    def factory(**kwargs: Any) -> TaskFiles:
        return make_task(tmp_path / f"task-{next(counter)}", **kwargs)

    return factory


@pytest.fixture
def daemon_factory() -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def factory(task_file: Path | str, **kwargs: Any) -> DaemonProcess:
        daemon = start_daemon(task_file, **kwargs)
        started.append(daemon)
        return daemon

    yield factory
    errors = []
    for daemon in started:
        try:
            if daemon.proc.poll() is None:
                daemon.stop()
                assert not daemon.socket.exists(), f"socket left behind: {daemon.socket}"
        except AssertionError as exc:
            errors.append(str(exc))
        finally:
            shutil.rmtree(daemon.stderr_file.parent, ignore_errors=True)
    assert not errors, errors


@pytest.fixture
def demo_task() -> Path:
    return DEMO_TASK


# The unit tier (`make test-fast`: under a minute on 2 cores, no Docker, npm or browser) is every
# test that is neither slow, e2e nor "integration"; these modules are integration as a whole:
# each of their tests starts the real daemon, server, sandbox or a build, or a batch of real
# CLI processes, which is what they are for, and `make test` runs them all.
INTEGRATION = {
    "tests/test_agents_cli.py": "a real ssebench CLI process per install/uninstall",
    "tests/test_agents_install_entry.py": "real installs into private HOMEs, concurrent processes",
    "tests/test_agents_roundtrip.py": "real CLI round trips per client",
    "tests/test_cli_polish.py": "the CLI as a process, on a pty",
    "tests/test_daemon.py": "a real daemon on a socket per test",
    "tests/test_daemon_lifecycle.py": "a real daemon per test: signals, queue, timeouts",
    "tests/test_daemon_fs_attacks.py": "a real daemon against a hostile tree",
    "tests/test_dataset_lock.py": "task verify through the real runner",
    "tests/test_doctor.py": "doctor probes the machine",
    "tests/test_entrypoint.py": "the entrypoint with a daemon, a server and an agent",
    "tests/test_equivalence.py": "real builds, incremental against fresh",
    "tests/test_grade.py": "grading builds and runs every check",
    "tests/test_incremental.py": "real traced builds",
    "tests/test_jobs.py": "jobs of real runs",
    "tests/test_jobs_lock.py": "a job of real runs",
    "tests/test_kube_cli.py": "the CLI against an unreachable cluster (timeouts)",
    "tests/test_preflight.py": "the CLI as a process per agent",
    "tests/test_reliability_daemon.py": "a real daemon under faults",
    "tests/test_reliability_inputs.py": "bad input to every command, as processes",
    "tests/test_reliability_server.py": "a real server under faults",
    "tests/test_run.py": "ssebench run end to end",
    "tests/test_sandbox.py": "the bwrap sandbox",
    "tests/test_sandbox_attacks.py": "attacks on the sandbox",
    "tests/test_sandbox_tmpdir.py": "root commands in a private mount namespace, a real daemon",
    "tests/test_server.py": "a real server and daemon",
    "tests/test_server_cli.py": "serve/up as processes",
    "tests/test_server_levels.py": "real calls at each level",
    "tests/test_server_resume.py": "real streams dropped and resumed",
    "tests/test_server_tasks.py": "real tasks over HTTP",
    "tests/test_support_files.py": "checks reading support files in the sandbox",
    "tests/test_task_cmd.py": "task new/check/grade as processes",
    "tests/test_task_verify.py": "task verify through the real runner",
    "tests/test_view.py": "the view's HTTP server over real run folders",
    "tests/test_view_export.py": "ssebench view --export as a process over a job and runs",
    "tests/test_view_jobs.py": "the view's HTTP server over job folders",
}


# tryfirst: pytest-xdist's own hook reads the xdist_group marks into the node ids; its plugin is
# registered after this conftest, so it runs first unless this one says so, and the groups
# added here were never seen (a real task's five-level build ran once per worker).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """How ``make test`` spreads tests over pytest-xdist workers (``--dist loadgroup``).

    Tests go one by one to whichever worker is free, except: a test module's module- or
    session-wide fixture (a built venv, a real task's builds, a server) would be built
    again in every worker that gets one of its tests, so such a module's tests share one
    group (one worker); and the Docker tests (one engine, one image cache) are one group,
    marked ``xdist_group("docker")`` in their modules. The tests that need something still
    being installed in the background go last.
    """
    for item in items:
        if item.nodeid.split("::")[0] in INTEGRATION:
            item.add_marker(pytest.mark.integration)
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        for defs in info.name2fixturedefs.values():
            fixture = defs[-1]
            where = getattr(fixture.func, "__module__", "")
            if fixture.scope in ("module", "session") and where == getattr(item.module, "__name__", None):
                item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
                break
    items.sort(key=_waits_for_a_background_install)


# `make test-deps` starts installs in the background (tests/e2e/prefetch.py: the npm CLIs, ~2 GiB,
# ~9 minutes on a new machine; scripts/kube-build.sh): the tests that need them go last, so the
# workers run the rest meanwhile instead of waiting on an install's lock. These modules go
# last of all, in this order (`make test` runs them in a pytest of their own beside the others,
# scripts/pytest-all.sh, so they start once the build is done; this order is for a plain pytest):
BACKGROUND_LAST = ("tests/e2e/test_kubernetes.py",)


def _waits_for_a_background_install(item: pytest.Item) -> int:
    """0 for most tests; 1 and 2 for the agent CLI tests (``e2e``, outside the Docker group,
    which installs its own per-agent layers); 3 and up for BACKGROUND_LAST. A stable sort keeps
    each module's tests together (a module fixture is built once)."""
    module = item.nodeid.split("::")[0]
    if module in BACKGROUND_LAST:
        return 3 + BACKGROUND_LAST.index(module)
    group = item.get_closest_marker("xdist_group")
    in_docker_group = group is not None and "docker" in (*group.args, group.kwargs.get("name"))
    if item.get_closest_marker("e2e") is None or in_docker_group:
        return 0
    return 1 if module == LONGEST_CLI_MODULE else 2  # the longest first: it must not end the run


LONGEST_CLI_MODULE = "tests/e2e/test_cli_slow.py"  # ~18 agent runs around a 90 s silent build
