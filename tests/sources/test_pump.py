"""The pump shares the event loop with the display: it gives the loop back every
turn, and waits while a person's input is being answered."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

from toolstream_tui.core import StreamSession
from toolstream_tui.sources import pump
from toolstream_tui.sources.base import BodyChunk, ResponseHead, SourceItem
from toolstream_tui.sources.pacing import InputFirstPacer

HANG = 60.0  # only catches a hang; every wait below ends on an event

CHUNK = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'


async def chunks(count: int) -> AsyncIterator[SourceItem]:
    yield ResponseHead(200, "text/event-stream", t=0.0)
    for number in range(count):
        yield BodyChunk(CHUNK, float(number))


async def test_a_held_pump_reads_nothing_until_released() -> None:
    session = StreamSession("test", "openai-chat", live=False)
    pacer = InputFirstPacer()
    pacer.hold(HANG)
    task = asyncio.create_task(pump(chunks(10), session, lambda events: None, pacer))
    for _ in range(20):  # many loop turns: a free pump would have read everything
        await asyncio.sleep(0)
    assert session.state.events == 0 and not task.done()
    pacer.release()
    await asyncio.wait_for(task, HANG)
    assert session.state.events == 10 and session.ended


async def test_a_hold_stops_the_pump_before_its_next_item() -> None:
    session = StreamSession("test", "openai-chat", live=False)
    pacer = InputFirstPacer()

    def hold_at_the_third_event(events: list[object]) -> None:
        if session.state.events == 3 and not pacer.held:
            pacer.hold(HANG)  # as a key does, from the loop the pump runs on

    task = asyncio.create_task(pump(chunks(10), session, hold_at_the_third_event, pacer))
    for _ in range(20):
        await asyncio.sleep(0)
    assert session.state.events == 3 and not task.done()
    pacer.release()
    await asyncio.wait_for(task, HANG)
    assert session.state.events == 10


async def test_a_hold_nobody_releases_expires() -> None:
    session = StreamSession("test", "openai-chat", live=False)
    pacer = InputFirstPacer()
    pacer.hold(0.01)
    await asyncio.wait_for(pump(chunks(3), session, lambda events: None, pacer), HANG)
    assert session.state.events == 3 and not pacer.held


async def test_pumps_share_one_slice_of_each_pass_of_the_loop() -> None:
    """Eight pumps that never wait, with an empty slice: one item between two
    passes of the loop in all, not one each (a key would wait for all of them)."""
    pacer = InputFirstPacer(slice_seconds=0.0)
    sessions = [StreamSession("test", "openai-chat", live=False) for _ in range(8)]
    tasks = [
        asyncio.create_task(pump(chunks(10), session, lambda events: None, pacer))
        for session in sessions
    ]
    read_per_pass = []
    read = 0
    passes = itertools.count()
    while not all(task.done() for task in tasks):
        assert next(passes) < 100_000, "the pumps stopped reading"
        await asyncio.sleep(0)
        now_read = sum(session.state.events for session in sessions)
        read_per_pass.append(now_read - read)
        read = now_read
    assert read == 80
    assert max(read_per_pass) <= 2, read_per_pass


async def test_a_new_hold_replaces_the_old_expiry() -> None:
    pacer = InputFirstPacer()
    pacer.hold(0.0)
    pacer.hold(HANG)
    for _ in range(5):
        await asyncio.sleep(0)
    assert pacer.held, "the first hold's expiry must not release the second"
    pacer.release()
    assert not pacer.held


async def test_a_pump_that_never_waits_does_not_keep_the_slices_from_another() -> None:
    pacer = InputFirstPacer(slice_seconds=0.0)
    big, small = (StreamSession("test", "openai-chat", live=False) for _ in range(2))
    big_task = asyncio.create_task(pump(chunks(100), big, lambda events: None, pacer))
    await asyncio.sleep(0)  # the big stream starts first
    await asyncio.wait_for(pump(chunks(10), small, lambda events: None, pacer), HANG)
    assert big.state.events <= 20, "the slices went round, not to the pump that had the last"
    await asyncio.wait_for(big_task, HANG)
    assert big.state.events == 100
