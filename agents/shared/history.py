"""A saved session printed after the run: one JSON document whose ``messages`` are the session.

fast-agent (``--results FILE``) and Code Puppy (its ``autosaves/`` session) print no stream of
their own, so their launch prints the history the CLI saved, one pretty-printed document (the
reader's ``documents``). What each message holds is the CLI's own schema; the walk is the same:
the ``init``, every message's events in order (``names`` keeps each call's tool name for its
result), then the end of the session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from ssebench.dialog import events as ev
from ssebench.dialog.events import Event
from ssebench.dialog.stream import StreamConverter

#: one message's events: the message and the tool names of the calls seen so far (id -> name)
MessageReader = Callable[[dict, dict[str, str]], Iterable[Event]]


def events(reader: StreamConverter, document: dict, message: MessageReader) -> Iterator[Event]:
    """The dialog events of a history document; none for a document without a ``messages`` list."""
    messages = document.get("messages")
    if not isinstance(messages, list):
        return
    yield ev.init(reader.agent)
    names: dict[str, str] = {}
    for each in messages:
        if isinstance(each, dict):
            yield from message(each, names)
    reader.finished = True
