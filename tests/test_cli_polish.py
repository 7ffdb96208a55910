"""CLI polish through real processes: closed pipes, NO_COLOR on a terminal, completion, no -0.0 s."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import DEMO_TASK
from tests.helpers.daemon import SSEBENCH, run_ssebench
from tests.helpers.tasks import make_task

pytestmark = pytest.mark.timeout(180)

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize(
    "args",
    [
        ["completion", "bash"],
        ["task", "check", str(DEMO_TASK)],
        ["agents", "list"],
        ["agents", "show", "claude"],
        ["grade", "--task", str(DEMO_TASK), "--json"],
    ],
)
def test_a_closed_pipe_is_not_a_traceback(args: list[str], tmp_path: Path) -> None:
    """``ssebench ... | head -1``: the reader is gone before we write; no traceback, status 141."""
    proc = subprocess.Popen(
        [SSEBENCH, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(120) == 141
    assert err == ""


def test_head_in_a_shell_pipeline(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{SSEBENCH} completion bash | head -1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        done.stdout
        == "# ssebench completion for bash (and zsh through bashcompinit); made by `ssebench completion bash`\n"
    )
    assert done.stderr == ""


def _run_on_a_tty(args: list[str], env: dict[str, str], timeout: float = 60) -> tuple[int, str]:
    """Run ssebench with stdout and stderr on a pseudo-terminal; return (status, output)."""
    main, sub = pty.openpty()
    proc = subprocess.Popen(
        [SSEBENCH, *args], stdin=subprocess.DEVNULL, stdout=sub, stderr=sub, env=env, start_new_session=True
    )
    os.close(sub)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.5)
            if ready:
                try:
                    data = os.read(main, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        return proc.wait(30), b"".join(chunks).decode("utf-8", "replace")
    finally:
        os.close(main)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "SSE_DIFFICULTY")}
    env.update(TERM="xterm-256color", COLUMNS="200", **extra)
    return env


def test_styles_on_a_terminal_and_none_with_no_color() -> None:
    status, coloured = _run_on_a_tty(["task", "check", str(DEMO_TASK)], _env())
    assert status == 0
    assert ANSI.search(coloured), coloured
    status, plain = _run_on_a_tty(["task", "check", str(DEMO_TASK)], _env(NO_COLOR="1"))
    assert status == 0
    assert not ANSI.search(plain), plain
    # Same words either way, and the same as through a pipe.
    piped = run_ssebench("task", "check", str(DEMO_TASK)).stdout
    assert ANSI.sub("", coloured).replace("\r\n", "\n") == piped
    assert plain.replace("\r\n", "\n") == piped


def test_grade_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", build="sleep 0.5", functional="true")
    status, shown = _run_on_a_tty(["grade", "--task", str(task.file)], _env(NO_COLOR="1"))
    assert status == 0
    assert "grading: build" in shown  # the live line (transient: erased when done)
    piped = run_ssebench("grade", "--task", str(task.file))
    assert piped.returncode == 0
    assert piped.stderr == ""
    assert "grading:" not in piped.stdout


def _complete(script: Path, *words: str) -> list[str]:
    """What bash's completion offers after ``words`` (the last one is being typed)."""
    quoted = " ".join(f"'{w}'" for w in words)
    done = subprocess.run(
        [
            "bash",
            "--norc",
            "-c",
            f'source "{script}"; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _ssebench; '
            'printf "%s\\n" "${COMPREPLY[@]}"',
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completion_completes_commands_agents_and_choices(tmp_path: Path) -> None:
    script = tmp_path / "ssebench.bash"
    done = run_ssebench("completion", "bash")
    assert done.returncode == 0
    script.write_text(done.stdout)
    assert _complete(script, "ssebench", "ag") == ["agents"]
    assert _complete(script, "ssebench", "task", "") == ["check", "new", "verify", "-h", "--help"]
    assert _complete(script, "ssebench", "dataset", "") == ["lock", "verify", "import", "-h", "--help"]
    assert _complete(script, "ssebench", "dataset", "import", "") == ["arvo", "-h", "--help", "--id"]
    assert _complete(script, "ssebench", "agents", "install", "co") == ["codex", "continue", "copilot", "code-puppy"]
    assert _complete(script, "ssebench", "agents", "install", "claude", "--scope", "") == ["user", "project"]
    assert _complete(script, "ssebench", "completion", "") == ["bash", "zsh", "fish", "-h", "--help"]
    (tmp_path / "task.toml").write_text("")
    assert _complete(script, "ssebench", "grade", "--task", f"{tmp_path}/ta") == [f"{tmp_path}/task.toml"]


def test_zsh_and_fish_scripts() -> None:
    zsh = run_ssebench("completion", "zsh").stdout
    assert zsh.startswith(
        "# ssebench completion for zsh: the bash script through zsh's bashcompinit\n"
        "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit }\n"
        "autoload -U +X bashcompinit && bashcompinit\n"
    )
    assert zsh.endswith(run_ssebench("completion", "bash").stdout)
    fish = run_ssebench("completion", "fish").stdout.splitlines()
    assert fish[1] == "complete -c ssebench -f"
    assert (
        "complete -c ssebench -n '__fish_seen_subcommand_from task; and not __fish_seen_subcommand_from "
        "check new verify' -a check -d 'validate a task file and show what each difficulty level shows'"
    ) in fish
    done = run_ssebench("completion", "tcsh")
    assert done.returncode == 2
    assert "invalid choice: 'tcsh'" in done.stderr


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_registers_the_completion(tmp_path: Path) -> None:
    script = tmp_path / "ssebench.zsh"
    script.write_text(run_ssebench("completion", "zsh").stdout)
    done = subprocess.run(
        ["zsh", "-f", "-c", f'source "{script}"; print -r -- "$_comps[ssebench]"'],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert (done.returncode, done.stdout) == (0, "_bash_complete -o filenames -F _ssebench\n"), done.stderr


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes(tmp_path: Path) -> None:
    script = tmp_path / "ssebench.fish"
    script.write_text(run_ssebench("completion", "fish").stdout)
    done = subprocess.run(
        ["fish", "--no-config", "-c", f"source {script}; complete -C 'ssebench agents install co'"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert (done.returncode, done.stdout) == (0, "codex\n"), done.stderr


@pytest.mark.slow
def test_a_skipped_stage_shows_no_negative_time(tmp_path: Path) -> None:
    """``ssebench run`` interrupted during the agent: grading is skipped without ever
    starting, and its time read "-0.0 s" (the clock was read twice, the later one first)."""
    task = make_task(tmp_path / "t", functional="true")
    ready = tmp_path / "agent-started"
    proc = subprocess.Popen(
        [
            SSEBENCH,
            "run",
            "--task",
            str(task.file),
            "--results",
            str(tmp_path / "results"),
            "--",
            "sh",
            "-c",
            f'touch "{ready}"; sleep 60',
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        env=_env(),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready.exists(), proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130
    shown = out + err
    assert "interrupted by SIGINT" in shown
    grading = next(line for line in shown.splitlines() if "grading" in line and "skipped" in line)
    assert "0.0 s" in grading
    assert "-0.0" not in shown


# -- issue 31: "maybe you meant", one word for sub-commands, a description on every one ----------


def _choices(*path: str) -> str:
    """argparse's list of the sub-commands under *path*, as the error shows it."""
    import argparse

    from ssebench.cli import build_parser

    parser = build_parser()
    for name in path:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = sub.choices[name]
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return ", ".join(map(repr, sub.choices))


def _names(which: str) -> str:
    from ssebench.agents.registry import AGENTS, CLIENTS

    return ", ".join(map(repr, AGENTS if which == "agents" else CLIENTS))


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["agnets"], "ssebench: error: argument COMMAND: invalid choice: 'agnets', maybe you meant 'agents'? ({top})"),
        (
            ["task", "chek"],
            "ssebench task: error: argument COMMAND: invalid choice: 'chek', maybe you meant 'check'? ({task})",
        ),
        (
            ["agents", "install", "cluade"],
            "ssebench agents install: error: argument AGENT: invalid choice: 'cluade', maybe you meant 'claude'? ({clients})",
        ),
        (
            ["agents", "show", "Codex"],
            "ssebench agents show: error: argument AGENT: invalid choice: 'Codex', maybe you meant 'codex'? ({clients})",
        ),
        (
            ["run", "--task", "t.toml", "--agent", "gemni"],
            "ssebench run: error: argument --agent: invalid choice: 'gemni', maybe you meant 'gemini'? ({agents})",
        ),
        (
            ["jobs", "run", "--backend", "dokcer"],
            "ssebench jobs run: error: argument --backend: invalid choice: 'dokcer', maybe you meant 'docker'? "
            "(choose from 'local', 'docker', 'kubernetes')",
        ),
        # nothing close: no guess
        (
            ["agents", "install", "zzz"],
            "ssebench agents install: error: argument AGENT: invalid choice: 'zzz' ({clients})",
        ),
    ],
)
def test_a_mistyped_name_gets_the_closest_one(args: list[str], line: str) -> None:
    done = run_ssebench(*args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == line.format(
        top=f"choose from {_choices()}",
        task=f"choose from {_choices('task')}",
        clients=f"choose from {_names('clients')}",
        agents=f"choose from {_names('agents')}",
    )


def test_a_mistyped_agent_without_argparse_gets_the_same_words(tmp_path: Path) -> None:
    from ssebench.agents.actions import EntryError, install_entry

    with pytest.raises(EntryError) as caught:
        install_entry("cluade", "http://127.0.0.1:3000/mcp", {"HOME": str(tmp_path)})
    assert str(caught.value) == (
        f"argument AGENT: invalid choice: 'cluade', maybe you meant 'claude'? (choose from {_names('clients')})"
    )
    assert list(tmp_path.iterdir()) == []
    done = run_ssebench("agents", "dockerfile", "cluade")
    assert (done.returncode, done.stderr) == (
        2,
        "ssebench agents: no agent layer for 'cluade': the bundled agents are "
        f"{_names('agents').replace(chr(39), '')}; maybe you meant 'claude'?\n",
    )


@given(st.data())
def test_any_casing_of_a_name_suggests_that_name(data: st.DataObject) -> None:
    from ssebench.agents.registry import CLIENTS
    from ssebench.choices import closest

    name = data.draw(st.sampled_from(sorted(CLIENTS)))
    typed = "".join(c.upper() if data.draw(st.booleans()) else c for c in name)
    assert closest(typed, CLIENTS) == name


def test_every_level_of_the_tree_says_command_and_every_command_has_help_and_a_description() -> None:
    """Walks the argparse tree: one metavar word for sub-commands, a help line for each (the
    parent's list) and a description (its own --help)."""
    import argparse

    from ssebench.cli import build_parser

    seen = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if not isinstance(action, argparse._SubParsersAction):
                continue
            assert action.metavar == "COMMAND", path
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, sub in action.choices.items():
                assert helps.get(name), f"{path} {name}: no help line"
                assert sub.description, f"{path} {name}: no description"
                seen.append(f"{path} {name}")
                walk(sub, f"{path} {name}")

    walk(build_parser(), "ssebench")
    assert {"ssebench agents install", "ssebench jobs report", "ssebench dialog show", "ssebench task new"} <= set(seen)
    for group in ("agents", "task", "dataset", "dialog", "jobs"):
        assert run_ssebench(group, "--help").stdout.startswith(f"usage: ssebench {group} [-h] COMMAND ...\n")
    assert run_ssebench("agents", "install", "--help").stdout.split("\n\n")[1] == (
        "Add or update the server entry (several agents, or --all)."
    )
