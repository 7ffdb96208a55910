"""Turn an agent CLI's JSON-lines stream into dialog events.

Each agent has a :class:`~ssebench.dialog.stream.StreamConverter`, the ``reader`` of its record
(agents/agent.py), that knows only its CLI's event schema. :class:`DialogPipeline` does everything the
protocol promises on top, the same way for every CLI: the prompt line, tool calls
paired (a result never appears without its ``running`` line, a call the session
left open is closed as an error), the turn count, and exactly one ``complete``
line at the end.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO

from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter
from ssebench.dialog.writer import DialogWriter


class _Converters(Mapping[str, Callable[[str], StreamConverter]]):
    """Agent name -> its reader (the record's ``reader``), read from the agent records
    (agents/registry.py) each time, so an agent registered later is known too."""

    def _readers(self) -> dict[str, Callable[[str], StreamConverter]]:
        from ssebench.agents.registry import AGENTS

        return {name: record.reader for name, record in AGENTS.items()}

    def __getitem__(self, agent: str) -> Callable[[str], StreamConverter]:
        return self._readers()[agent]

    def __iter__(self) -> Iterator[str]:
        return iter(self._readers())

    def __len__(self) -> int:
        return len(self._readers())


CONVERTERS: Mapping[str, Callable[[str], StreamConverter]] = _Converters()


def load_converter(agent: str) -> StreamConverter:
    from ssebench.agents.registry import AGENTS

    record = AGENTS.get(agent)
    if record is None:
        raise ValueError(f"no dialog converter for agent {agent!r}; known: {', '.join(AGENTS)}")
    return record.converter()


class DialogPipeline:
    """Feed raw stream lines in; well-formed dialog lines come out of the writer."""

    def __init__(
        self, writer: DialogWriter, converter: StreamConverter, prompt: str | None = None, clock=time.monotonic
    ) -> None:
        self.writer = writer
        self.converter = converter
        self._prompt = prompt
        self._clock = clock
        self._started = clock()
        self._open_tools: dict[str, str] = {}  # id -> name, calls still running
        self._done_tools: set[str] = set()
        self._new_turn = True
        self.turns = 0
        self.ignored_lines = 0
        self.first_error: str | None = None  # the first event a converter could not read
        self._closed = False
        self._prompt_written = False
        self._document: list[str] | None = None  # the lines of a document still open

    def feed_line(self, line: str) -> None:
        if self.converter.documents:
            joined = self._joined(line)
            if joined is None:
                return
            line = joined
        text = line.strip()
        if not text:
            return
        try:
            raw = json.loads(text)
        except ValueError:
            self.ignored_lines += 1  # CLIs print banners and warnings between events
            return
        if not isinstance(raw, dict):
            self.ignored_lines += 1
            return
        try:
            self._emit_all(self.converter.feed(raw))
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            # An event of a shape this converter does not know (a newer CLI): skip it,
            # keep the session going; the raw stream keeps it.
            self.ignored_lines += 1
            self.first_error = self.first_error or f"{type(exc).__name__}: {exc}"

    def _joined(self, line: str) -> str | None:
        """The line, or a whole document once its closing ``}`` came; None while one is open."""
        text = line.rstrip("\r\n")
        if self._document is None:
            if text != "{":
                return line
            self._document = []
        self._document.append(text)
        if text != "}":
            return None
        document, self._document = "\n".join(self._document), None
        return document

    def feed_stream(self, stream: IO[str], tee: IO[str] | None = None) -> None:
        """Read to end of stream, copying every raw line to ``tee`` if given."""
        for line in stream:
            if tee is not None:
                tee.write(line)
                tee.flush()
            self.feed_line(line)

    def close(self, *, exit_code: int | None = None, timed_out: bool = False, interrupted: bool = False) -> Event:
        """Flush buffered events, close open tool calls, write ``complete``."""
        if self._closed:
            raise RuntimeError("dialog already closed")
        self._closed = True
        self._emit_all(self.converter.finish())
        if not self._prompt_written and self._prompt is not None:
            self._prompt_written = True
            self._write(ev.prompt(self._prompt))
        for tool_id, name in list(self._open_tools.items()):
            self._write(
                ev.tool_finished(tool_id, name, ok=False, output="(the session ended before the tool returned)")
            )
        conv = self.converter
        if timed_out:
            status = "timeout"
        elif interrupted:
            status = "interrupted"
        elif conv.failed or (exit_code not in (None, 0)):
            status = "error"
        else:
            status = "success"
        duration = conv.duration if conv.duration is not None else self._clock() - self._started
        error = conv.failed
        if error is None and status == "timeout":
            error = "the agent ran out of time and was stopped"
        return self._write(
            ev.complete(
                status, turns=self.turns, duration=duration, tokens=conv.tokens, exit_code=exit_code, error=error
            )
        )

    # -- bookkeeping shared by every CLI --------------------------------------------

    def _emit_all(self, events: Iterable[Event]) -> None:
        for event in events:
            for line in self._normalize(event):
                self._write(line)

    def _normalize(self, event: Event) -> Iterator[Event]:
        kind = event["type"]
        if kind == "prompt":
            self._prompt_written = True
            yield event
            return
        if kind != "init" and not self._prompt_written and self._prompt is not None:
            self._prompt_written = True
            yield ev.prompt(self._prompt)
        if kind == "tool":
            tool_id = event["id"]
            if event["status"] == "running":
                if tool_id in self._open_tools or tool_id in self._done_tools:
                    return  # a CLI repeating a start we already logged
                self._count_turn()
                self._open_tools[tool_id] = event["name"]
            else:
                if tool_id in self._done_tools:
                    return
                if tool_id not in self._open_tools:
                    # Some CLIs report a call only once it ended: log its start first.
                    self._count_turn()
                    yield ev.tool_running(tool_id, event["name"], event.get("input"))
                else:
                    del self._open_tools[tool_id]
                event = {k: v for k, v in event.items() if k != "input"}
                self._done_tools.add(tool_id)
                self._new_turn = True
        elif kind in ("message", "thinking"):
            self._count_turn()
        yield event

    def _count_turn(self) -> None:
        """Model output after the prompt or after tool results starts a new turn."""
        if self._new_turn:
            self.turns += 1
            self._new_turn = False

    def _write(self, event: Event) -> Event:
        return self.writer.write(event)
