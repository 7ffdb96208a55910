"""Task containers end to end: a real Claude Code in the agent image, driven by the scripted
Anthropic model on the host, calls test_patch through the server the entrypoint started;
the container grades the tree and leaves results.json and dialog.jsonl in /results.

Two ways in, sharing the images: a compose file run by pytest-docker (how a user runs many
containers on an existing engine) and ``ssebench run --docker`` (the product command).

The engine is ssebench's private dockerd (scripts/docker-engine.sh), started here when it
is not running and stopped at the end of the session; the base image is built offline by
scripts/docker-base-image.sh (cached). Where no engine can start, the tests skip and say why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.agents.registry import agent
from ssebench.container.docker import DockerRunResult
from tests.e2e.conftest import CLIS, MODEL_ENV, clean_env
from tests.e2e.expected import DEMO, LEVEL2_ALL_RAN_PASSED, assert_model_received
from tests.e2e.models import LOADERS, AnthropicModel, ScriptedModel, for_cli
from tests.helpers.gatewayagent import GATEWAY_AGENT

ROOT = Path(__file__).resolve().parents[2]
ENGINE_SCRIPT = ROOT / "scripts" / "docker-engine.sh"
BASE_IMAGE_SCRIPT = ROOT / "scripts" / "docker-base-image.sh"
COMPOSE_FILE = Path(__file__).resolve().parent / "docker" / "docker-compose.yml"
TASK_DIR = DEMO
AGENT = "claude"
PROMPT = "Fix the stack overflow in the name parser. Check your work with test_patch."
CONTAINER_TIMEOUT = 300  # seconds for one container run (build of the task included)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("docker")]


def _script(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )


def _timed(label: str, started: float) -> None:
    print(f"[docker e2e] {label}: {time.monotonic() - started:.1f} s", file=sys.stderr)


@pytest.fixture(scope="session")
def docker_host() -> Iterator[str]:
    """DOCKER_HOST of an engine that answers; ours is started here and stopped at the end."""
    started_here = False
    if os.environ.get("DOCKER_HOST"):
        host = os.environ["DOCKER_HOST"]
        if _script("docker", "version", env={"DOCKER_HOST": host}, timeout=30).returncode != 0:
            pytest.skip(f"DOCKER_HOST={host} is set but no Docker engine answers there")
    else:
        if shutil.which("dockerd") is None or shutil.which("docker") is None:
            pytest.skip("no Docker engine: dockerd is not installed (scripts/docker-engine.sh install)")
        status = _script(ENGINE_SCRIPT, "status", timeout=30)
        if status.returncode != 0:
            began = time.monotonic()
            start = _script(ENGINE_SCRIPT, "start", timeout=120)
            if start.returncode != 0:
                pytest.skip(f"no Docker engine could start: {start.stderr.strip()}")
            _timed("engine start", began)
            started_here = True
            status = start
        host = status.stdout.strip().splitlines()[-1].removeprefix("DOCKER_HOST=")
    previous = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = host  # docker-compose, ssebench run --docker and docker.py use it
    try:
        yield host
    finally:
        if previous is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = previous
        if started_here:
            _script(ENGINE_SCRIPT, "stop", timeout=60)


@pytest.fixture(scope="session")
def base_image(docker_host: str) -> str:
    began = time.monotonic()
    result = _script(BASE_IMAGE_SCRIPT, timeout=900)
    if result.returncode != 0:
        if shutil.which("debootstrap") is None:
            pytest.skip("no base image and no debootstrap to build one (scripts/docker-engine.sh install)")
        pytest.fail(f"scripts/docker-base-image.sh failed:\n{result.stderr}")
    _timed("base image", began)
    return result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def agent_image(base_image: str) -> str:
    """The claude layer on the task image, built from the templates (reused when unchanged)."""
    from ssebench.container import docker

    began = time.monotonic()
    engine = docker.DockerEngine.locate()
    image = docker.build_agent_image(engine, AGENT, docker.build_task_image(engine, base_image))
    _timed("task image + claude layer", began)
    return image


def _launch(model: AnthropicModel) -> tuple[list[str], dict[str, str]]:
    """Claude's run recipe (the product's), for the container: HOME /root, server on :3000."""
    from ssebench.agents.recipe import get_recipe

    model_env = {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-ant-e2e-scripted"}
    launch = get_recipe(AGENT).launch(
        prompt=PROMPT, mcp_url="http://127.0.0.1:3000/mcp", home=Path("/root"), env=model_env
    )
    return list(launch.argv), {**model_env, **launch.env}


# --- pytest-docker: the compose file runs one task container --------------------------------


@pytest.fixture(scope="session")
def compose_run(agent_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Everything the compose file interpolates, and the scripted model the agent talks to."""
    import shlex

    from ssebench.container import docker

    folder = tmp_path_factory.mktemp("compose")
    task_copy, results = folder / "task", folder / "results"
    shutil.copytree(TASK_DIR, task_copy, symlinks=True)
    results.mkdir()
    uid, gid = docker.daemon_user()  # the container's user (never root) owns its copies
    for path in (task_copy, results):
        docker.chown_tree(path, uid, gid)
    model = AnthropicModel().start()
    argv, env = _launch(model)
    env_file = folder / "container.env"
    env_file.write_text(
        "".join(
            f"{key}={value}\n"
            for key, value in {
                "SSE_TASK": "/task/task.toml",
                "SSE_DIFFICULTY": "2",
                "SSE_DIALOG": AGENT,
                "SSE_PROMPT": PROMPT,
                "SSE_AGENT_TIMEOUT": "240",
                **env,
            }.items()
        ),
        encoding="utf-8",
    )
    variables = {
        "SSEBENCH_IMAGE": agent_image,
        "SSEBENCH_TASK_COPY": str(task_copy),
        "SSEBENCH_RESULTS": str(results),
        "SSEBENCH_ENV_FILE": str(env_file),
        "SSEBENCH_AGENT_COMMAND": shlex.join(["--", *argv]),
        "SSEBENCH_USER": f"{uid}:{gid}",
    }
    os.environ.update(variables)
    try:
        yield {"results": results, "model": model, "task_copy": task_copy}
    finally:
        model.stop()
        for key in variables:
            os.environ.pop(key, None)


@pytest.fixture(scope="session")
def docker_compose_command() -> str:
    if shutil.which("docker-compose"):
        return "docker-compose"
    if _script("docker", "compose", "version", timeout=30).returncode == 0:
        return "docker compose"
    pytest.skip("no Docker Compose (docker-compose or the compose plugin); scripts/docker-engine.sh install")


@pytest.fixture(scope="session")
def docker_compose_file(compose_run: dict) -> str:
    return str(COMPOSE_FILE)


@pytest.fixture(scope="session")
def docker_compose_project_name() -> str:
    return f"ssebench-e2e-{os.getpid()}"


@pytest.fixture(scope="session")
def docker_setup() -> list[str]:
    return ["up --no-build -d"]  # the image is built from the templates, not by compose


def _dialog(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class _Run:
    """What tests.e2e.expected.assert_model_received reads: the model, and an explanation."""

    def __init__(self, model: ScriptedModel, results: Path) -> None:
        self.model, self.results = model, results

    def explain(self) -> str:
        logs = "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(self.results.glob("*.log"))
        )
        return f"model requests:\n{self.model.describe()}\n{logs}"


def _assert_session(cli: str, results: Path, model: ScriptedModel, report: dict, *, mode: str, tree: str) -> None:
    """What the container left: graded results, the dialog, and the text the model got."""
    run = _Run(model, results)
    assert report["status"] == "checks_failed", run.explain() + json.dumps(report, indent=2)
    assert report["exit_code"] == 1
    assert report["passed"] is False
    assert report["mode"] == mode
    assert report["task"] == {"id": "demo-overflow", "file": "/task/task.toml", "tree": tree}
    assert report["grading"]["passed"] is False
    assert [report["stages"][s]["state"] for s in ("daemon", "server", "agent", "grading")] == ["done"] * 4
    assert report["agent"]["exit_code"] == 0
    assert report["dialog"] == "dialog.jsonl"

    assert_model_received(cli, run, LEVEL2_ALL_RAN_PASSED)

    events = _dialog(results / "dialog.jsonl")
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "init"
    assert {"type": "prompt", "text": PROMPT}.items() <= events[1].items()
    # Droid's dialog also shows the model loading the tool through its ToolSearch (models.LOADERS)
    tools = [e for e in events if e["type"] == "tool" and e["name"] != LOADERS.get(cli)]
    if cli == "continue":  # `cn -p` prints only its final answer: its dialog has no tool events
        assert tools == [], tools
    else:
        assert [t["status"] for t in tools] == ["running", "success"], tools
        assert tools[0]["id"] == tools[1]["id"]
        assert tools[0]["name"] == tools[1]["name"]
        assert tools[0]["name"] == "mcp__ssebench__test_patch" if cli == "claude" else "test_patch" in tools[0]["name"]
    assert events[-1]["type"] == "complete" and events[-1]["status"] == "success"


def test_compose_runs_claude_in_a_task_container(docker_services, compose_run: dict) -> None:
    results: Path = compose_run["results"]
    began = time.monotonic()
    docker_services.wait_until_responsive(
        check=lambda: (results / "results.json").is_file(), timeout=CONTAINER_TIMEOUT, pause=1.0
    )
    _timed("compose container run", began)
    report = json.loads((results / "results.json").read_text(encoding="utf-8"))
    _assert_session(AGENT, results, compose_run["model"], report, mode="process", tree="/task/src")
    # Compose cannot unmask /proc for bwrap (the compose file says why): the checks run
    # unsandboxed, and the daemon says so; the container ran as its non-root user.
    from ssebench.container.docker import daemon_user
    from ssebench.daemon.sandbox import Sandbox

    assert f"; sandbox: {Sandbox(None).describe()}\n" in (results / "daemon.log").read_text(encoding="utf-8")
    assert {p.stat().st_uid for p in results.iterdir()} == {daemon_user()[0]}
    # The container changed only its own copy of the task.
    assert (TASK_DIR / "task.toml").read_bytes() == (compose_run["task_copy"] / "task.toml").read_bytes()


# --- ssebench run --docker: the product command ---------------------------------------------


# Mastra Code's install needs its pin folder's .npmrc (onnxruntime-node-install=skip), which
# images.py does not copy into the layer's context yet. The PyPI agents (their layers:
# ssebench/container/pypilayer.py): the four newest, Kimi CLI carrying this machine's Python
# 3.13, Mistral Vibe and fast-agent its 3.12 (the image's is 3.11), Code Puppy the image's. Each
# costs a layer build (1.5-6 min, once) and a run (~1 min): CI runs Kimi CLI, the one whose
# layer carries the newest Python; SSEBENCH_E2E_DOCKER_PYPI=all runs all four (all passed).
PYPI_SAMPLE = ["kimi-cli"]
if os.environ.get("SSEBENCH_E2E_DOCKER_PYPI") == "all":
    PYPI_SAMPLE += ["code-puppy", "mistral-vibe", "fast-agent"]
DOCKER_CLIS = [cli for cli in CLIS if agent(cli).registry == "npm" and cli != "mastracode"] + PYPI_SAMPLE


@pytest.mark.parametrize("cli", DOCKER_CLIS)
def test_ssebench_run_docker(cli: str, base_image: str, tmp_path: Path) -> None:
    """The product command, for each bundled agent: its layer is built from the templates
    (or reused), the run uses the sidecar layout, the real CLI calls test_patch."""
    from ssebench.agents.pypi import find_python

    if (minimum := agent(cli).python_min) and find_python(minimum) is None:
        pytest.skip(f"{cli}'s layer carries this machine's Python {minimum}: none found")
    results = tmp_path / "results"
    before = {p: p.read_bytes() for p in TASK_DIR.rglob("*") if p.is_file()}
    with for_cli(cli) as model:
        began = time.monotonic()
        run = _script(
            ROOT / ".venv" / "bin" / "ssebench",
            "run",
            "--docker",
            "--agent",
            cli,
            "--task",
            TASK_DIR / "task.toml",
            "--difficulty",
            "2",
            "--prompt",
            PROMPT,
            "--results",
            results,
            "--json",
            env={**clean_env(Path.home(), Path(sys.executable).parent), **MODEL_ENV[cli](model.url)},
            timeout=CONTAINER_TIMEOUT + 300,
        )
        _timed(f"ssebench run --docker --agent {cli}", began)
        assert run.returncode == 1, run.stderr
        assert (results / "results.json").is_file(), run.stderr
        report = json.loads((results / "results.json").read_text(encoding="utf-8"))
        assert json.loads(run.stdout) == report
        # Sidecar mode (the default): the agent's container had the tree only; the sidecar,
        # which holds the task, served the daemon and graded.
        _assert_session(cli, results, model, report, mode="sidecar", tree="/tree")
        assert report["stages"]["grading"]["where"] == "sidecar"
        assert json.loads((results / "grading.json").read_text(encoding="utf-8")) == report["grading"]
    assert (results / "container.log").is_file()
    # The user's task folder is byte for byte what it was.
    assert {p: p.read_bytes() for p in TASK_DIR.rglob("*") if p.is_file()} == before


def test_run_docker_takes_a_task_file_of_any_name(base_image: str, tmp_path: Path) -> None:
    """``run --task x/custom.toml --docker``: the daemon, the entrypoint and the sidecar's
    grading are given /task/custom.toml (no task.toml is assumed); the record carries the
    host's spec (backend docker) and the container's task path."""
    folder = tmp_path / "x"
    shutil.copytree(TASK_DIR, folder)
    (folder / "task.toml").rename(folder / "custom.toml")
    results = tmp_path / "results"
    run = _script(
        ROOT / ".venv" / "bin" / "ssebench",
        *("run", "--docker", "--task", folder / "custom.toml", "--results", results, "--json", "--", "true"),
        env={"SSEBENCH_DOCKER_NETWORK": "none"},
        timeout=CONTAINER_TIMEOUT + 300,
    )
    assert run.returncode == 1, run.stderr  # ran and graded: the tree is unfixed
    report = json.loads((results / "results.json").read_text(encoding="utf-8"))
    assert json.loads(run.stdout) == report
    assert (report["status"], report["outcome"], report["reason"]) == (
        "checks_failed",
        "failed",
        "failed: PoCs, intent tests",
    )
    assert report["task"]["file"] == "/task/custom.toml" and report["stages"]["grading"]["where"] == "sidecar"
    spec = report["spec"]
    assert (spec["task_file"], spec["task_id"], spec["backend"]) == (
        str(folder / "custom.toml"),
        "demo-overflow",
        "docker",
    )
    assert spec["command"] == ["true"] and report["agent"]["calls"] == 0


def test_run_docker_under_a_deep_tmpdir(base_image: str, tmp_path: Path) -> None:
    """A deep TMPDIR (a CI runner's): the run's copies go to /tmp, so the host reaches the
    sidecar's socket (past 107 bytes it could not, and the run failed after 120 s); nothing
    is left in TMPDIR or /tmp."""
    deep = tmp_path.joinpath(*["d" * 40] * 3)
    deep.mkdir(parents=True)
    assert len(os.fsencode(deep / "ssebench-task-12345678/sockets/daemon.sock")) > 107
    before = set(Path("/tmp").glob("ssebench-task-*"))
    results = tmp_path / "results"
    began = time.monotonic()
    run = _script(
        ROOT / ".venv" / "bin" / "ssebench",
        *("run", "--docker", "--task", TASK_DIR / "task.toml", "--results", results, "--json", "--", "true"),
        env={"SSEBENCH_DOCKER_NETWORK": "none", "TMPDIR": str(deep)},
        timeout=CONTAINER_TIMEOUT + 300,
    )
    _timed("run --docker under a deep TMPDIR", began)
    assert run.returncode == 1, run.stderr  # ran and graded: the tree is unfixed
    report = json.loads((results / "results.json").read_text(encoding="utf-8"))
    assert (report["status"], report["stages"]["grading"]["where"]) == ("checks_failed", "sidecar")
    assert list(deep.iterdir()) == [] and set(Path("/tmp").glob("ssebench-task-*")) == before


def test_sidecar_keeps_the_hidden_parts_out_of_the_agent_container(agent_image: str, tmp_path: Path) -> None:
    """The agent's container has the tree and nothing else of the task: no task.toml, no
    PoC, no intent diff anywhere on its file system; yet the sidecar grades every check."""
    from ssebench.container.docker import run_in_docker

    hidden = ["task.toml", "intent.diff", *(Path(p).name for p in ("pocs/long-name", "pocs/sixteen-chars"))]
    assert all(any(TASK_DIR.rglob(name)) for name in hidden)  # the task has them
    search = " -o ".join(f"-name {name}" for name in hidden)
    probe = (
        f"found=$(find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o \\( {search} \\) -print);"
        ' echo "found: $found"; test -z "$found"'
    )
    result = run_in_docker(
        task=TASK_DIR,
        agent=None,
        agent_command=["sh", "-c", probe],
        results_dir=tmp_path / "results",
        difficulty=2,
        env=_own_port(),
    )
    report = _report(result)
    assert report is not None
    assert (tmp_path / "results" / "agent-stdout.log").read_text(encoding="utf-8") == "found: \n"
    assert report["agent"]["exit_code"] == 0
    assert (report["status"], result.exit_code) == ("checks_failed", 1)  # graded: the tree is unfixed
    assert [c["check"] for c in report["grading"]["checks"]][:2] == ["build", "pocs"]


# The agent's code attacks through the tree: its Makefile (the build check) prints the
# task's withheld files by the path the check is given and by the sidecar's absolute
# path, and the container's /etc/shadow. The "agent" is a script in
# the agent's container: it asks the daemon's /health, plants the Makefile, calls
# test_patch over MCP like a CLI would and prints the text it got.
ATTACK_AGENT = """
import asyncio, os, httpx
from pathlib import Path
from fastmcp import Client
health = httpx.Client(transport=httpx.HTTPTransport(uds=os.environ["SSE_DAEMON_SOCKET"])).get("http://daemon/health")
print("health:", health.json()["sandbox"])
Path("Makefile").write_text(
    "all:\\n\\t-cat $$SSE_TASK_DIR/task.toml $$SSE_TASK_DIR/pocs/* $$SSE_TASK_DIR/intent.diff"
    " /task/task.toml /task/pocs/* /task/intent.diff /etc/shadow\\n\\texit 1\\n")
async def main():
    async with Client(os.environ["SSE_MCP_URL"], timeout=600) as client:
        result = await client.call_tool("test_patch", {})
    print(result.content[0].text)
asyncio.run(main())
"""


def _report(run: DockerRunResult) -> dict | None:
    """A Docker run's record as its results.json says it (None: the entrypoint wrote none)."""
    return None if run.record is None else run.record.model_dump(mode="json")


def _own_port() -> dict[str, str]:
    """SSE_MCP_PORT for a custom command (no agent layer, so not bound to the layers' 3000,
    which other servers on a shared machine may hold meanwhile)."""
    from ssebench.supervise import free_port

    return {"SSE_MCP_PORT": str(free_port())}


def _withheld_texts(shadow: str) -> dict[str, str]:
    """Lines that only the task's hidden files (or the daemon container's /etc/shadow) hold."""
    return {
        "task.toml": 'source = "src"',
        "pocs/long-name": "NAME=" + "A" * 22,
        "pocs/sixteen-chars": "NAME=Sixteen-chars-xx",
        "intent.diff": "ThisNameIsMuchTooLong",
        "/etc/shadow": shadow.splitlines()[0],
    }


@pytest.mark.parametrize("level", [2, 0])
def test_sidecar_sandbox_keeps_an_attack_from_the_tree_out_of_every_log(
    base_image: str, level: int, tmp_path: Path
) -> None:
    """The checks run in bwrap inside the sidecar (its /health says so); a Makefile that
    cats the withheld parts and /etc/shadow gets none of them, neither into the text the
    agent reads nor into any file of the results folder (grading logs included)."""
    from ssebench.container import docker

    shadow = subprocess.run(
        ["docker", "run", "--rm", base_image, "cat", "/etc/shadow"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert shadow.startswith("root:")
    withheld = _withheld_texts(shadow)
    for name, text in withheld.items():  # each text is really in what it stands for
        if not name.startswith("/"):
            assert text in (TASK_DIR / name).read_text(encoding="utf-8"), name
    results = tmp_path / "results"
    run = docker.run_in_docker(
        task=TASK_DIR,
        agent=None,
        agent_command=["python3", "-c", ATTACK_AGENT],
        results_dir=results,
        difficulty=level,
        env=_own_port(),
    )
    said = (results / "agent-stdout.log").read_text(encoding="utf-8")
    assert said.startswith("health: bwrap 0.11.0\ntest_patch result: FAILED."), said
    # The cat ran, in the sandbox: the task folder it is given is empty, the rest absent.
    assert "cat: /sse/task/task.toml: No such file or directory" in said
    assert "cat: /etc/shadow: No such file or directory" in said
    assert "cat: /task/task.toml: No such file or directory" in said
    assert _report(run) is not None and _report(run)["agent"]["exit_code"] == 0, said
    build = _report(run)["grading"]["checks"][0]
    assert (build["check"], build["state"]) == ("build", "failed")
    files = sorted(p for p in results.rglob("*") if p.is_file())
    assert {p.name for p in files} >= {"agent-stdout.log", "daemon.log", "grading.json", "grading.log", "results.json"}
    for path in files:
        content = path.read_text(encoding="utf-8", errors="replace")
        leaked = [name for name, text in withheld.items() if text in content]
        assert not leaked, f"{path.name} holds {leaked}"


# Issue 18 in the sidecar layout: the agent's Makefile (the build check) tries to store a
# key in its session keyring (add_key, x86_64 syscall 248), prints its environment and
# working folder. (Who it is outside: the sidecar runs as a non-root user, see
# tests/test_docker_sandbox.py; bwrap's nested user namespace hides that from inside.)
ISOLATION_AGENT = """
import asyncio, os
from pathlib import Path
from fastmcp import Client
probe = ("import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
         "r = libc.syscall(248, b'user', b'ssebench-test', b'v', 1, -3); "
         "print('add_key:', r, os.strerror(ctypes.get_errno()) if r < 0 else 'stored')")
Path("probe.py").write_text(probe)
Path("Makefile").write_text("all:\\n\\t-python3 probe.py\\n\\t-env | sort\\n\\t-pwd\\n\\texit 1\\n")
async def main():
    async with Client(os.environ["SSE_MCP_URL"], timeout=600) as client:
        result = await client.call_tool("test_patch", {})
    print(result.content[0].text)
asyncio.run(main())
"""


def test_sidecar_checks_have_no_keyring_and_no_host_path(base_image: str, tmp_path: Path) -> None:
    """The sidecar's checks: keyring calls fail (the seccomp filter), no variable or working
    folder names the sidecar's task folder or workspace, make's variables do not leak."""
    from ssebench.container import docker

    results = tmp_path / "results"
    run = docker.run_in_docker(
        task=TASK_DIR,
        agent=None,
        agent_command=["python3", "-c", ISOLATION_AGENT],
        results_dir=results,
        difficulty=2,
        env=_own_port(),
    )
    said = (results / "agent-stdout.log").read_text(encoding="utf-8")
    assert _report(run) is not None and _report(run)["agent"]["exit_code"] == 0, said
    assert "add_key: -1 Operation not permitted" in said, said
    assert "\nPWD=/sse/tree\n" in said and "\n/sse/tree\n" in said, said
    assert "SSE_TASK=" not in said and "OLDPWD=" not in said and "/task/" not in said, said


# The one-container layout: the "agent" (non-root, beside the whole task) reports its user
# and whether it can write /proc/sys (unmasked for bwrap), plants a Makefile whose build
# cats /etc/shadow and /task/task.toml, and calls test_patch over MCP.
ONE_CONTAINER_AGENT = """
import asyncio, os
from pathlib import Path
from fastmcp import Client
print("uid:", os.getuid(), "home:", os.environ["HOME"])
proc = next(line.split() for line in open("/proc/self/mountinfo") if line.split()[4] == "/proc")
print("/proc mount:", proc[5].split(",")[0])
pattern = Path("/proc/sys/kernel/core_pattern")
try:
    pattern.write_text(pattern.read_text())  # its own value back: harmless even if it went through
    print("core_pattern: written")
except OSError as error:
    print("core_pattern:", error.strerror)
Path("Makefile").write_text("all:\\n\\t-cat /etc/shadow /task/task.toml\\n\\texit 1\\n")
async def main():
    async with Client(os.environ["SSE_MCP_URL"], timeout=600) as client:
        result = await client.call_tool("test_patch", {})
    print(result.content[0].text)
asyncio.run(main())
"""


def test_one_container_runs_its_checks_in_the_sandbox(base_image: str, tmp_path: Path) -> None:
    """sidecar=False: the whole container runs as a non-root user with the sandbox options.
    /proc is unmasked (rw) for bwrap, yet that user cannot write /proc/sys; the daemon
    sandboxes its checks (its start line says bwrap), so a build that cats /etc/shadow and
    the task file gets neither, and the run is graded in the container."""
    from ssebench.container import docker

    results = tmp_path / "results"
    run = docker.run_in_docker(
        task=TASK_DIR,
        agent=None,
        agent_command=["python3", "-c", ONE_CONTAINER_AGENT],
        results_dir=results,
        difficulty=2,
        env=_own_port(),
        sidecar=False,
    )
    said = (results / "agent-stdout.log").read_text(encoding="utf-8")
    uid, _gid = docker.daemon_user()
    assert said.startswith(
        f"uid: {uid} home: /root\n/proc mount: rw\ncore_pattern: Permission denied\ntest_patch result: FAILED."
    ), said
    assert uid != 0
    assert "cat: /etc/shadow: No such file or directory" in said
    assert "cat: /task/task.toml: No such file or directory" in said
    assert "; sandbox: bwrap 0.11.0\n" in (results / "daemon.log").read_text(encoding="utf-8")
    assert _report(run) is not None and _report(run)["agent"]["exit_code"] == 0, said
    assert (_report(run)["mode"], _report(run)["status"], run.exit_code) == ("process", "checks_failed", 1)
    assert _report(run)["grading"]["checks"][0]["check"] == "build"
    # The user's results folder stays the user's: the container wrote a private copy.
    assert {p.stat().st_uid for p in results.iterdir()} == {os.getuid()}


# A fork bomb in the build; then a Makefile whose build passes and whose functional tests
# count the overlays mounted at /sse/tree. Prints the first call's last line (the log's
# end) and the second call's whole text.
BOMB_AGENT = """
import asyncio, os
from pathlib import Path
from fastmcp import Client
BOMB = "all:\\n\\tbash -c ':(){ :|:& };:; sleep 60'\\ntest:\\n\\ttrue\\n"
COUNT = "all:\\n\\ttrue\\ntest:\\n\\tgrep -c ' /sse/tree .* - overlay ' /proc/self/mountinfo; exit 1\\n"
async def main():
    async with Client(os.environ["SSE_MCP_URL"], timeout=600) as client:
        Path("Makefile").write_text(BOMB)
        said = (await client.call_tool("test_patch", {})).content[0].text.splitlines()
        # The limit's line ends the log; a bomb's log may be long (then the text ends with
        # the saved log's path instead), so print the line itself.
        notes = [line for line in said if line.startswith("[ssebench] ")]
        print(notes[-1] if notes else "\\n".join(said))
        Path("Makefile").write_text(COUNT)
        print((await client.call_tool("test_patch", {})).content[0].text)
asyncio.run(main())
"""


def test_sidecar_survives_a_fork_bomb_and_checks_run_on_overlays(base_image: str, tmp_path: Path) -> None:
    """Cgroups are read-only in a container, so the per-check process limit is the daemon's
    watchdog; the sidecar's own --pids-limit keeps a bomb from taking the host's pids
    meanwhile. The check fails with the limit's line and the daemon answers the next call,
    whose functional check runs on a copy-on-write overlay of the built tree (the
    workspace is on a volume, not on the container's overlayfs, so overlays work)."""
    from ssebench.container import docker
    from ssebench.daemon.limits import Limits, limit_note

    results = tmp_path / "results"
    run = docker.run_in_docker(
        task=TASK_DIR,
        agent=None,
        agent_command=["python3", "-c", BOMB_AGENT],
        results_dir=results,
        difficulty=2,
        env=_own_port(),
    )
    said = (results / "agent-stdout.log").read_text(encoding="utf-8")
    assert said.startswith(limit_note("pids", Limits()) + "test_patch result: FAILED."), said
    assert "\n\nChecks:\n- build: passed\n- functional tests: FAILED\n\n" in said, said
    assert said.endswith(
        "Full log (functional tests):\ngrep -c ' /sse/tree .* - overlay ' /proc/self/mountinfo; "
        "exit 1\n1\n\nmake: *** [Makefile:4: test] Error 1\n"
    ), said  # "1": one overlay
    assert _report(run) is not None and _report(run)["agent"]["exit_code"] == 0


def test_sidecar_without_the_sandbox_options_refuses_to_start(
    base_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Docker's defaults (no seccomp profile, masked /proc) do not let bwrap run: the daemon
    refuses to start with its one line, and the run stops with it before the agent starts."""
    from ssebench.container import docker, sidecar
    from ssebench.daemon.sandbox_setup import FIX_HINT

    monkeypatch.setattr(sidecar, "sandbox_options", lambda uid, gid: ["--user", f"{uid}:{gid}"])
    with pytest.raises(docker.DockerRunError) as error:
        docker.run_in_docker(
            task=TASK_DIR,
            agent=None,
            agent_command=["true"],
            results_dir=tmp_path / "results",
            difficulty=2,
            env=_own_port(),
        )
    headline, line = str(error.value).split("\n")  # the daemon's output is its one line
    assert headline == "the daemon's container exited with status 2:"
    # bwrap's own reason comes first; on this engine (Docker 20.10's default seccomp):
    # "No permissions to creating new namespace, likely because the kernel does not allow..."
    assert line.startswith("ssebench daemon: cannot sandbox checks (bwrap: No permissions to creating new namespace")
    assert line.endswith(f"): {FIX_HINT}")
    assert not (tmp_path / "results" / "results.json").exists()  # the agent's container never ran


def test_a_build_removes_only_the_older_tags_nobody_may_still_be_using(
    docker_host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new build of a repository leaves another tag built within the last hour (a second
    checkout or a plain install on the same engine may be about to run or build on it)
    and removes the ones built before that."""
    from ssebench.container import engine as engine_module

    engine = engine_module.DockerEngine.locate()
    repository = f"ssebench-removal-{os.getpid()}"

    def build(name: str) -> None:
        context = tmp_path / name
        context.mkdir()
        (context / "f").write_text(name)
        engine.build(f"{repository}:{name}", context, "FROM scratch\nCOPY f /f\n")

    def tags() -> list[str]:
        listed = engine.docker("image", "ls", repository, "--format", "{{.Tag}}").stdout.split()
        return sorted(listed)

    try:
        build("a")
        build("b")
        assert tags() == ["a", "b"]  # a was built seconds ago: it stays
        monkeypatch.setattr(engine_module, "KEEP_RECENT_SECONDS", 0)  # now a and b count as old
        build("c")
        assert tags() == ["c"]
    finally:
        names = [f"{repository}:{t}" for t in tags()]
        if names:
            engine.docker("image", "rm", *names)


def test_missing_base_image_is_named_before_anything_is_built(docker_host: str, tmp_path: Path) -> None:
    from ssebench.container.docker import DockerRunError, run_in_docker

    with pytest.raises(DockerRunError) as error:
        run_in_docker(
            task=TASK_DIR,
            agent="claude",
            agent_command=["claude"],
            results_dir=tmp_path / "r",
            difficulty=2,
            base_image="ssebench-base:no-such-key",
        )
    assert str(error.value) == (
        f"the base image ssebench-base:no-such-key is not in the Docker engine at {docker_host}; build it with "
        f"{BASE_IMAGE_SCRIPT} (offline, from Debian's packages) or set SSEBENCH_BASE_IMAGE"
    )
    assert not (tmp_path / "r").exists()


def test_engine_script_is_idempotent_and_leaves_nothing_behind(docker_host: str, tmp_path: Path) -> None:
    """A second private engine in its own folder: start twice, stop twice; then no process,
    no mount and no socket of it remain."""
    if os.geteuid() != 0:
        pytest.skip("a private engine needs root (this session uses an engine someone else runs)")
    state = Path(tempfile.mkdtemp(prefix="ssebench-engine-test-", dir="/var/tmp"))
    env = {"SSEBENCH_DOCKER_DIR": str(state / "engine")}
    try:
        first = _script(ENGINE_SCRIPT, "start", env=env, timeout=120)
        assert first.returncode == 0, first.stderr
        assert first.stdout == f"DOCKER_HOST=unix://{state}/engine/docker.sock\n"
        assert (state / "engine").stat().st_mode & 0o777 == 0o700
        pid = int((state / "engine" / "dockerd.pid").read_text())
        again = _script(ENGINE_SCRIPT, "start", env=env, timeout=60)
        assert (again.returncode, again.stdout) == (0, first.stdout)
        assert int((state / "engine" / "dockerd.pid").read_text()) == pid  # the same engine
        assert _script(ENGINE_SCRIPT, "stop", env=env, timeout=60).stdout == "docker-engine.sh: stopped\n"
        assert _script(ENGINE_SCRIPT, "stop", env=env, timeout=60).stdout == "docker-engine.sh: not running\n"
        assert not Path(f"/proc/{pid}").exists()
        assert str(state) not in Path("/proc/self/mounts").read_text()
        status = _script(ENGINE_SCRIPT, "status", env=env, timeout=30)
        assert status.returncode == 1
        assert status.stderr == f"docker-engine.sh: not running (no answer on {state}/engine/docker.sock)\n"
    finally:
        _script(ENGINE_SCRIPT, "stop", env=env, timeout=60)
        shutil.rmtree(state, ignore_errors=True)


# --- ssebench jobs --backend docker ------------------------------------------------------------


def test_jobs_docker_backend_runs_the_job_and_leaves_no_container(base_image: str, tmp_path: Path) -> None:
    """The 16-run job of tests/helpers/jobs.py (2 tasks × 2 custom agents × 2 levels × 2
    attempts), two at a time in task containers: every run folder and the report exact, and
    no container with the job's label left."""
    from ssebench.jobs.state import read
    from tests.helpers.jobs import assert_report, assert_run_folders, jobs, write_job

    job = write_job(tmp_path)
    began = time.monotonic()
    done = jobs("run", job, "--results", tmp_path / "out", "--backend", "docker", timeout=CONTAINER_TIMEOUT * 8)
    _timed("ssebench jobs run --backend docker (16 runs, 2 at a time)", began)
    assert done.returncode == 0, done.stderr
    assert_run_folders(tmp_path / "out", docker=True)
    assert_report(tmp_path / "out")
    job_id = read(tmp_path / "out")["job_id"]
    left = _script("docker", "ps", "--all", "--quiet", "--filter", f"label=ssebench.job={job_id}", timeout=30)
    assert (left.returncode, left.stdout) == (0, "")


def test_jobs_docker_ctrl_c_removes_the_runs_containers(base_image: str, tmp_path: Path) -> None:
    """SIGINT while a run's containers are up (they carry the job's label): exit 130 and
    neither a container nor a process of the job is left."""
    import signal

    from ssebench import runrecord, supervise
    from ssebench.jobs.state import read
    from tests.helpers.jobs import JOBS, jobs_env, toggle_task

    task = toggle_task(tmp_path / "toggle")
    job = tmp_path / "job.toml"
    job.write_text(
        f'tasks = ["{task.file}"]\n[[agents]]\nname = "sleeper"\ncommand = ["sleep", "600"]\n', encoding="utf-8"
    )
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*JOBS, "run", str(job), "--results", str(out), "--backend", "docker"],
        env=jobs_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline, labelled = time.monotonic() + CONTAINER_TIMEOUT, ""
        while not labelled and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(1)
            if (out / "job.json").exists():
                job_id = read(out)["job_id"]
                listed = _script("docker", "ps", "--quiet", "--filter", f"label=ssebench.job={job_id}", timeout=30)
                labelled = listed.stdout.strip()
        assert labelled, "no container with the job's label appeared"
        time.sleep(3)  # the agent's container is up beside the sidecar
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    left = _script("docker", "ps", "--all", "--quiet", "--filter", f"label=ssebench.job={job_id}", timeout=30)
    assert (left.returncode, left.stdout) == (0, "")
    assert supervise.marked("SSE_JOB_ID", job_id) == []
    row = read(out)["runs"][0]  # job.json: the schedule; how the run ended: its record
    assert (row["state"], runrecord.read(out / row["folder"]).status) == ("ended", "cancelled")


@pytest.mark.parametrize("presses", [1, 2])
def test_jobs_docker_ctrl_c_during_grading_leaves_nothing(base_image: str, tmp_path: Path, presses: int) -> None:
    """Ctrl-C (once, or twice: at once) while the sidecar grades a run in its PoC check: exit
    130, no container, no process, nothing in TMPDIR (the run's task copies, the job's scratch
    folder), the record ``cancelled``."""
    import shutil
    import signal

    from ssebench import runrecord
    from ssebench.jobs.state import read
    from tests.helpers.jobs import grading_job, nothing_left, start_until_grading

    job, env = grading_job(tmp_path)
    out = tmp_path / "out"
    try:
        proc = start_until_grading(job, out, env, "--backend", "docker")
        job_id = read(out)["job_id"]
        began = time.monotonic()
        proc.send_signal(signal.SIGINT)
        if presses == 2:
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
        took = time.monotonic() - began
        _timed(f"jobs --backend docker: Ctrl-C ×{presses} during grading to exit", began)
        assert proc.returncode == 130, stderr
        assert took < 20, took  # 15 s asked; docker rm on the shared engine may add a few
        nothing_left(job_id, Path(env["TMPDIR"]), within=5)
        left = _script("docker", "ps", "--all", "--quiet", "--filter", f"label=ssebench.job={job_id}", timeout=30)
        assert (left.returncode, left.stdout) == (0, "")
        record = runrecord.read(out / "runs" / "slow.idle.L0.a1")
        assert (record.outcome, record.status) == (runrecord.Outcome.CANCELLED, "cancelled")
    finally:
        shutil.rmtree(env["TMPDIR"], ignore_errors=True)


# --- the model gateway with the Docker backend -------------------------------------------------


def test_jobs_docker_backend_through_the_model_gateway(base_image: str, tmp_path: Path) -> None:
    """[gateway] with --backend docker: LiteLLM's proxy on the host's 127.0.0.1, each run's
    containers without a network, its model requests through its own socket: what each run
    used is in its record; eight requests at once against max_tokens 250 end as budget with
    the exact reason; no container, proxy or socket is left, no key in any file."""
    from ssebench.jobs.state import read
    from tests.e2e.conftest import install_gateway
    from tests.e2e.models import OpenAIChatModel
    from tests.helpers.jobs import jobs, toggle_task

    litellm = install_gateway()
    task = toggle_task(tmp_path / "toggle")
    argv = lambda n: json.dumps(["python3", "-c", GATEWAY_AGENT, str(n)])  # noqa: E731
    with OpenAIChatModel() as model:
        job = tmp_path / "job.toml"
        job.write_text(
            f'tasks = ["{task.file}"]\nbackend = "docker"\n'
            f'[gateway]\nurl = "{model.url}/v1"\nkey_env = "SSE_E2E_VENDOR_KEY"\n'
            'prices = { "scripted-model" = { input = 2.0, output = 8.0 } }\n'
            f'[[agents]]\nname = "ok"\ncommand = {argv(2)}\n'
            f'[[agents]]\nname = "parallel"\ncommand = {argv(8)}\nmax_tokens = 250\n',
            encoding="utf-8",
        )
        env = {"SSE_GATEWAY_LITELLM": str(litellm), "SSE_E2E_VENDOR_KEY": "sk-upstream-never-shown"}
        began = time.monotonic()
        done = jobs("run", job, "--results", tmp_path / "out", env=env, timeout=CONTAINER_TIMEOUT * 3)
        _timed("ssebench jobs run --backend docker through the gateway (2 runs)", began)
        answered = len([r for r in model.requests if r.path.endswith("/chat/completions")])
    assert done.returncode == 0, done.stderr
    runs = tmp_path / "out" / "runs"
    ok = json.loads((runs / "toggle.ok.L2.a1" / "results.json").read_text())
    parallel = json.loads((runs / "toggle.parallel.L2.a1" / "results.json").read_text())
    assert (ok["spec"]["backend"], ok["status"], ok["agent"]["exit_code"]) == ("docker", "checks_failed", 0)
    usage = {"input_tokens": 200, "output_tokens": 20, "cached_tokens": 0, "cost_usd": 0.00056, "source": "gateway"}
    assert ok["agent"]["usage"] == ok["gateway"]["usage"] == usage  # 2 × (100 in, 10 out) at $2 / $8 per million
    assert (parallel["status"], parallel["outcome"], parallel["passed"]) == ("budget", "budget", False)
    assert parallel["reason"] == (
        "the run's model budget ran out: 330 tokens used of max_tokens 250; 5 requests refused "
        "(counted at the model gateway)"
    )
    assert parallel["agent"]["error"] == (
        "the agent exited with status 1: ssebench gateway: this run's model budget is spent: 330 tokens used of "
        "max_tokens 250"
    )
    assert answered == ok["gateway"]["requests"] + parallel["gateway"]["requests"]
    job_id = read(tmp_path / "out")["job_id"]
    left = _script("docker", "ps", "--all", "--quiet", "--filter", f"label=ssebench.job={job_id}", timeout=30)
    assert (left.returncode, left.stdout) == (0, "")
    assert not list(Path("/tmp").glob("ssebench-gw-*"))  # the runs' sockets went with them
    for path in (tmp_path / "out").rglob("*"):
        assert not path.is_file() or b"sk-ssebench-" not in path.read_bytes(), path
