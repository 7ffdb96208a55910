"""Continue CLI ``-p --format json`` → dialog events.

``cn`` prints no events while it works: one JSON line at the end, the final answer (as the
model gave it when that is JSON, else wrapped as ``{"response": ..., "status": "success"}``),
or ``{"status": "error", "message": ...}``, and ``{"status": "info"|"warning", ...}`` lines
around an automatic compaction. The tool calls are not in this stream, so the dialog shows
the answer and the outcome only; the pipeline still writes the prompt and ``complete``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from ssebench.dialog import events as ev
from ssebench.dialog.convert import StreamConverter
from ssebench.dialog.events import Event


class ContinueDialog(StreamConverter):
    agent = "continue"

    def __init__(self) -> None:
        super().__init__()
        self._started = False

    def feed(self, event: dict) -> Iterator[Event]:
        if not self._started:
            self._started = True
            yield ev.init(self.agent)
        status = event.get("status")
        if status == "error":
            self.failed = str(event.get("message") or "error")
            self.finished = True
        elif status in ("info", "warning"):
            return
        elif status == "success" and isinstance(event.get("response"), str):
            yield ev.message(event["response"])
            self.finished = True
        else:  # the model's own JSON answer, printed as it came
            yield ev.message(json.dumps(event, ensure_ascii=False))
            self.finished = True
