"""A build that runs 90 s without a word: every CLI still gets the result.

What carries each CLI through the silence (measured; see each agent module, agents/<agent>.py):
- Claude Code aborts a call that has been silent for ``CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT``
  (lowered here to its 30 s minimum), unless the entry has a per-server ``timeout``. So
  besides the product setup, one run takes the ``timeout`` out of the entry: only the
  server's heartbeats (every 15 s) keep that one alive, and a control run with heartbeats
  every 600 s shows the abort the heartbeats prevent.
- opencode: its 60 s default is reset by progress; one run has no ``timeout`` in its entry.
- Codex (60 s default) and Gemini CLI: progress does not extend their limits, so the
  timeouts ``agents install`` writes must carry them.
- Qwen Code aborts a call silent for ``QWEN_CODE_MCP_TOOL_IDLE_TIMEOUT_MS`` (lowered here
  to 30 s; default 5 minutes); the server's heartbeats reset it, and the entry's
  ``timeout`` (from agents install) covers the whole call, which progress does not extend.
  The control run (heartbeats every 600 s) shows the idle abort the heartbeats prevent.
- Continue CLI cannot wait: it calls tools with the MCP SDK's fixed 60 s limit, which no
  setting raises and progress does not reset; its run shows the error it hands the model.

- Kilo Code CLI (an opencode fork): its 60 s default is reset by progress; one run has no
  ``timeout`` in its entry.
- Cline CLI sends no progress token: only the written ``timeout`` (seconds, at most 3600)
  carries it; a control run without it shows Cline's 60 s default cutting the call.
- Copilot CLI: one run with the written ``timeout``, one without it (heartbeats only), and one
  without either: all three get the text, so Copilot's own default outlasts a 90 s call
  (measured with 1.0.102; how long it is was not measured).
- Nanocoder cannot wait, like Continue CLI: its ``callTool`` passes no options, so the MCP
  SDK's fixed 60 s limit ends the call whatever the heartbeats (the entry's ``timeout`` is
  not used); its run shows the error it hands the model.

The runs the selected tests need (own daemon, server and model each) start one every
START_EVERY seconds, at most AT_ONCE under way: each mostly waits out the silent build, but
CLIs started together on two cores time out on their own start-up (six at once made Qwen
Code miss its MCP start), so only their waits overlap; ``-k qwen`` runs only Qwen Code's.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ssebench.agents import files, formats
from tests.e2e.conftest import AgentRun, run_agent
from tests.e2e.expected import LEVEL3_BUILD_PASSED, assert_model_received, assert_one_call
from tests.helpers.tasks import make_task

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SILENT_BUILD_SECONDS = 90
AT_ONCE = 10  # runs under way together (each mostly waits out the silent build)
START_EVERY = 8.0  # seconds from one run's start to the next: one CLI's start-up at a time
CLAUDE_IDLE = {"CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT": "30000"}  # ms; Claude Code's floor is 30 s
QWEN_IDLE = {"QWEN_CODE_MCP_TOOL_IDLE_TIMEOUT_MS": "30000"}  # ms; Qwen Code's default is 300000
CLINE_SETTINGS = ".cline/data/settings/cline_mcp_settings.json"
CLINE_TIMEOUT = ("mcpServers", "ssebench", "timeout")
COPILOT_CONFIG = ".copilot/mcp-config.json"
COPILOT_TIMEOUT = ("mcpServers", "ssebench", "timeout")


def drop_timeout(config: str, key_path: tuple[str, ...]) -> Callable[[Path], None]:
    """An after-install step taking the tool timeout out of the entry agents install wrote."""

    def drop(home: Path) -> None:
        editor = formats.EDITORS["json"]
        change = files.edit(home / config, lambda text: editor.remove(text or "", key_path))
        assert change.changed, f"no {'.'.join(key_path)} in {config}"

    return drop


@dataclass(frozen=True)
class Variant:
    cli: str
    env: dict[str, str] = field(default_factory=dict)
    after_install: Callable[[Path], None] | None = None
    server_args: tuple[str, ...] = ()


VARIANTS = {
    "claude": Variant("claude", CLAUDE_IDLE),
    "claude-heartbeats-only": Variant(
        "claude", CLAUDE_IDLE, drop_timeout(".claude.json", ("mcpServers", "ssebench", "timeout"))
    ),
    "claude-no-heartbeats-control": Variant(
        "claude",
        CLAUDE_IDLE,
        drop_timeout(".claude.json", ("mcpServers", "ssebench", "timeout")),
        ("--heartbeat", "600"),
    ),
    "codex": Variant("codex"),
    "gemini": Variant("gemini"),
    "opencode": Variant("opencode"),
    "opencode-progress-only": Variant(
        "opencode", after_install=drop_timeout(".config/opencode/opencode.json", ("mcp", "ssebench", "timeout"))
    ),
    "qwen": Variant("qwen", QWEN_IDLE),
    "qwen-no-heartbeats-control": Variant("qwen", QWEN_IDLE, server_args=("--heartbeat", "600")),
    "continue-60s-limit-control": Variant("continue"),
    "kilo": Variant("kilo"),
    "kilo-progress-only": Variant(
        "kilo", after_install=drop_timeout(".config/kilo/kilo.jsonc", ("mcp", "ssebench", "timeout"))
    ),
    "cline": Variant("cline"),
    "cline-default-timeout-control": Variant("cline", after_install=drop_timeout(CLINE_SETTINGS, CLINE_TIMEOUT)),
    "copilot": Variant("copilot"),
    "copilot-progress-only": Variant("copilot", after_install=drop_timeout(COPILOT_CONFIG, COPILOT_TIMEOUT)),
    "copilot-no-timeout-no-heartbeats": Variant(
        "copilot", after_install=drop_timeout(COPILOT_CONFIG, COPILOT_TIMEOUT), server_args=("--heartbeat", "600")
    ),
    "nanocoder-60s-limit-control": Variant("nanocoder"),
}
#: the control runs each control test reads
CONTROLS = {
    "test_without_heartbeats_claude_code_gives_up_after_30s": "claude-no-heartbeats-control",
    "test_without_heartbeats_qwen_code_gives_up_after_30s": "qwen-no-heartbeats-control",
    "test_continue_cli_gives_up_after_60s_whatever_the_heartbeats": "continue-60s-limit-control",
    "test_without_its_timeout_cline_gives_up_after_60s": "cline-default-timeout-control",
    "test_nanocoder_gives_up_after_60s_whatever_the_heartbeats": "nanocoder-60s-limit-control",
}


def selected_variants(session: pytest.Session) -> list[str]:
    """The variants the selected tests of this module read, so ``-k`` runs only those."""
    wanted = set()
    for item in session.items:
        if item.module is None or item.module.__name__ != __name__:
            continue
        callspec = getattr(item, "callspec", None)
        name = callspec.params.get("name") if callspec else CONTROLS.get(item.originalname)  # type: ignore[attr-defined]
        if name:
            wanted.add(name)
    return [name for name in VARIANTS if name in wanted]


@pytest.fixture(scope="module")
def slow_runs(
    agent_clis: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("slow")
    task = make_task(root / "task", task_id="silent-build", build=f"sleep {SILENT_BUILD_SECONDS}", functional=None)

    gate, last_start = threading.Lock(), [-START_EVERY]

    def one(name: str) -> AgentRun | BaseException:
        with gate:  # the starts go one by one, START_EVERY apart
            time.sleep(max(0.0, last_start[0] + START_EVERY - time.monotonic()))
            last_start[0] = time.monotonic()
        variant = VARIANTS[name]
        workdir = root / name
        workdir.mkdir()
        try:
            return run_agent(
                variant.cli,
                agent_clis,
                task.file,
                difficulty=3,
                workdir=workdir,
                cli_timeout=SILENT_BUILD_SECONDS + 150,
                extra_env=variant.env,
                after_install=variant.after_install,
                server_args=variant.server_args,
            )
        except BaseException as exc:  # reported by the test of this variant
            return exc

    chosen = selected_variants(request.session)
    with ThreadPoolExecutor(max_workers=max(min(len(chosen), AT_ONCE), 1)) as pool:
        return dict(zip(chosen, pool.map(one, chosen), strict=True))


def _run(slow_runs: dict[str, Any], name: str) -> AgentRun:
    run = slow_runs[name]
    if isinstance(run, BaseException):
        raise run
    return run


@pytest.mark.parametrize("name", [n for n in VARIANTS if not n.endswith("-control")])
def test_silent_90s_build_every_cli_gets_the_result(slow_runs: dict[str, Any], name: str) -> None:
    run = _run(slow_runs, name)
    assert run.seconds >= SILENT_BUILD_SECONDS, run.explain()
    assert_one_call(run)
    assert_model_received(run.cli, run, LEVEL3_BUILD_PASSED)


def test_without_heartbeats_claude_code_gives_up_after_30s(slow_runs: dict[str, Any]) -> None:
    """The control: the same Claude run, heartbeats every 600 s, is aborted by Claude Code."""
    run = _run(slow_runs, "claude-no-heartbeats-control")
    results = run.model.tool_results()
    assert len(results) == 1, run.explain()
    assert re.search(r"sent no response or progress for \d+s; aborting", results[0].text), run.explain()
    assert run.seconds < SILENT_BUILD_SECONDS, run.explain()


def test_without_heartbeats_qwen_code_gives_up_after_30s(slow_runs: dict[str, Any]) -> None:
    """The control: the same Qwen Code run, heartbeats every 600 s, is aborted at its idle limit."""
    run = _run(slow_runs, "qwen-no-heartbeats-control")
    results = run.model.tool_results()
    assert len(results) == 1, run.explain()
    assert "did not respond within 30000ms idle timeout" in results[0].text, run.explain()
    assert run.seconds < SILENT_BUILD_SECONDS, run.explain()


def test_continue_cli_gives_up_after_60s_whatever_the_heartbeats(slow_runs: dict[str, Any]) -> None:
    """Continue CLI, heartbeats every 15 s as usual: the MCP SDK's 60 s request limit still ends the call."""
    run = _run(slow_runs, "continue-60s-limit-control")
    results = run.model.tool_results()
    assert len(results) == 1, run.explain()
    assert "Request timed out" in results[0].text, run.explain()
    assert 60 <= run.seconds < SILENT_BUILD_SECONDS, run.explain()


def test_without_its_timeout_cline_gives_up_after_60s(slow_runs: dict[str, Any]) -> None:
    """The control: Cline's default limit (60 s) cuts the 90 s call; heartbeats do not help."""
    run = _run(slow_runs, "cline-default-timeout-control")
    (result,) = run.model.tool_results()
    assert json.loads(result.content) == {
        "error": 'MCP error -32001: MCP request to "ssebench" timed out after 60s. Increase the "timeout" '
        "field (in seconds) for this server in cline_mcp_settings.json."
    }, run.explain()


def test_nanocoder_gives_up_after_60s_whatever_the_heartbeats(slow_runs: dict[str, Any]) -> None:
    """Nanocoder, heartbeats every 15 s as usual: the MCP SDK's 60 s request limit still ends the call."""
    run = _run(slow_runs, "nanocoder-60s-limit-control")
    (result,) = run.model.tool_results()
    assert result.text == "Error: MCP tool execution failed: MCP error -32001: Request timed out", run.explain()
    assert 60 <= run.seconds < SILENT_BUILD_SECONDS, run.explain()
