"""A plain install works: the wheel, in a fresh venv outside the checkout, runs every README command.

The wheel is built from this checkout and installed into a new venv in a temporary folder;
every command runs from another temporary folder, with PYTHONPATH unset and a private HOME
(``agents install`` writes there), so nothing of the checkout can be found by accident
(the first test proves the package imports from the venv). Dependencies come from a local
wheelhouse cached per requirement set (``~/.cache/ssebench/wheel-install/``, or
``$SSEBENCH_CACHE/wheel-install``), so after the first time the install needs no index.

Also here: the wheel a task image gets (ssebench/container/selfwheel.py) made from the
INSTALLED files holds no example task, and ``ssebench run --docker`` from the plain install
builds its images and keeps the hidden parts out of the agent's container (where Docker
and the base image are available; tests/e2e/test_docker.py sets them up).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.xdist_group("docker")]

CLIENTS = ("codex", "gemini", "opencode", "vscode", "cursor", "windsurf", "goose", "zed", "claude-desktop")


def _cache() -> Path:
    root = (
        os.environ.get("SSEBENCH_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ssebench"
    )
    return Path(root) / "wheel-install"


def _pip(*args: str, python: str = sys.executable) -> None:
    done = subprocess.run(
        [python, "-m", "pip", *args, "--quiet", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"pip {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def _requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(name).decode()
    return sorted(
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    )


def _wheelhouse(requirements: list[str]) -> Path:
    """Wheels of the dependencies, built once per requirement set and Python version."""
    key = hashlib.sha256(("\n".join(requirements) + sys.version).encode()).hexdigest()[:16]
    house = _cache() / key
    if not house.is_dir():
        house.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="staging-", dir=house.parent))
        _pip("wheel", "--wheel-dir", str(staging), *requirements)
        try:
            staging.rename(house)
        except OSError:  # filled by another run meanwhile
            shutil.rmtree(staging, ignore_errors=True)
    return house


@dataclass
class Install:
    venv: Path
    wheel: Path
    work: Path  # the folder every command runs in (outside the checkout)
    home: Path
    env: dict[str, str]

    @property
    def ssebench(self) -> str:
        return str(self.venv / "bin" / "ssebench")

    def run(
        self, *args: str, timeout: float = 120, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.ssebench, *args],
            cwd=self.work,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode in ok, f"ssebench {' '.join(args)} exit {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done

    def example(self) -> Path:
        """The demo task inside the installed package."""
        return self.site_packages() / "ssebench" / "examples" / "tasks" / "demo-overflow" / "task.toml"

    def site_packages(self) -> Path:
        (found,) = (self.venv / "lib").glob("python3*/site-packages")
        return found


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Install:
    root = tmp_path_factory.mktemp("plain-install")
    dist = root / "dist"
    _pip("wheel", "--no-deps", "--wheel-dir", str(dist), str(REPO))
    (wheel,) = dist.glob("ssebench-*.whl")
    house = _wheelhouse(_requirements(wheel))
    venv = root / "venv"
    # as a user does: a venv with its own pip (``run --docker`` uses it for the image's wheels);
    # no index and no byte-compiling (about half the install time; modules compile on import)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    _pip(
        "install",
        "--no-compile",
        "--no-index",
        "--find-links",
        str(house),
        str(wheel),
        python=str(venv / "bin" / "python"),
    )
    home, work = root / "home", root / "work"
    home.mkdir(mode=0o700)
    work.mkdir()
    leaky = (
        "PYTHON",
        "VIRTUAL_ENV",
        "SSE_",
        "MCP_",
        "XDG_",
        "ANTHROPIC_",
        "OPENAI_",
        "GEMINI_",
        "GOOGLE_",
        "CODEX_",
        "CLAUDE_",
        "OPENCODE_",
        "OPENROUTER_",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(leaky)}
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", NO_COLOR="1", COLUMNS="200")
    return Install(venv, wheel, work, home, env)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def _background(install: Install, *args: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [install.ssebench, *args],
        cwd=install.work,
        env=install.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)


def _wait(condition, proc: subprocess.Popen[str], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"{what}: exited {proc.returncode}:\n{proc.stdout.read() if proc.stdout else ''}"
        assert time.monotonic() < deadline, f"{what}: not ready after {timeout} s"
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[str], sig: int = signal.SIGINT) -> tuple[int, str]:
    os.killpg(proc.pid, sig)
    out, _ = proc.communicate(timeout=60)
    return proc.returncode, out


# -- the tests --------------------------------------------------------------------------------------


def test_the_package_comes_from_the_venv_not_the_checkout(installed: Install) -> None:
    where = subprocess.run(
        [
            str(installed.venv / "bin" / "python"),
            "-c",
            "import ssebench, ssebench.server; print(ssebench.__file__); print(ssebench.server.__file__)",
        ],
        cwd=installed.work,
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.returncode == 0, where.stderr
    for line in where.stdout.split():
        assert Path(line).is_relative_to(installed.site_packages()), line
    assert installed.run("--version").stdout == "ssebench 0.1.0\n"
    assert installed.example().is_file()


def test_every_module_has_one_name_in_the_wheel(installed: Install) -> None:
    """The probe of tests/test_layout.py, on the plain install: no ``server``, no ``agents``."""
    from tests.test_layout import probe

    found = probe(str(installed.venv / "bin" / "python"), installed.work, installed.env)
    assert (found["failed"], found["twice"], found["stray"]) == ({}, {}, {})
    assert found["report"] == str(installed.site_packages() / "ssebench" / "server" / "report.py")


def test_demo(installed: Install) -> None:
    out = installed.run("demo", timeout=300).stdout
    for line in (
        "======== difficulty level 2, NO_FUTURE_TEST (the default) ========================",
        "test_patch result: every check that ran passed.",
        "======== difficulty level 0, FULL_ASSISTANCE =====================================",
        "test_patch result: FAILED. At least one proof-of-concept (PoC) still triggers the vulnerability. "
        "Please reassess your patch and make sure it fixes the root cause of the vulnerability.",
        "test_patch result: every check passed.",
    ):
        assert line in out.splitlines()


def test_agents_commands_with_a_private_home(installed: Install) -> None:
    installed.run("agents", "install", "claude")
    entry = json.loads((installed.home / ".claude.json").read_text())["mcpServers"]["ssebench"]
    assert entry["url"] == "http://localhost:3000/mcp"
    for client in CLIENTS:
        installed.run("agents", "install", client, "--dry-run")
        shown = installed.run("agents", "show", client).stdout
        assert shown == (REPO / "configs" / "examples" / f"{client}.show.txt").read_text(), client
    listed = installed.run("agents", "list").stdout
    assert any(line.split()[:1] == ["claude"] and " yes " in line for line in listed.splitlines()), listed
    generic = installed.run("agents", "install", "generic").stdout
    assert '"mcpServers"' in generic
    installed.run("agents", "uninstall", "claude")
    dockerfile = installed.run("agents", "dockerfile", "claude").stdout
    pins = json.loads((REPO / "configs" / "agent-clis" / "package.json").read_text())["dependencies"]
    assert (
        f'      org.ssebench.agent-package="@anthropic-ai/claude-code@{pins["@anthropic-ai/claude-code"]}"'
        in dockerfile.splitlines()
    )


def test_up_serves_the_tool_until_ctrl_c(installed: Install) -> None:
    from ssebench.doctor import mcp_server_name

    port = _free_port()
    with _background(installed, "up", "--task", str(installed.example()), "--port", str(port)) as proc:
        _wait(lambda: mcp_server_name(f"http://127.0.0.1:{port}/mcp") == "ssebench", proc, "ssebench up")
        code, out = _stop(proc)
    assert code in (0, 130), out
    assert (
        f"ssebench: serving test_patch at http://localhost:{port}/mcp (difficulty 2, NO_FUTURE_TEST); "
        "Ctrl-C stops." in out.splitlines()
    )


def test_daemon_and_serve_each_on_their_own(installed: Install, tmp_path: Path) -> None:
    from ssebench.doctor import mcp_server_name

    sock = Path(tempfile.mkdtemp(prefix="n1-", dir="/tmp")) / "d.sock"
    try:
        with _background(installed, "daemon", "--task", str(installed.example()), "--socket", str(sock)) as daemon:
            _wait(sock.is_socket, daemon, "ssebench daemon")
            port = _free_port()
            with _background(installed, "serve", "--port", str(port), "--daemon-socket", str(sock)) as server:
                _wait(lambda: mcp_server_name(f"http://127.0.0.1:{port}/mcp") == "ssebench", server, "ssebench serve")
                doctor = installed.run("doctor", "--json", "--port", str(port), ok=(0, 1))
                _stop(server)
            code, _ = _stop(daemon, signal.SIGTERM)
            assert code == 0
    finally:
        shutil.rmtree(sock.parent, ignore_errors=True)
    checks = {c["check"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["python"]["status"] == "ok"
    assert checks[f"port {port}"]["status"] == "ok"
    assert checks[f"port {port}"]["detail"].startswith("in use by a running ssebench server")
    assert "sandbox" in checks and "claude" in checks
    # issue 31: the demo job ships in the package, and doctor says how to run it
    job = installed.site_packages() / "ssebench" / "examples" / "jobs" / "demo.toml"
    assert checks["examples"] == {
        "check": "examples",
        "status": "ok",
        "detail": f"the demo job: ssebench jobs run {job}",
        "fix": "",
    }
    loaded = subprocess.run(
        [
            str(installed.venv / "bin" / "python"),
            "-c",
            "import sys; from pathlib import Path; from ssebench.jobs import jobfile; "
            "job = jobfile.load(Path(sys.argv[1])); print(len(job.tasks), [a.name for a in job.agents])",
            str(job),
        ],
        cwd=installed.work,
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (loaded.returncode, loaded.stdout) == (0, "1 ['fixer', 'noop']\n"), loaded.stderr
    assert os.access(job.parent / "apply-fix.sh", os.X_OK)  # the fixer's command, run from the package


def test_view_serves_its_pages_and_assets_from_the_wheel(installed: Install, tmp_path: Path) -> None:
    """``ssebench view``'s templates and static files ship in the wheel (issue 23)."""
    import httpx

    from ssebench.view.sample import write_runs

    write_runs(tmp_path, 2)
    port = _free_port()
    with _background(installed, "view", str(tmp_path / "runs"), "--port", str(port)) as proc:
        url = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return httpx.get(url + "/static/view.css", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        _wait(up, proc, "ssebench view")
        assert "Runs <small>(2 shown of 2)</small>" in httpx.get(url + "/", timeout=10).text
        assert "poll" in httpx.get(url + "/static/view.js", timeout=10).text
        assert '<li class="event complete"' in httpx.get(url + "/run/0/run-0001", timeout=10).text
    assert (installed.site_packages() / "ssebench" / "view" / "templates" / "run.html").is_file()


def test_grade_run_and_dialog(installed: Install, tmp_path: Path) -> None:
    graded = installed.run("grade", "--task", str(installed.example()), "--json", ok=(1,), timeout=300)
    assert [c["check"] for c in json.loads(graded.stdout)["checks"]][:2] == ["build", "pocs"]
    results = tmp_path / "run"
    installed.run(
        "run", "--task", str(installed.example()), "--results", str(results), "--", "true", ok=(1,), timeout=300
    )  # the agent changed nothing: the unfixed tree fails grading
    assert json.loads((results / "results.json").read_text())["status"] == "checks_failed"
    refused = installed.run("run", "--task", str(installed.example()), "--agent", "claude", ok=(2,))
    assert refused.stderr.startswith("ssebench run: claude cannot run:\n  - no model API key: set ANTHROPIC_API_KEY")
    dialog = tmp_path / "dialog.jsonl"
    dialog.write_text(
        json.dumps({"seq": 1, "ts": "2026-12-01T00:00:00.000Z", "type": "prompt", "text": "Fix it"})
        + "\n"
        + json.dumps(
            {
                "seq": 2,
                "ts": "2026-12-01T00:00:01.000Z",
                "type": "complete",
                "status": "success",
                "turns": 0,
                "duration": 1.0,
                "tokens": {"input": 0, "output": 0, "cached": 0},
                "exit_code": 0,
            }
        )
        + "\n"
    )
    shown = installed.run("dialog", "show", str(dialog)).stdout
    assert "Fix it" in shown


def test_task_check_new_completion_and_entrypoint(installed: Install, tmp_path: Path) -> None:
    installed.run("task", "check", str(installed.example()))
    installed.run("task", "new", str(tmp_path / "mytask"))
    installed.run("task", "check", str(tmp_path / "mytask" / "task.toml"))
    assert "ssebench" in installed.run("completion", "bash").stdout
    tree = tmp_path / "tree"
    shutil.copytree(installed.example().parent / "src", tree)
    done = installed.run(
        "entrypoint",
        "--",
        "true",
        ok=(1,),
        timeout=300,
        env={
            "SSE_TASK": str(installed.example()),
            "SSE_TREE": str(tree),
            "SSE_RESULTS_DIR": str(tmp_path / "results"),
            "SSE_MCP_PORT": str(_free_port()),
        },
    )
    assert json.loads((tmp_path / "results" / "results.json").read_text())["status"] == "checks_failed", done.stderr


def test_the_task_image_wheel_from_the_installed_files_has_no_example(installed: Install, tmp_path: Path) -> None:
    made = subprocess.run(
        [
            str(installed.venv / "bin" / "python"),
            "-c",
            "import sys; from pathlib import Path; from ssebench.container.selfwheel import "
            "build_image_wheel; print(build_image_wheel(Path(sys.argv[1])))",
            str(tmp_path / "w"),
        ],
        cwd=installed.work,
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    image_wheel = Path(made.stdout.strip())
    with zipfile.ZipFile(image_wheel) as image, zipfile.ZipFile(installed.wheel) as full:
        image_names, full_names = set(image.namelist()), set(full.namelist())
        assert not any("examples/tasks" in n or n.endswith(("task.toml", "intent.diff")) for n in image_names)
        assert image_names == {n for n in full_names if not n.startswith("ssebench/examples/")}
        assert image.testzip() is None
    # pip accepts it (RECORD and hashes right); installed alone into a folder of its own, it
    # runs on the venv's dependencies and has no demo task
    target = tmp_path / "image-site"
    _pip("install", "--no-deps", "--no-index", "--target", str(target), str(image_wheel))
    assert not (target / "ssebench" / "examples").exists() and (target / "ssebench" / "configs").is_dir()
    env = {**installed.env, "PYTHONPATH": str(target)}
    main = [str(installed.venv / "bin" / "python"), "-c", "from ssebench.cli import main; main()"]
    check = subprocess.run(
        [*main, "agents", "dockerfile", "codex"],
        cwd=installed.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr
    demo = subprocess.run([*main, "demo"], cwd=installed.work, env=env, capture_output=True, text=True, timeout=60)
    assert (demo.returncode, demo.stderr) == (
        2,
        "ssebench demo: the example task ships with the source checkout, not the package; pass --task FILE\n",
    )


@pytest.mark.e2e
def test_run_docker_from_the_plain_install_hides_the_task(installed: Install, tmp_path: Path) -> None:
    """``ssebench run --docker`` builds its task image from the installed files; the agent's
    container holds none of the task's hidden parts (the example's PoCs, intent diff, task.toml)."""
    from ssebench.container.docker import DockerEngine, DockerRunError, cache_dir
    from ssebench.container.dockerfile import DEFAULT_BASE_IMAGE

    try:
        engine = DockerEngine.locate()
    except DockerRunError as error:
        pytest.skip(f"no Docker engine here: {error}")
    if not engine.has_image(DEFAULT_BASE_IMAGE):
        pytest.skip(f"no base image {DEFAULT_BASE_IMAGE} (tests/e2e/test_docker.py builds it)")
    hidden = ("task.toml", "intent.diff", "long-name", "sixteen-chars")
    search = " -o ".join(f"-name {name}" for name in hidden)
    probe = (
        f"found=$(find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o \\( {search} \\) -print);"
        ' echo "FOUND:$found"'
    )
    results = tmp_path / "r"
    installed.run(
        "run",
        "--docker",
        "--task",
        str(installed.example()),
        "--results",
        str(results),
        "--",
        "sh",
        "-c",
        probe,
        ok=(1,),
        timeout=900,
        env={"DOCKER_HOST": engine.host, "SSEBENCH_CACHE": str(cache_dir())},
    )  # this user's wheel cache
    assert (results / "agent-stdout.log").read_text() == "FOUND:\n"
    assert json.loads((results / "results.json").read_text())["status"] == "checks_failed"  # graded in the sidecar
