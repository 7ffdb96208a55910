"""The entrypoint's signals: SIGTERM/SIGINT/SIGHUP go to the agent's group, the servers
stop at once, and one grace period bounds everything after the first signal."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from ssebench.supervise import STOP_GRACE_SECONDS, Child

FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# After SIGTERM/SIGINT/SIGHUP the agent gets this long to exit, once; then its group is
# killed. The servers get SIGTERM at once (the run is over) and are killed when the grace
# ends (at least SIGNAL_FLOOR_SECONDS after the signal); grading is skipped. So
# results.json is written about 5-6 s after the signal, inside the 10 s `docker stop`
# waits before its SIGKILL (docs/container.md).
SIGNAL_GRACE_SECONDS = 5.0
SIGNAL_FLOOR_SECONDS = 1.0


class SignalHandling:
    """The signal half of :class:`ssebench.container.entrypoint.Entrypoint` (its base)."""

    _children: list[Child]
    _agent: Child | None
    _signal: int | None
    _signal_deadline: float | None  # the one grace period after a signal ends here

    def _interrupted(self) -> bool:
        return self._signal is not None

    def _grace(self, default: float, floor: float = 0.0) -> float:
        """*default* seconds, or after a signal what is left of its one grace period (≥ *floor*)."""
        if self._signal_deadline is None:
            return default
        return max(floor, min(default, self._signal_deadline - time.monotonic()))

    def _stop_agent(self, child: Child) -> None:
        """TERM the agent's group, KILL it after the grace: STOP_GRACE_SECONDS after a
        timeout, cut short to the signal's grace period if a signal comes meanwhile."""
        child.signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while child.running() and time.monotonic() < min(deadline, self._signal_deadline or deadline):
            time.sleep(0.05)
        child.signal(signal.SIGKILL)

    def _install_signal_handlers(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}
        for signum in FORWARDED_SIGNALS:
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    def _restore_signal_handlers(self, previous: dict[int, Any]) -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def _on_signal(self, signum: int, frame: object) -> None:
        first = self._signal is None
        self._signal = signum
        if first:
            self._signal_deadline = time.monotonic() + SIGNAL_GRACE_SECONDS
            # The run is over: the servers stop now, alongside the agent's grace, not after it.
            for child in self._children:
                if child.name in ("daemon", "server") and child.running():
                    child.signal(signal.SIGTERM)
        if self._agent is not None and self._agent.running():
            self._agent.signal(signum)
        elif not first and signum == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C while starting: give up now
