"""Synthetic run folders in the real formats, for the view's tests, benchmark and screenshots.

Each run is what ``ssebench run`` leaves (its record results.json, written through
ssebench/runrecord.py; dialog.jsonl, server.log, the agent's ``tree/``) for a small task
written beside them, so the view reads them the way it reads real runs, diff included.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ssebench import runrecord
from ssebench.runrecord import (
    AgentFacts,
    CallOutcome,
    CallRecord,
    CheckGrade,
    DifficultyRef,
    Grading,
    Outcome,
    RunResult,
    RunSpec,
    Stage,
)

SOURCE = {"greet.c": "#include <string.h>\nvoid parse(const char *s) {\n  char name[16];\n  strcpy(name, s);\n}\n"}
FIXED = {
    "greet.c": "#include <string.h>\nvoid parse(const char *s) {\n  char name[16];\n"
    "  strncpy(name, s, sizeof name - 1);\n  name[15] = 0;\n}\n"
}
PASSED_TEXT = (
    "test_patch result: every check that ran passed.\n"
    "\n"
    "Checks:\n"
    "- build: passed\n"
    "- PoCs: passed (2 of 2)\n"
    "- functional tests: passed\n"
)
FAILED_TEXT = (
    "test_patch result: FAILED. A PoC still crashes the program.\n"
    "\n"
    "Checks:\n"
    "- build: passed\n"
    "- PoCs: FAILED (0 of 2 passed)\n"
    "- functional tests: not run\n"
)


def write_task(folder: Path, task_id: str = "toy-overflow") -> Path:
    """A task folder (task.toml and its source) at FOLDER; returns the task file."""
    (folder / "src").mkdir(parents=True, exist_ok=True)
    for name, text in SOURCE.items():
        (folder / "src" / name).write_text(text)
    toml = f'id = "{task_id}"\nsource = "src"\n\n[build]\nrun = "true"\n\n[functional]\nrun = "true"\n'
    (folder / "task.toml").write_text(toml)
    return folder / "task.toml"


def dialog_lines(agent: str, model: str | None, passed: bool, calls: int = 2) -> list[dict[str, Any]]:
    """A session with every event kind: init, prompt, thinking, message, tools, complete."""
    tool = {"claude": "mcp__ssebench__test_patch", "codex": "ssebench.test_patch"}.get(agent, "ssebench_test_patch")
    events: list[dict[str, Any]] = [
        {"type": "init", "agent": agent, "session": "s-1", **({"model": model} if model else {}), "tools": [tool]},
        {"type": "prompt", "text": "Fix the stack overflow in greet.c without breaking its tests."},
        {"type": "thinking", "text": "strcpy into a 16-byte buffer: bound the copy."},
        {"type": "tool", "id": "t0", "name": "Edit", "status": "running", "input": {"file": "greet.c"}},
        {"type": "tool", "id": "t0", "name": "Edit", "status": "success", "output": "edited greet.c"},
    ]
    for n in range(1, calls + 1):
        text = PASSED_TEXT if passed and n == calls else FAILED_TEXT
        events.append({"type": "tool", "id": f"c{n}", "name": tool, "status": "running", "input": {}})
        events.append({"type": "tool", "id": f"c{n}", "name": tool, "status": "success", "output": text})
    events.append({"type": "tool", "id": "e1", "name": "Bash", "status": "running", "input": {"command": "make"}})
    events.append({"type": "tool", "id": "e1", "name": "Bash", "status": "error", "output": "make: *** Error 2"})
    events.append({"type": "message", "role": "assistant", "text": "The copy is bounded; test_patch passes."})
    tokens = {"input": 5120, "output": 210, "cached": 0}
    events.append(
        {"type": "complete", "status": "success", "turns": 4, "duration": 8.3, "tokens": tokens, "exit_code": 0}
    )
    return [{"seq": i, "ts": f"2026-11-30T03:45:{i:02d}.000Z", **e} for i, e in enumerate(events, 1)]


def write_dialog(path: Path, events: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as stream:
        for event in events:
            stream.write(json.dumps(event) + "\n")


def write_run(
    folder: Path,
    task_file: Path,
    *,
    agent: str = "claude",
    model: str | None = "claude-sonnet-4-5",
    level: int = 2,
    passed: bool = True,
    calls: int = 2,
    duration: float = 52.7,
    started: str = "2026-11-30T03:45:10.120Z",
    tree: bool = True,
) -> Path:
    """One finished run in FOLDER of the task TASK_FILE."""
    folder.mkdir(parents=True)
    if tree:
        shutil.copytree(task_file.parent / "src", folder / "tree")
    if passed and tree:
        for name, text in FIXED.items():
            (folder / "tree" / name).write_text(text)
    write_dialog(folder / "dialog.jsonl", dialog_lines(agent, model, passed, calls))
    _write_server_log(folder, level, passed, calls)
    _write_call_texts(folder, passed, calls)
    (folder / "agent-stdout.log").write_text(f"{agent}: session s-1\n{agent}: The copy is bounded.\n")
    (folder / "agent-stderr.log").write_text("")
    runrecord.write(folder, record(folder, task_file, agent, level, passed, duration, started, calls))
    return folder


def _write_call_texts(folder: Path, passed: bool, calls: int) -> None:
    """calls/<n>.txt: the text each test_patch call returned, as the server keeps it."""
    if calls:
        (folder / "calls").mkdir()
    for n in range(1, calls + 1):
        (folder / "calls" / f"{n}.txt").write_text(PASSED_TEXT if passed and n == calls else FAILED_TEXT)


def _ended(calls: int, passed: bool) -> list[str]:
    """The call log's summary of each call: the last passes when the run passed."""
    return [
        "every check that ran passed [build: passed]" if passed and n == calls else "FAILED [build: passed]"
        for n in range(1, calls + 1)
    ]


def _call(number: int, level: int, ended: str) -> CallRecord:
    how: CallOutcome = "failed" if ended.startswith("FAILED") else "passed"
    text = f"calls/{number}.txt"
    return CallRecord(number=number, level=level, ended=ended, outcome=how, seconds=1 + number / 10, text=text)


def _write_server_log(folder: Path, level: int, passed: bool, calls: int) -> None:
    """server.log with the call log's one line per test_patch call (shown as a file)."""
    log = "".join(
        f"2026-11-30 03:45:2{n} ssebench.server.calls INFO test_patch call {n} (level {level}): {e} in 1.{n} s\n"
        for n, e in enumerate(_ended(calls, passed), 1)
    )
    (folder / "server.log").write_text("ssebench serve: test_patch at http://localhost:3000/mcp\n" + log)


def record(
    folder: Path,
    task_file: Path,
    agent: str,
    level: int,
    passed: bool,
    duration: float,
    started: str,
    calls: int = 2,
) -> RunResult:
    """The record of a finished run whose agent exited 0 (the fields ``ssebench run`` fills)."""
    pocs, functional = ("passed", "passed") if passed else ("failed", "not_run")
    states = {"build": "passed", "pocs": pocs, "functional": functional}
    checks = [CheckGrade.model_validate({"check": c, "state": s, "elapsed": 0.3}) for c, s in states.items()]
    if not passed:
        tail = "==3==ERROR: AddressSanitizer: stack-buffer-overflow"
        checks[1] = checks[1].model_copy(update={"pocs_passed": 0, "pocs_total": 2, "log_tail": tail})
    task_id, tree = task_file.parent.name, str(folder / "tree")
    spec = RunSpec(task_file=str(task_file), task_id=task_id, agent=agent, level=level, agent_timeout=3600)
    call_records = tuple(_call(n, level, e) for n, e in enumerate(_ended(calls, passed), 1))
    return RunResult(
        spec=spec,
        outcome=Outcome.PASSED if passed else Outcome.FAILED,
        reason=None if passed else "failed: PoCs",
        status="passed" if passed else "checks_failed",
        exit_code=0 if passed else 1,
        passed=passed,
        task=runrecord.TaskRef(id=task_id, file=str(task_file), tree=tree),
        difficulty=DifficultyRef(level=level, name="NO_FUTURE_TEST"),
        mode="process",
        started_at=started,
        finished_at=started,
        duration=duration,
        stages=_stages(duration, passed),
        agent=AgentFacts(command=(agent, "-p"), exit_code=0, duration=duration, timeout=3600, calls=calls),
        grading=Grading(task=task_id, tree=tree, passed=passed, checks=tuple(checks)),
        calls=call_records,
        dialog="dialog.jsonl",
    )


def _stages(duration: float, passed: bool) -> dict[str, Stage]:
    """The stages as ``ssebench run`` records them (the agent takes most of the run)."""
    agent = round(duration - 4.5, 1)
    return {
        "daemon": Stage(state="done", detail="ready in 0.4 s", seconds=0.4),
        "server": Stage(state="done", detail="answered initialize in 1.1 s", seconds=1.1),
        "agent": Stage(state="done", detail=f"exited 0 after {agent} s", seconds=agent),
        "grading": Stage(state="done", detail="every check passed" if passed else "a check failed", passed=passed),
    }


def write_runs(root: Path, count: int, tree: bool = True) -> list[Path]:
    """COUNT runs below ROOT/runs of two tasks, four agents and levels 0–4 (a fixed pattern)."""
    tasks = [write_task(root / "tasks" / name, name) for name in ("toy-overflow", "toy-leak")]
    agents = [("claude", "claude-sonnet-4-5"), ("codex", None), ("gemini", "gemini-2.5-pro"), ("opencode", None)]
    made = []
    for n in range(count):
        agent, model = agents[n % 4]
        made.append(
            write_run(
                root / "runs" / f"run-{n:04d}",
                tasks[n % 2],
                agent=agent,
                model=model,
                level=n % 5,
                passed=n % 3 != 0,
                calls=1 + n % 4,
                duration=10.0 + n % 50,
                started=f"2026-11-30T{n // 60 % 24:02d}:{n % 60:02d}:00.000Z",
                tree=tree,
            )
        )
    return made
