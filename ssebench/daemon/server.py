"""uvicorn's server with the daemon's exit handling."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from types import FrameType

import uvicorn


class DaemonServer(uvicorn.Server):
    """On SIGTERM/SIGINT: kill the running check at once, then shut down cleanly.

    uvicorn re-raises the signal after its shutdown, which would end the process before
    the socket file and the workspace are removed; this server does not.
    """

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        old = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._on_exit()
        super().handle_exit(sig, frame)
