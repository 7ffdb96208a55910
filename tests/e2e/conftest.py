"""End-to-end fixtures: the real agent CLIs from npm, a private HOME, the real stack.

- ``agent_clis`` (session): ``npm install`` of configs/agent-clis/package.json + its lock (the one pin file,
  shipped in the wheel too: Docker layers, preflight and doctor read it) into a cache folder outside
  the repository (``$SSEBENCH_E2E_CACHE`` or ``~/.cache/ssebench/e2e-node``, one folder per
  hash of the lock file), done once and reused; returns the ``node_modules/.bin`` folder.
  Skipped, with the reason, only where npm is absent; a failing install fails the tests.
- ``agent_run``: one whole run of a CLI against ``ssebench serve`` + ``ssebench daemon`` on a
  task, the way ssebench runs agents: ``ssebench agents install CLI --url URL`` into a fresh
  HOME, then the CLI's run recipe (agents/*/recipe.py), headless, against a scripted model.

How many builds a run made is read from the server's log, as a user would see it: one
``test_patch call N (level L): ...`` line per call, listing the checks the agent was shown
(server/calllog.py). Decision: the count no longer comes from the task's build step
appending to a file outside the tree — the sandboxed checks cannot write there
(docs/security.md) — and a build that the agent was shown is the one that matters.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ssebench.agents.registry import agent, names
from tests.helpers.cligroup import CliTimedOut, run_group

E2E = Path(__file__).resolve().parent
REPO = E2E.parent.parent
PINS = REPO / "configs" / "agent-clis"  # ssebench.resources.cli_pins_dir() in a checkout
CLIENT_PINS = REPO / "configs" / "client-clis"  # the read-back-only clients (test_cli_client_readback)
CLIENT_BINS = ("copilot", "mcporter", "mcp-remote")
CONFORMANCE_PINS = REPO / "configs" / "conformance"  # the MCP conformance suite (test_conformance)
CONFORMANCE_BINS = ("conformance", "node")
#: FastMCP's client with its tasks extension (fastmcp-tasks), a venv of its own (test_mcp_clients)
TASKS_CLIENT_PINS = REPO / "configs" / "mcp-clients" / "fastmcp-tasks" / "pins.json"
SSEBENCH = str(Path(sys.executable).with_name("ssebench"))
CLIS = names()  # every bundled agent: each is installed from the pin file and driven for real
#: the npm pin folders of the agents that have their own (the Node 22 agents, with that Node) -> their programs
OWN_PINS: dict[Path, tuple[str, ...]] = {}
for _record in map(agent, CLIS):
    if _record.pins_file is not None and _record.registry == "npm":
        _bins = OWN_PINS.get(_record.pins_file.parent, ())
        OWN_PINS[_record.pins_file.parent] = tuple(
            dict.fromkeys((*_bins, _record.binary, *(["node"] if _record.node_runtime else [])))
        )
#: the PyPI agents: each one's pins.json (its lock beside it) -> its program (agents/pypi.py)
PYPI_PINS = {r.pins_file: r.binary for r in map(agent, CLIS) if r.registry == "pypi" and r.pins_file}
#: ... and the oldest Python each needs (agents/pypi.py's find_python looks for one)
PYPI_PYTHON = {r.pins_file: r.python_min for r in map(agent, CLIS) if r.registry == "pypi" and r.pins_file}
INSTALL_TIMEOUT = 900
PROMPT = "Check the patch in this tree with the test_patch tool, then report the result."

# The model variables the recipes read, per CLI, pointing at a scripted model at URL.
MODEL_ENV: dict[str, Callable[[str], dict[str, str]]] = {
    "claude": lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-e2e"},
    "opencode": lambda url: {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-e2e",
        "SSE_AGENT_MODEL": "anthropic/claude-sonnet-4-5",
    },
    # a model name Codex has no metadata for: Codex then offers MCP tools directly instead
    # of deferring them behind its tool_search tool (which a two-turn script cannot drive)
    "codex": lambda url: {
        "OPENAI_BASE_URL": url + "/v1",
        "OPENAI_API_KEY": "sk-e2e",
        "SSE_AGENT_MODEL": "scripted-model",
    },
    "gemini": lambda url: {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "e2e-key"},
    "continue": lambda url: {
        "OPENAI_BASE_URL": url + "/v1",
        "OPENAI_API_KEY": "sk-e2e",
        "SSE_AGENT_MODEL": "scripted-model",
    },
    "qwen": lambda url: {
        "OPENAI_BASE_URL": url + "/v1",
        "OPENAI_API_KEY": "sk-e2e",
        "SSE_AGENT_MODEL": "scripted-model",
    },
    "kilo": lambda url: {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-e2e",
        "SSE_AGENT_MODEL": "anthropic/claude-sonnet-4-5",
    },
    "copilot": lambda url: {
        "COPILOT_PROVIDER_BASE_URL": url,
        "COPILOT_PROVIDER_TYPE": "anthropic",
        "COPILOT_PROVIDER_API_KEY": "sk-ant-e2e",
        "SSE_AGENT_MODEL": "claude-sonnet-4-5",
    },
    "cline": lambda url: {
        "OPENAI_BASE_URL": url + "/v1",
        "OPENAI_API_KEY": "sk-e2e",
        "SSE_AGENT_MODEL": "scripted-model",
    },
    "nanocoder": lambda url: {
        "OPENAI_BASE_URL": url + "/v1",
        "OPENAI_API_KEY": "sk-e2e",
        "SSE_AGENT_MODEL": "scripted-model",
    },
    **{
        cli: lambda url: {
            "OPENAI_BASE_URL": url + "/v1",
            "OPENAI_API_KEY": "sk-e2e",
            "SSE_AGENT_MODEL": "scripted-model",
        }
        for cli in (
            "pi",
            "kimi-code",
            "gptme",
            "hermes",
            "droid",
            "mistral-vibe",
            "fast-agent",
            "code-puppy",
            "kimi-cli",
        )
    },
    # Mastra Code's default model (openai/gpt-5.5) through the OpenAI provider: the Responses API
    "mastracode": lambda url: {"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-e2e"},
}

# Variables of the machine that would point a CLI somewhere else than the test says.
_LEAKY = (
    "ANTHROPIC_",
    "OPENAI_",
    "GEMINI_",
    "GOOGLE_",
    "CODEX_",
    "CLAUDE_",
    "OPENCODE_",
    "QWEN_",
    "CONTINUE_",
    "KILO_",
    "CLINE_",
    "COPILOT_",
    "NANOCODER_",
    "PI_",
    "KIMI_",
    "GPTME_",
    "HERMES_",
    "MASTRA",
    "FACTORY_",
    "VIBE_",
    "FAST_AGENT",
    "GENERIC_",
    "CODE_PUPPY",
    "PUPPY_",
    "GH_",
    "GITHUB_",
    "SSE_",
    "MCP_",
    "XDG_",
    "NODE_OPTIONS",
    "npm_",
)


# -- the CLIs --------------------------------------------------------------------------------


def _cache_root() -> Path:
    configured = os.environ.get("SSEBENCH_E2E_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "ssebench" / "e2e-node"


def _install_dir(pins: Path) -> Path:
    """The cache folder of one pin file: one per hash of its package.json and lock."""
    lock_bytes = (pins / "package-lock.json").read_bytes()
    return _cache_root() / hashlib.sha256((pins / "package.json").read_bytes() + lock_bytes).hexdigest()[:16]


def own_bin_dirs() -> list[Path]:
    """The ``.bin`` folders of the agents with their own pin file (the Node 22 agents and that
    Node): on PATH after the machine's, so their ``node`` runs only them (agents/runtime.py);
    then each PyPI agent's ``bin`` (its command alone, linked into its venv: pypi_install.py)."""
    from tests.e2e.pypi_install import install_dir

    npm = [_install_dir(folder) / "node_modules" / ".bin" for folder in OWN_PINS]
    return npm + [install_dir(_cache_root(), pins) / "bin" for pins in PYPI_PINS]


GATEWAY_PINS = REPO / "configs" / "gateway" / "pins.json"


def install_gateway(report: Callable[[str], None] = print) -> Path:
    """The model gateway's ``litellm`` (LiteLLM's proxy in its locked venv): its path."""
    from tests.e2e.pypi_install import install_pypi

    return install_pypi(_cache_root(), GATEWAY_PINS, "litellm", report) / "litellm"


#: PyPI agents that could not be installed for want of their Python: binary -> why (their runs skip)
NO_PYTHON: dict[str, str] = {}


def install_pypi_clis(report: Callable[[str], None] = print) -> None:
    """Every PyPI agent in its locked venv (tests/e2e/pypi_install.py)."""
    from tests.e2e.pypi_install import NoPython, install_pypi

    for pins, binary in PYPI_PINS.items():
        try:
            install_pypi(_cache_root(), pins, binary, report, PYPI_PYTHON[pins])
        except NoPython as missing:
            NO_PYTHON[binary] = str(missing)
            report(f"e2e: {missing}; its tests skip")


def install_tasks_client(report: Callable[[str], None] = print) -> Path:
    """The Python of the fastmcp-tasks client's locked venv (tests/e2e/fastmcp_tasks_client.py)."""
    from tests.e2e.pypi_install import install_pypi

    return install_pypi(_cache_root(), TASKS_CLIENT_PINS, "fastmcp", report).parent / "venv" / "bin" / "python"


def install_clis(
    report: Callable[[str], None] = print, *, pins: Path = PINS, bins: tuple[str, ...] | None = None
) -> Path:
    """Install the pinned CLIs once per lock-file hash; returns ``node_modules/.bin``.
    ``pins``/``bins``: another pin file (configs/client-clis/, the read-back-only clients) and the
    programs it must provide; each pin file gets its own folder in the one cache."""
    from filelock import FileLock

    if bins is None:  # the agents' own programs (Continue installs `cn`, not `continue`)
        for folder, own_bins in OWN_PINS.items():  # an agent with its own pin file (its own Node)
            install_clis(report, pins=folder, bins=own_bins)
        bins = tuple(agent(c).binary for c in CLIS if agent(c).pins_file is None)
    target = _install_dir(pins)
    digest = target.name
    stamp = target / "installed.json"
    bin_dir = target / "node_modules" / ".bin"
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / f"{digest}.lock"), timeout=INSTALL_TIMEOUT + 60):
        if stamp.is_file() and all((bin_dir / b).exists() for b in bins):
            return bin_dir
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(mode=0o700, exist_ok=True)  # rmtree may leave the folder itself behind
        for name in ("package.json", "package-lock.json", ".npmrc"):  # .npmrc: Mastra Code's install flag
            if (pins / name).is_file():
                shutil.copyfile(pins / name, target / name)
        started = time.monotonic()
        # not `npm ci`: the lock names opencode's optional binaries for every platform, the
        # registry mirror here serves only this platform's, and `npm ci` refuses a lock with
        # a missing optional entry; `npm install --no-save` installs the locked versions
        proc = subprocess.run(
            ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=target,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"npm install in {target} failed (exit {proc.returncode}):\n"
                f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
            )
        seconds = time.monotonic() - started
        size = sum(
            {
                (s.st_dev, s.st_ino): s.st_size
                for s in (p.stat() for p in (target / "node_modules").rglob("*") if p.is_file() and not p.is_symlink())
            }.values()
        )
        stamp.write_text(json.dumps({"seconds": round(seconds, 1), "bytes": size}))
        report(f"e2e: installed the agent CLIs into {target} in {seconds:.0f} s ({size / 2**20:.0f} MiB)")
    return bin_dir


@pytest.fixture(scope="session")
def agent_clis() -> Path:
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip(
            "npm/node not found on PATH: the agent CLIs cannot be installed, so the "
            "end-to-end tests with real agent CLIs do not run here"
        )
    report = lambda line: print(line, file=sys.stderr)  # noqa: E731
    install_pypi_clis(report)
    return install_clis(report)


# -- one run ----------------------------------------------------------------------------------


def clean_env(home: Path, bin_dir: Path) -> dict[str, str]:
    """The machine's environment without anything that points a CLI elsewhere, HOME private."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LEAKY)}
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(bin_dir), env.get("PATH", ""), *map(str, own_bin_dirs())]),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        NO_COLOR="1",
        CI="true",
    )
    return env


def copy_task(task_file: Path, dest: Path, *, fix: Path | None = None) -> Path:
    """A copy of a task folder, optionally with a patch applied to its source tree.
    Returns the copy's task.toml."""
    import tomlkit

    shutil.copytree(task_file.parent, dest, symlinks=True)
    copy = dest / task_file.name
    if fix is not None:
        tree = dest / str(tomlkit.parse(copy.read_text())["source"])
        subprocess.run(["patch", "-p1", "--quiet", "-i", str(fix)], cwd=tree, check=True, stdin=subprocess.DEVNULL)
    return copy


# The server's line for one finished call (server/calllog.py), after logging's
# "asctime name levelname" prefix: "... test_patch call 1 (level 2): <verdict> [build: passed, ...] in 3.2 s".
_CALL_LINE = re.compile(r" ssebench\.server\.calls INFO test_patch call \d+ \(level \d\): (?P<summary>.*)$")
# The build ran when its state is shown (passed or FAILED); level 4 shows no checks at all.
_BUILD_RAN = re.compile(r"\[build: (passed|FAILED)[,\]]")
SERVER_LOG_MAX = 64 * 2**20  # a run's server output is a few kB; more means something ran wild
_TAIL_LINES = 40


@dataclass(frozen=True)
class ServerLog:
    """What a test reads from the server's output: its calls' lines and the output's tail."""

    calls: tuple[str, ...]  # the summary of each finished test_patch call, in order
    tail: str

    @property
    def builds(self) -> int:
        """How many calls showed the agent a build that ran."""
        return sum(1 for summary in self.calls if _BUILD_RAN.search(summary))


def read_server_log(path: Path) -> ServerLog:
    """Scan the whole server output at ``path`` line by line (never whole in memory),
    keeping the calls' summaries and the last lines. A missing file reads as empty; one
    larger than :data:`SERVER_LOG_MAX` fails the test, since its calls could not be trusted."""
    calls: list[str] = []
    tail: deque[str] = deque(maxlen=_TAIL_LINES)
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return ServerLog((), "")
    with f:
        size = os.fstat(f.fileno()).st_size
        assert size <= SERVER_LOG_MAX, f"{path} is {size} bytes (over {SERVER_LOG_MAX}): not a normal run"
        for raw in f:
            line = raw[:4096].decode("utf-8", "replace").rstrip("\n")
            tail.append(line)
            match = _CALL_LINE.search(line)
            if match:
                calls.append(match["summary"])
    return ServerLog(tuple(calls), "\n".join(tail)[-4000:])


@dataclass
class AgentRun:
    """What one run left behind."""

    cli: str
    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    model: object  # the scripted model (tests.e2e.models), stopped, with its record
    builds: int  # how many test_patch calls showed the agent a build that ran (server log)
    home: Path
    server_output: str
    config: dict[str, str] = field(default_factory=dict)  # the files agents install wrote

    def explain(self) -> str:
        return (
            f"{self.cli} exit {self.exit_code} after {self.seconds:.1f} s, builds={self.builds}\n"
            f"--- stdout (tail)\n{self.stdout[-3000:]}\n--- stderr (tail)\n{self.stderr[-3000:]}\n"
            f"--- model requests\n{self.model.describe()}\n"  # type: ignore[attr-defined]
            f"--- server output (tail)\n{self.server_output[-2000:]}"
        )


def run_recipe(
    cli: str,
    *,
    mcp_url: str,
    home: Path,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float,
    extra_env: Mapping[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], float, object]:
    """One headless run of ``cli`` by its run recipe (prepare, then launch) against a scripted
    model, in ``env`` with the model API and then ``extra_env`` added. Returns the finished
    process, its duration in seconds and the stopped model with its record."""
    from ssebench.agents import runtime
    from ssebench.agents.recipe import get_recipe
    from tests.e2e.models import for_cli

    recipe = get_recipe(cli)
    with for_cli(cli, final_text="I ran test_patch; see its result above.") as model:
        model_env = {**env, **MODEL_ENV[cli](model.url), **(extra_env or {})}
        recipe.prepare(home=home, env=model_env)
        launch = recipe.launch(prompt=PROMPT, mcp_url=mcp_url, home=home, env=model_env)
        path = runtime.launch_path(agent(cli), model_env)  # as `ssebench run` does: its own Node first
        started = time.monotonic()
        try:
            proc = run_group(list(launch.argv), env={**model_env, **path, **launch.env}, cwd=cwd, timeout=timeout)
        except CliTimedOut as timed_out:  # what its model was asked says where it stopped
            raise CliTimedOut(f"{timed_out}\n--- model requests\n{model.describe()}") from None
        seconds = time.monotonic() - started
    return proc, seconds, model


def run_agent(
    cli: str,
    bin_dir: Path,
    task_file: Path,
    *,
    difficulty: int,
    fix: Path | None = None,
    workdir: Path,
    cli_timeout: float = 240,
    extra_env: Mapping[str, str] | None = None,
    install_args: tuple[str, ...] = (),
    server_args: tuple[str, ...] = (),
    after_install: Callable[[Path], None] | None = None,
    mcp_url: Callable[[str], str] | None = None,
) -> AgentRun:
    """One run of ``cli`` on a copy of the task at ``difficulty``, the way ssebench runs it.

    ``extra_env`` goes to the daemon, the server and the CLI; ``after_install(home)`` may
    change what ``agents install`` wrote (to take one of its settings out of the picture);
    ``mcp_url(server_url)``, the URL the CLI is given instead (a proxy in front of the server)."""
    from ssebench.server.stack import running_stack

    if (binary := agent(cli).binary) in NO_PYTHON:
        pytest.skip(NO_PYTHON[binary])
    task = copy_task(task_file, workdir / "task", fix=fix)
    import tomlkit

    tree = task.parent / str(tomlkit.parse(task.read_text())["source"])
    home = workdir / "home"
    home.mkdir(mode=0o700)
    env = clean_env(home, bin_dir)
    stack_dir = Path(tempfile.mkdtemp(prefix="sse-e2e-", dir="/tmp"))  # short: Unix socket path
    try:
        with running_stack(
            task,
            stack_dir,
            tree=tree,
            difficulty=str(difficulty),
            env={**env, **(extra_env or {})},
            server_args=server_args,
        ) as stack:
            url = stack.url if mcp_url is None else mcp_url(stack.url)
            install = subprocess.run(
                [SSEBENCH, "agents", "install", cli, "--url", url, *install_args],
                env=env,
                cwd=home,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert install.returncode == 0, f"agents install {cli}: {install.stdout}\n{install.stderr}"
            if after_install is not None:
                after_install(home)
            proc, seconds, model = run_recipe(
                cli, mcp_url=url, home=home, env=env, cwd=tree, timeout=cli_timeout, extra_env=extra_env
            )
        # after the stack stopped (the server flushed and closed its output), before the
        # stack folder goes
        server = read_server_log(stack_dir / "server.out")
    finally:
        shutil.rmtree(stack_dir, ignore_errors=True)
    return AgentRun(cli, proc.returncode, proc.stdout, proc.stderr, seconds, model, server.builds, home, server.tail)


@pytest.fixture
def agent_run(agent_clis: Path, tmp_path: Path) -> Iterator[Callable[..., AgentRun]]:
    """``agent_run(cli, task_file, difficulty=N, fix=PATCH)`` -> :class:`AgentRun`."""
    count = iter(range(1, 100))

    def run(cli: str, task_file: Path, **kw: object) -> AgentRun:
        workdir = tmp_path / f"run-{next(count)}"
        workdir.mkdir()
        return run_agent(cli, agent_clis, task_file, workdir=workdir, **kw)  # type: ignore[arg-type]

    yield run
