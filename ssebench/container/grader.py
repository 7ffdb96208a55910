"""The entrypoint's final grading, in-process: :func:`ssebench.grading.grade` in a worker thread.

In a thread, not a ``ssebench grade`` child: the verdict comes back typed (no JSON on a
pipe to parse), and a signal to the entrypoint stops grading through
:func:`grade`'s *stop* event, which cancels the checks and waits until their processes
and copies are gone (a child stopped with SIGTERM used to leave ``$TMPDIR/ssebench-grade-*``
behind). grading.log keeps its progress, one line per check, and its error.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ssebench import contract
from ssebench.runrecord import Grading


@dataclass
class GradingThread:
    """One grading under way in its own thread; :meth:`wait` for it, :meth:`stop` it."""

    task: Any  # ssebench.task.Task
    tree: Path
    log: Path
    env: dict[str, str]
    grading: Grading | None = None
    error: str | None = None  # why there is no verdict
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> GradingThread:
        self._thread = threading.Thread(target=self._run, name="grading", daemon=True)
        self._thread.start()
        return self

    def wait(self, timeout: float) -> bool:
        """True once grading has ended (with a verdict or an error)."""
        assert self._thread is not None
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self, grace: float) -> None:
        """Cancel the checks; wait up to *grace* seconds for them to be gone."""
        self._stop.set()
        self.wait(max(grace, 0.0))

    def _run(self) -> None:
        from ssebench.daemon.limits import Limits
        from ssebench.daemon.runner import RunError
        from ssebench.daemon.sandbox import SandboxUnavailable
        from ssebench.daemon.sandbox_setup import detect
        from ssebench.grading import GradingStopped, grade
        from ssebench.task import TaskError

        with open(self.log, "w", encoding="utf-8", errors="replace") as log:
            try:
                sandbox, limits = detect(environ=self.env), Limits.from_env(self.env)
                result = grade(self.task, self.tree, _progress(log), sandbox=sandbox, limits=limits, stop=self._stop)
            except GradingStopped:
                log.write("grading stopped\n")
            except (TaskError, ValueError, RunError, SandboxUnavailable, OSError) as exc:
                self.error = f"grading failed: {exc}"
                log.write(f"ssebench grade: {exc}\n")
            else:
                self.grading = result.record()
                from ssebench import phrases

                log.write(
                    f"Grade of task '{result.task_id}' on {result.tree}: {phrases.grade_verdict(result.results)}\n"
                )


def _progress(log: IO[str]) -> Any:
    """grading.log's lines: a check starting, and each check's line as ``ssebench grade`` prints it."""
    from ssebench.grading import describe_check

    def on_event(event: contract.Event) -> None:
        if isinstance(event, contract.CheckStarted):
            log.write(f"grading: {event.check.label}\n")
        elif isinstance(event, contract.CheckFinished):
            log.write(describe_check(event.result) + "\n")
        log.flush()

    return on_event
