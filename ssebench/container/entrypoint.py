"""``ssebench entrypoint``: one task container's life, start to ``results.json``.

Order: daemon (unless a sidecar serves it) → MCP server → wait for ``initialize`` →
agent under its timeout → stop the servers → final grading of every check →
``results.json``. Each child runs in its own process group; signals the entrypoint
receives go to the agent's group, and every group is stopped before we return,
whatever happened. ``ssebench run`` drives the same :class:`Entrypoint` in-process
and watches its stages.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.container import results as results_file
from ssebench.container.readiness import StartupError, wait_for_mcp
from ssebench.container.results import (
    DIALOG_FILE,
    EXIT_DAEMON_FAILED,
    EXIT_SERVER_FAILED,
    EXIT_USAGE,
    RESULTS_FILE,
    AgentOutcome,
    exit_status,
    grading_stage,
    now,
)
from ssebench.container.settings import Settings
from ssebench.container.signals import SIGNAL_FLOOR_SECONDS, SIGNAL_GRACE_SECONDS, SignalHandling
from ssebench.daemon.procs import enable_subreaper
from ssebench.supervise import (
    STOP_GRACE_SECONDS,
    Child,
    exited,
    kill_strays,
    open_log,
    spawn,
    ssebench_argv,
    stop_all,
    wait_for_daemon,
    wait_for_exit,
)

__all__ = ["EXIT_USAGE", "Entrypoint", "Outcome", "print_stage"]
MAX_EVENT_BYTES = 64 * 1024 * 1024  # a stream line longer than this is kept raw, not converted
StageHook = Callable[[str, str, str], None]  # (stage, state, detail)


@dataclass
class Outcome:
    exit_code: int
    results: dict[str, Any]
    results_file: Path | None


@dataclass
class Entrypoint(SignalHandling):
    settings: Settings
    agent_command: Sequence[str]
    on_stage: StageHook = field(default=lambda stage, state, detail: None)
    agent_env: dict[str, str] | None = None  # extra variables for the agent only

    def __post_init__(self) -> None:
        self._keep: set[int] = set()
        self._children: list[Child] = []
        self._agent: Child | None = None
        self._signal: int | None = None
        self._signal_deadline: float | None = None  # the one grace period after a signal ends here
        self._stages: dict[str, dict[str, Any]] = {}
        self._dialog_lock = threading.Lock()
        self._dialog_closed = False

    # -- public ---------------------------------------------------------------------

    def prepare(self) -> tuple[Any, Path]:
        """Check everything that can be checked before starting anything.

        Returns the loaded task (None in sidecar mode without a task file) and the tree.
        """
        from ssebench.container.prepare import check_run

        self.agent_command, self.level, task, tree = check_run(self.settings, self.agent_command)
        return task, tree

    def run(self) -> Outcome:
        """Prepare, run every stage, write ``results.json``. Raises SettingsError before starting."""
        task, tree = self.prepare()
        started_at, t0 = now(), time.monotonic()
        handlers = self._install_signal_handlers()
        # A process that leaves its group (setsid, a daemonising CLI) escapes killpg; as
        # subreaper we inherit it when its parent exits, so kill_strays still finds it.
        enable_subreaper()
        import psutil

        self._keep = {p.pid for p in psutil.Process().children(recursive=True)}  # not ours to stop
        workdir = Path(tempfile.mkdtemp(prefix="ssebench-entry-"))  # 0700, ours
        agent = AgentOutcome(command=list(self.agent_command), timeout=self.settings.agent_timeout)
        grading: dict[str, Any] | None = None
        error: str | None = None
        exit_code: int
        try:
            exit_code, error, grading = self._stages_run(task, tree, workdir, agent)
        finally:
            stop_all(self._children, self._grace(STOP_GRACE_SECONDS, floor=SIGNAL_FLOOR_SECONDS))
            kill_strays(self._keep)
            self._restore_signal_handlers(handlers)
            _remove_tree(workdir)
        results = results_file.document(
            self.settings,
            task=task,
            tree=tree,
            level=self.level,
            stages=self._stages,
            agent=agent,
            grading=grading,
            exit_code=exit_code,
            error=error,
            started_at=started_at,
            duration=time.monotonic() - t0,
        )
        path = self.settings.results_dir / RESULTS_FILE
        results_file.write(path, results)
        return Outcome(exit_code, results, path)

    # -- stages ---------------------------------------------------------------------

    def _stages_run(
        self, task: Any, tree: Path, workdir: Path, agent: AgentOutcome
    ) -> tuple[int, str | None, dict[str, Any] | None]:
        failed = self._start_servers(tree, self.settings.daemon_socket or workdir / "daemon.sock")
        if failed is not None:
            return failed
        self._run_agent(tree, agent)
        # stop the servers before grading: nothing may change the tree any more
        stop_all(self._children, self._grace(STOP_GRACE_SECONDS, floor=SIGNAL_FLOOR_SECONDS))
        if self._signal is not None:
            self._stage("grading", "skipped", f"interrupted by {signal.Signals(self._signal).name}")
            return 128 + self._signal, f"interrupted by {signal.Signals(self._signal).name}", None
        if task is None:
            self._stage("grading", "skipped", "sidecar mode without SSE_TASK: the sidecar grades")
            grading, grade_error, passed = None, None, None
        else:
            grading, grade_error, passed = self._grade(tree)
            if self._signal is not None:  # interrupted while grading
                name = signal.Signals(self._signal).name
                return 128 + self._signal, f"interrupted by {name} while grading", grading
        return (*exit_status(agent, grade_error, passed), grading)

    def _start_servers(self, tree: Path, socket: Path) -> tuple[int, str, None] | None:
        """The daemon (a sidecar serves it already: only wait for it), then the MCP
        server, each waited for; the failure's exit status and message, or None."""
        s = self.settings
        deadline = time.monotonic() + s.mcp_timeout
        self._stage("daemon", "start", str(socket))
        try:
            child = None
            if not s.sidecar:
                child = self._spawn(
                    "daemon",
                    ssebench_argv("daemon", "--task", str(s.task), "--tree", str(tree), "--socket", str(socket)),
                )
            _health, took = wait_for_daemon(
                socket,
                what=f"the daemon (socket {socket})",
                timeout=s.mcp_timeout,
                deadline=deadline,
                gone=exited(child.proc if child else None),
                tail=child.tail if child else list,
                interrupted=self._interrupted,
                poll=0.1,
            )
        except StartupError as exc:
            return self._startup_failed("daemon", exc, EXIT_DAEMON_FAILED)
        self._stage("daemon", "done", f"ready in {took:.1f} s", seconds=took)
        self._stage("server", "start", s.mcp_url)
        try:
            child = self._spawn(
                "server",
                ssebench_argv(
                    "serve",
                    "--host",
                    s.mcp_host,
                    "--port",
                    str(s.mcp_port),
                    "--path",
                    s.mcp_path,
                    "--daemon-socket",
                    str(socket),
                ),
            )
            took = wait_for_mcp(
                s.mcp_url, child, deadline=deadline, timeout=s.mcp_timeout, interrupted=self._interrupted
            )
        except StartupError as exc:
            return self._startup_failed("server", exc, EXIT_SERVER_FAILED)
        self._stage("server", "done", f"answered initialize in {took:.1f} s", seconds=took, url=s.mcp_url)
        return None

    def _run_agent(self, tree: Path, agent: AgentOutcome) -> None:
        self._stage("agent", "start", " ".join(self.agent_command))
        started = time.monotonic()
        stdout_log = open_log(self.settings.results_dir / "agent-stdout.log")
        try:
            try:
                child, pipeline, reader = self._launch_agent(tree, stdout_log)
            except OSError as exc:
                agent.error = f"the agent command could not start: {exc.strerror or exc}: {self.agent_command[0]}"
                agent.exit_code = 127
                self._stage("agent", "failed", agent.error)
                return
            self._await_agent(child, agent)
            agent.duration = time.monotonic() - started
            self._close_dialog(pipeline, reader, agent)
        finally:
            stdout_log.close()
        self._report_agent(agent)

    def _launch_agent(self, tree: Path, stdout_log: Any) -> tuple[Child, Any, threading.Thread | None]:
        """The agent's process (stderr to its log; stdout to *stdout_log*, through the
        dialog converter when there is one); raises OSError when it cannot start."""
        s = self.settings
        env = {k: v for k, v in s.env.items() if k not in ("SSE_TASK",)}  # no path to hidden parts
        env.update(self.agent_env or {})
        env["SSE_MCP_URL"] = s.mcp_url
        log = s.results_dir / "agent-stderr.log"
        pipeline = reader = None
        if s.dialog:
            child = self._spawn("agent", self.agent_command, cwd=tree, env=env, log=log, stdout=subprocess.PIPE)
            pipeline, reader = self._start_dialog(child, stdout_log, s.dialog)
        else:
            child = self._spawn("agent", self.agent_command, cwd=tree, env=env, log=log, stdout=stdout_log)
        self._agent = child
        if self._signal is not None:  # a signal came while we were starting it
            child.signal(self._signal)
        return child, pipeline, reader

    def _await_agent(self, child: Child, agent: AgentOutcome) -> None:
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
            self._stages.setdefault("agent", {})["strays_killed"] = strays
        agent.exit_code = code if code >= 0 else 128 - code
        if code < 0:
            agent.signal = signal.Signals(-code).name

    def _close_dialog(self, pipeline: Any, reader: threading.Thread | None, agent: AgentOutcome) -> None:
        if reader is not None:
            reader.join(timeout=self._grace(STOP_GRACE_SECONDS, floor=SIGNAL_FLOOR_SECONDS))
        if pipeline is not None:
            # A process that left the agent's group may still hold the pipe open:
            # stop converting (under the pump's lock) and close the dialog now.
            with self._dialog_lock:
                self._dialog_closed = True
                pipeline.close(
                    exit_code=agent.exit_code, timed_out=agent.timed_out, interrupted=self._signal is not None
                )
                pipeline.writer.close()

    def _report_agent(self, agent: AgentOutcome) -> None:
        if not agent.timed_out:
            state = "done" if agent.exit_code == 0 else "failed"
            detail = f"exited {agent.exit_code}" + (f" ({agent.signal})" if agent.signal else "")
            self._stage("agent", state, f"{detail} after {agent.duration:.1f} s", seconds=agent.duration)
        if agent.exit_code != 0 and agent.error is None and not agent.timed_out:
            from ssebench.container.agentlog import last_error_line

            said = last_error_line(self.settings.results_dir)  # the CLI's own reason, for the summary
            agent.error = f"the agent exited with status {agent.exit_code}" + (f": {said}" if said else "")

    def _start_dialog(self, child: Child, tee: Any, dialog: str) -> tuple[Any, threading.Thread]:
        from ssebench.dialog.convert import DialogPipeline, load_converter
        from ssebench.dialog.writer import DialogWriter

        writer = DialogWriter.create(self.settings.results_dir / DIALOG_FILE)
        pipeline = DialogPipeline(writer, load_converter(dialog), prompt=self.settings.prompt)

        def pump() -> None:
            # Every byte goes to the raw log; a line longer than MAX_EVENT_BYTES is not
            # parsed (nor held in memory whole): its parts pass straight through.
            stream = child.proc.stdout
            assert stream is not None
            oversized = False
            while chunk := stream.readline(MAX_EVENT_BYTES):
                try:
                    tee.write(chunk)
                except ValueError:  # the raw log was closed: the run is over
                    return
                complete = chunk.endswith(b"\n")
                if not oversized and (complete or len(chunk) < MAX_EVENT_BYTES):
                    with self._dialog_lock:
                        if self._dialog_closed:
                            return
                        pipeline.feed_line(chunk.decode("utf-8", errors="replace"))
                else:
                    oversized = not complete

        thread = threading.Thread(target=pump, name="dialog", daemon=True)
        thread.start()
        return pipeline, thread

    def _grade(self, tree: Path) -> tuple[dict[str, Any] | None, str | None, bool | None]:
        """Run every check (``ssebench grade --json``) in its own process group."""
        s = self.settings
        self._stage("grading", "start", "every check, whatever the level")
        log = s.results_dir / "grading.log"
        out = s.results_dir / "grading.json"
        with open_log(out) as stdout:
            child = self._spawn(
                "grading",
                ssebench_argv("grade", "--task", str(s.task), "--tree", str(tree), "--json"),
                log=log,
                stdout=stdout,
            )
        while not wait_for_exit(child, 3600.0, self._interrupted):
            if self._signal is not None:
                child.stop(self._grace(STOP_GRACE_SECONDS, floor=SIGNAL_FLOOR_SECONDS))
                return None, f"grading interrupted by {signal.Signals(self._signal).name}", None
        code = child.proc.returncode
        try:
            report = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = None
        stage, passed = grading_stage(code, report if isinstance(report, dict) else None, "\n".join(child.tail()))
        self._stage("grading", stage["state"], stage["detail"], **({} if passed is None else {"passed": passed}))
        return (report if isinstance(report, dict) else None), (stage["detail"] if passed is None else None), passed

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

    def _startup_failed(self, stage: str, exc: StartupError, code: int) -> tuple[int, str, None]:
        self._stage(stage, "failed", str(exc))
        if self._signal is not None:
            return 128 + self._signal, f"interrupted by {signal.Signals(self._signal).name}", None
        return code, str(exc), None

    def _stage(self, stage: str, state: str, detail: str, **extra: Any) -> None:
        record = self._stages.setdefault(stage, {})
        record.update(
            state=state, detail=detail, **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in extra.items()}
        )
        self.on_stage(stage, state, detail)


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def print_stage(stage: str, state: str, detail: str) -> None:
    """The entrypoint's own progress lines, on stderr (container logs)."""
    print(f"ssebench entrypoint: {stage}: {state}: {detail}", file=sys.stderr, flush=True)
