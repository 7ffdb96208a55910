"""The bounded event store and the task store, with clocks the tests move: what is kept,
what is replayed, what expires."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.streamable_http import EventMessage
from mcp_types import JSONRPCNotification

from ssebench.server.events import BoundedEventStore
from ssebench.server.taskstore import TaskStore


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def note(text: str) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"message": text})


async def replayed(store: BoundedEventStore, after: str) -> tuple[str | None, list[str]]:
    got: list[EventMessage] = []

    async def collect(event: EventMessage) -> None:
        got.append(event)

    stream = await store.replay_events_after(after, collect)
    return stream, [e.message.params["message"] for e in got]  # type: ignore[union-attr]


@settings(max_examples=60, deadline=None)
@given(
    events=st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 300), st.floats(0, 5)), max_size=60),
    max_bytes=st.integers(200, 3000),
)
def test_the_store_stays_within_its_bounds_and_replays_only_its_stream(
    events: list[tuple[str, int, float]], max_bytes: int
) -> None:
    clock = Clock()
    store = BoundedEventStore(max_age=20.0, max_bytes=max_bytes, clock=clock)
    sent: list[tuple[str, str, str]] = []  # (stream, event id, text)

    async def scenario() -> None:
        for i, (stream, size, wait) in enumerate(events):
            clock.now += wait
            text = f"{i}:" + "x" * size
            sent.append((stream, await store.store_event(stream, note(text)), text))
            assert store.size <= max(max_bytes, 0) or len(store) == 0
        for stream, event_id, _ in sent:
            got_stream, texts = await replayed(store, event_id)
            if got_stream is None:
                continue  # dropped: nothing to replay from there
            assert got_stream == stream
            later = [t for s, _, t in sent[sent.index((stream, event_id, _t(sent, event_id))) + 1 :] if s == stream]
            assert texts == later[len(later) - len(texts) :]  # the kept tail of its own stream

    asyncio.run(scenario())


def _t(sent: list[tuple[str, str, str]], event_id: str) -> str:
    return next(t for _, e, t in sent if e == event_id)


def test_events_older_than_the_age_are_dropped() -> None:
    clock = Clock()
    store = BoundedEventStore(max_age=10.0, max_bytes=1 << 20, clock=clock)

    async def scenario() -> None:
        first = await store.store_event("s", None)  # a priming event
        await store.store_event("s", note("one"))
        assert await replayed(store, first) == ("s", ["one"])
        clock.now = 11.0
        await store.store_event("s", note("two"))
        assert await replayed(store, first) == (None, [])
        assert len(store) == 1

    asyncio.run(scenario())


def test_a_finished_task_is_kept_its_ttl_then_forgotten_and_only_its_owner_sees_it() -> None:
    clock, wall = Clock(), Clock()
    store = TaskStore(ttl=60.0, clock=clock, wall=wall)
    task = store.create("alice")
    assert store.get(task.task_id, "bob") is None and store.get(task.task_id, None) is None
    assert store.wire(task)["ttlMs"] == 60_000
    clock.now = 500.0  # a long run never expires while it works
    store.say(task, "build: running, 8m20s")
    assert store.get(task.task_id, "alice") is task and store.wire(task)["ttlMs"] == 560_000
    store.finish(task, "completed", result={"content": []})
    clock.now = 559.0
    assert store.get(task.task_id, "alice") is task
    wire = store.wire(task)
    assert wire["status"] == "completed" and wire["result"] == {"content": []} and "statusMessage" not in wire
    clock.now = 560.0
    assert store.get(task.task_id, "alice") is None and len(store) == 0
