"""The agent's stdout, teed to its raw log and converted into dialog.jsonl as it comes.

Its own thread (the entrypoint waits on the agent meanwhile) and its own lock: a process
that left the agent's group may hold the pipe open after the agent ended, so the dialog
is closed under the lock and the thread stops converting from then on.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import IO, Any

MAX_EVENT_BYTES = 64 * 1024 * 1024  # a stream line longer than this is kept raw, not converted


class DialogPump:
    """One agent's stream into *results_dir*/dialog.jsonl (format: *dialog*, a CLI's name)."""

    def __init__(self, dialog_file: Path, dialog: str, prompt: str | None) -> None:
        from ssebench.dialog.convert import DialogPipeline, load_converter
        from ssebench.dialog.writer import DialogWriter

        self.pipeline = DialogPipeline(DialogWriter.create(dialog_file), load_converter(dialog), prompt=prompt)
        self.lock = threading.Lock()
        self.closed = False
        self.thread: threading.Thread | None = None

    def start(self, stream: IO[bytes], tee: Any) -> None:
        """Every byte of *stream* to *tee*; each whole line (≤ MAX_EVENT_BYTES) to the converter."""
        self.thread = threading.Thread(target=self._pump, args=(stream, tee), name="dialog", daemon=True)
        self.thread.start()

    def _pump(self, stream: IO[bytes], tee: Any) -> None:
        # A line longer than MAX_EVENT_BYTES is not parsed (nor held in memory whole): its
        # parts pass straight through to the raw log.
        oversized = False
        while chunk := stream.readline(MAX_EVENT_BYTES):
            try:
                tee.write(chunk)
            except ValueError:  # the raw log was closed: the run is over
                return
            complete = chunk.endswith(b"\n")
            if not oversized and (complete or len(chunk) < MAX_EVENT_BYTES):
                with self.lock:
                    if self.closed:
                        return
                    self.pipeline.feed_line(chunk.decode("utf-8", errors="replace"))
            else:
                oversized = not complete

    def close(self, grace: float, *, exit_code: int | None, timed_out: bool, interrupted: bool) -> None:
        """Wait up to *grace* for the stream's end, then close the dialog (whatever still comes is not converted)."""
        if self.thread is not None:
            self.thread.join(timeout=grace)
        with self.lock:
            self.closed = True
            self.pipeline.close(exit_code=exit_code, timed_out=timed_out, interrupted=interrupted)
            self.pipeline.writer.close()
