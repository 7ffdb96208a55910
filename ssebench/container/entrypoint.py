"""``ssebench entrypoint``: one task container's life, start to ``results.json``.

Order: daemon (unless a sidecar serves it) → MCP server → wait for ``initialize`` →
agent under its timeout → stop the servers → final grading of every check →
``results.json``. Each child runs in its own process group; signals the entrypoint
receives go to the agent's group, and every group is stopped before we return,
whatever happened. ``ssebench run`` drives the same :class:`Entrypoint` in-process
and watches its stages.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench import runrecord
from ssebench.container import results as record
from ssebench.container.calls import read_calls
from ssebench.container.dialogpump import DialogPump
from ssebench.container.grader import GradingThread
from ssebench.container.prepare import setup_agent
from ssebench.container.readiness import StartupError
from ssebench.container.results import (
    DIALOG_FILE,
    EXIT_DAEMON_FAILED,
    EXIT_SERVER_FAILED,
    EXIT_USAGE,
    AgentRun,
    exit_status,
)
from ssebench.container.settings import EntrypointSettings
from ssebench.container.signals import SIGNAL_FLOOR_SECONDS, SIGNAL_GRACE_SECONDS, SignalHandling
from ssebench.daemon.procs import enable_subreaper
from ssebench.runrecord import Grading, RunResult, RunSpec, Stage
from ssebench.supervise import (
    STOP_GRACE_SECONDS,
    Child,
    kill_strays,
    open_log,
    spawn,
    stop_all,
    wait_for_exit,
)

__all__ = ["EXIT_USAGE", "Entrypoint", "print_stage"]
CALLS_FILE = "calls.jsonl"  # the server's typed call log, in the entrypoint's private folder
DAEMON_SOCKET = "daemon.sock"  # the daemon's socket there (when no sidecar serves one)
StageHook = Callable[[str, str, str], None]  # (stage, state, detail)
Ended = tuple[int, str | None, Grading | None, str | None]  # exit status, error, grading, grading's error


@dataclass
class Entrypoint(SignalHandling):
    settings: EntrypointSettings
    agent_command: Sequence[str]
    on_stage: StageHook = field(default=lambda stage, state, detail: None)
    agent_env: dict[str, str] | None = None  # extra variables for the agent only
    spec: RunSpec | None = None  # what the record says was run (None: made from the settings)
    task: Any = None  # the Task, when the caller loaded it already (ssebench run)

    def __post_init__(self) -> None:
        self._keep: set[int] = set()
        self._children: list[Child] = []
        self._agent: Child | None = None
        self._signal: int | None = None
        self._signal_deadline: float | None = None  # the one grace period after a signal ends here
        self._stages: dict[str, Stage] = {}
        self._grading: GradingThread | None = None

    # -- public ---------------------------------------------------------------------

    def prepare(self) -> tuple[Any, Path]:
        """Check everything that can be checked before starting anything.

        Returns the loaded task (None in sidecar mode without a task file) and the tree.
        """
        from ssebench.container.prepare import check_run

        self.agent_command, self.level, task, tree = check_run(self.settings, self.agent_command, self.task)
        return task, tree

    def run(self) -> RunResult:
        """Prepare, run every stage, write ``results.json``. Raises SettingsError before starting."""
        task, tree = self.prepare()
        spec = self.spec or self._own_spec(task)
        started_at, t0 = runrecord.now(), time.monotonic()
        handlers = self._install_signal_handlers()
        # A process that leaves its group (setsid, a daemonising CLI) escapes killpg; as
        # subreaper we inherit it when its parent exits, so kill_strays still finds it.
        enable_subreaper()
        import psutil

        self._keep = {p.pid for p in psutil.Process().children(recursive=True)}  # not ours to stop
        workdir = private_workdir()
        agent = AgentRun(command=list(self.agent_command), timeout=self.settings.agent_timeout)
        try:
            exit_code, error, grading, grade_error = self._stages_run(task, tree, workdir, agent)
            calls, count = read_calls(workdir / CALLS_FILE, texts_to=self.settings.results_dir)
        finally:
            stop_all(self._children, self._grace(STOP_GRACE_SECONDS, floor=SIGNAL_FLOOR_SECONDS))
            kill_strays(self._keep)
            if self._grading is not None:  # stopped, its checks killed: let it remove its copies
                self._grading.wait(self._grace(STOP_GRACE_SECONDS, floor=SIGNAL_FLOOR_SECONDS))
            self._restore_signal_handlers(handlers)
            _remove_tree(workdir)
        s = self.settings
        result = record.build(
            spec,
            task=runrecord.TaskRef(id=task.id if task else None, file=str(s.task) if s.task else None, tree=str(tree)),
            level=runrecord.DifficultyRef(level=self.level.number, name=self.level.name),
            mode="sidecar" if s.sidecar else "process",
            mcp_url=s.mcp_url,
            stages=self._stages,
            agent=agent.facts(calls=count) if "agent" in self._stages else None,
            grading=grading,
            grade_error=grade_error,
            calls=calls,
            exit_code=exit_code,
            error=error,
            started_at=started_at,
            duration=time.monotonic() - t0,
            dialog=(s.results_dir / DIALOG_FILE).exists(),
        )
        runrecord.write(s.results_dir, result)
        return result

    def _own_spec(self, task: Any) -> RunSpec:
        """The spec of a run started as ``ssebench entrypoint`` (from its settings)."""
        from ssebench.container.spec import from_flags

        s = self.settings
        return from_flags(
            task_file=str(s.task) if s.task else "",
            task_id=task.id if task else "",
            agent=s.agent,
            command=list(self.agent_command),
            level=self.level.number,
            backend="process",
            env=s.env,
            agent_timeout=str(s.agent_timeout),
            mcp_timeout=str(s.mcp_timeout),
        )

    # -- stages ---------------------------------------------------------------------

    def _stages_run(self, task: Any, tree: Path, workdir: Path, agent: AgentRun) -> Ended:
        failed = self._start_servers(tree, self.settings.daemon_socket or workdir / DAEMON_SOCKET, workdir)
        if failed is not None:
            return (*failed, None, None)
        self._run_agent(tree, agent)
        # stop the servers before grading: nothing may change the tree any more
        stop_all(self._children, self._grace(STOP_GRACE_SECONDS, floor=SIGNAL_FLOOR_SECONDS))
        if self._signal is not None:
            self._stage("grading", "skipped", f"interrupted by {signal.Signals(self._signal).name}")
            return 128 + self._signal, f"interrupted by {signal.Signals(self._signal).name}", None, None
        if task is None:
            self._stage("grading", "skipped", "sidecar mode without SSE_TASK: the sidecar grades")
            grading, grade_error, passed = None, None, None
        else:
            grading, grade_error, passed = self._grade(task, tree)
            if self._signal is not None:  # interrupted while grading
                name = signal.Signals(self._signal).name
                return 128 + self._signal, f"interrupted by {name} while grading", grading, None
        return (*exit_status(agent.facts(), grade_error, passed), grading, grade_error)

    def _start_servers(self, tree: Path, socket: Path, workdir: Path) -> tuple[int, str] | None:
        """The daemon (a sidecar serves it already: only wait for it), then the MCP server,
        each waited for within one budget (server/stack.py); the failure's exit status and
        message, or None."""
        from ssebench.server.stack import Stack

        s = self.settings
        if (taken := _port_taken(s.mcp_host, s.mcp_port)) is not None:  # before the daemon: costs nothing
            why = StartupError(f"the MCP server ({s.mcp_url}) {taken}")
            return self._startup_failed("server", why, EXIT_SERVER_FAILED)
        stack = Stack(socket, s.mcp_port, s.mcp_host, s.mcp_path, s.env, self._interrupted, self._children)
        timeout, deadline = s.mcp_timeout, time.monotonic() + s.mcp_timeout
        self._stage("daemon", "start", str(socket))
        try:
            what = f"the daemon (socket {socket})"
            if s.sidecar:
                took = stack.wait_daemon(None, timeout=timeout, deadline=deadline, what=what, where="")
            else:
                assert s.task is not None
                log = s.results_dir / "daemon.log"
                took = stack.start_daemon(
                    s.task, tree, log=log, timeout=timeout, deadline=deadline, what=what, where=""
                )
        except StartupError as exc:
            return self._startup_failed("daemon", exc, EXIT_DAEMON_FAILED)
        self._stage("daemon", "done", f"ready in {took:.1f} s", seconds=took)
        self._stage("server", "start", s.mcp_url)
        try:
            log, calls = s.results_dir / "server.log", workdir / CALLS_FILE
            took = stack.start_server(log=log, calls_file=calls, ready="initialize", timeout=timeout, deadline=deadline)
        except StartupError as exc:
            return self._startup_failed("server", exc, EXIT_SERVER_FAILED)
        self._stage("server", "done", f"answered initialize in {took:.1f} s", seconds=took, url=s.mcp_url)
        return None

    def _run_agent(self, tree: Path, agent: AgentRun) -> None:
        self._stage("agent", "start", " ".join(self.agent_command))
        started = time.monotonic()
        stdout_log = open_log(self.settings.results_dir / "agent-stdout.log")
        try:
            try:
                child, pump = self._launch_agent(tree, stdout_log)
            except OSError as exc:
                agent.error = f"the agent command could not start: {exc.strerror or exc}: {self.agent_command[0]}"
                agent.exit_code = 127
                self._stage("agent", "failed", agent.error)
                return
            self._await_agent(child, agent)
            agent.duration = time.monotonic() - started
            if pump is not None:
                grace = self._grace(STOP_GRACE_SECONDS, floor=SIGNAL_FLOOR_SECONDS)
                interrupted = self._signal is not None
                pump.close(grace, exit_code=agent.exit_code, timed_out=agent.timed_out, interrupted=interrupted)
        finally:
            stdout_log.close()
        self._report_agent(agent)

    def _launch_agent(self, tree: Path, stdout_log: Any) -> tuple[Child, DialogPump | None]:
        """The agent's process (stderr to its log; stdout to *stdout_log*, through the
        dialog converter when there is one); raises OSError when it cannot start."""
        s = self.settings
        env = {k: v for k, v in s.env.items() if k not in ("SSE_TASK",)}  # no path to hidden parts
        env.update(self.agent_env or {})
        env["SSE_MCP_URL"] = s.mcp_url
        setup_agent(s.agent, env)  # with the run's model API (a Docker layer ran it without)
        log = s.results_dir / "agent-stderr.log"
        pump = None
        if s.dialog:
            child = self._spawn("agent", self.agent_command, cwd=tree, env=env, log=log, stdout=subprocess.PIPE)
            pump = DialogPump(s.results_dir / DIALOG_FILE, s.dialog, s.prompt)
            assert child.proc.stdout is not None
            pump.start(child.proc.stdout, stdout_log)
        else:
            child = self._spawn("agent", self.agent_command, cwd=tree, env=env, log=log, stdout=stdout_log)
        self._agent = child
        if self._signal is not None:  # a signal came while we were starting it
            child.signal(self._signal)
        return child, pump

    def _await_agent(self, child: Child, agent: AgentRun) -> None:
        """Wait under the agent's timeout (or a signal's grace), stop what is left of it."""
        s = self.settings
        finished = wait_for_exit(child, s.agent_timeout, self._interrupted)
        if not finished and self._signal is not None:
            # the signal was forwarded: what is left of the one grace period to exit by itself
            finished = wait_for_exit(child, self._grace(SIGNAL_GRACE_SECONDS), lambda: False)
        elif not finished:
            agent.timed_out = True
            self._stage("agent", "failed", f"timed out after {s.agent_timeout} s")
        if not finished:
            self._stop_agent(child)  # TERM the group, KILL after the grace
        else:
            child.signal(signal.SIGKILL)  # leftovers of an agent that exited
        code = child.proc.wait()
        # processes that left the agent's group: stopped before grading reads the tree
        strays = kill_strays(self._keep, spare=[c for c in self._children if c.running()])
        if strays:
            self._note("agent", strays_killed=tuple(strays))
        agent.exit_code = code if code >= 0 else 128 - code
        if code < 0:
            agent.signal = signal.Signals(-code).name

    def _report_agent(self, agent: AgentRun) -> None:
        if not agent.timed_out:
            state = "done" if agent.exit_code == 0 else "failed"
            detail = f"exited {agent.exit_code}" + (f" ({agent.signal})" if agent.signal else "")
            self._stage("agent", state, f"{detail} after {agent.duration:.1f} s", seconds=agent.duration)
        if agent.exit_code != 0 and agent.error is None and not agent.timed_out:
            from ssebench.container.agentlog import last_error_line

            said = last_error_line(self.settings.results_dir)  # the CLI's own reason, for the summary
            agent.error = f"the agent exited with status {agent.exit_code}" + (f": {said}" if said else "")

    def _grade(self, task: Any, tree: Path) -> tuple[Grading | None, str | None, bool | None]:
        """Every check, in-process (container/grader.py); a signal stops it promptly."""
        s = self.settings
        self._stage("grading", "start", "every check, whatever the level")
        job = self._grading = GradingThread(task, tree, s.results_dir / "grading.log", s.env).start()
        while not job.wait(0.2):
            if self._signal is not None:
                job.stop(self._grace(STOP_GRACE_SECONDS, floor=SIGNAL_FLOOR_SECONDS))
                return None, f"grading interrupted by {signal.Signals(self._signal).name}", None
        if job.grading is None:
            error = job.error or "grading failed"
            self._stage("grading", "failed", error)
            return None, error, None
        record.write_grading(s.results_dir, job.grading)
        passed = job.grading.passed
        detail = "every check passed" if passed else "a check failed"
        self._stage("grading", "done", detail, passed=passed, where="process")
        return job.grading, None, passed

    # -- helpers ----------------------------------------------------------------------

    def _spawn(
        self,
        name: str,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        log: Path | None = None,
        stdout=None,
    ) -> Child:
        child = spawn(
            name,
            argv,
            env=env if env is not None else self.settings.env,
            log=log or self.settings.results_dir / f"{name}.log",
            cwd=cwd,
            stdout=stdout,
        )
        self._children.append(child)
        return child

    def _startup_failed(self, stage: str, exc: StartupError, code: int) -> tuple[int, str]:
        self._stage(stage, "failed", str(exc))
        if self._signal is not None:
            return 128 + self._signal, f"interrupted by {signal.Signals(self._signal).name}"
        return code, str(exc)

    def _stage(self, stage: str, state: str, detail: str, **extra: Any) -> None:
        self._note(stage, state=state, detail=detail, **extra)
        self.on_stage(stage, state, detail)

    def _note(self, stage: str, **fields: Any) -> None:
        """Set fields of *stage*'s record, keeping the others it has."""
        old = self._stages[stage].model_dump(exclude_none=True) if stage in self._stages else {}
        rounded = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in fields.items()}
        self._stages[stage] = Stage.model_validate({**old, **rounded})


def private_workdir() -> Path:
    """The entrypoint's own 0700 folder (the daemon's socket, the calls file): in TMPDIR, or
    in /tmp when TMPDIR is too deep for the socket (ssebench/socketdirs.py)."""
    from ssebench.socketdirs import private_socket_dir

    return private_socket_dir("ssebench-entry-", DAEMON_SOCKET)


def _port_taken(host: str, port: int) -> str | None:
    """Why the MCP server cannot listen on *host*:*port* (another server holds it), or None.
    Said at once and in the entrypoint's own words; the server's readiness check
    (container/readiness.py) still makes sure that the server that answers is ours."""
    from ssebench.server.cli import BindError, bind

    try:
        bind(host, port, advice="set SSE_MCP_PORT to a free port").close()
    except BindError as exc:
        return f"cannot listen: {exc}"
    return None


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def print_stage(stage: str, state: str, detail: str) -> None:
    """The entrypoint's own progress lines, on stderr (container logs)."""
    print(f"ssebench entrypoint: {stage}: {state}: {detail}", file=sys.stderr, flush=True)
