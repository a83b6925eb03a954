"""The pump shares the event loop with the display: it gives the loop back every
turn, and waits while a person's input is being answered."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator

import pytest

from toolstream_tui.core import StreamSession
from toolstream_tui.sources import pump
from toolstream_tui.sources.base import BodyChunk, ResponseHead, SourceItem
from toolstream_tui.sources.turns import Turns

pump_module = importlib.import_module("toolstream_tui.sources.pump")  # not the function
HANG = 60.0  # only catches a hang; every wait below ends on an event

CHUNK = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'


async def chunks(count: int) -> AsyncIterator[SourceItem]:
    yield ResponseHead(200, "text/event-stream", t=0.0)
    for number in range(count):
        yield BodyChunk(CHUNK, float(number))


@pytest.fixture
def every_read_a_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pump_module, "TURN_SECONDS", 0.0)


async def test_a_held_pump_stops_at_its_next_turn_until_released(every_read_a_turn: None) -> None:
    session = StreamSession("test", "openai-chat", live=False)
    turns = Turns()
    turns.hold(HANG)
    task = asyncio.create_task(pump(chunks(10), session, lambda events: None, turns))
    for _ in range(20):  # many loop turns: a free pump would have read everything
        await asyncio.sleep(0)
    assert session.state.events == 1, "one read, then it waits for the display"
    assert not task.done()
    turns.release()
    await asyncio.wait_for(task, HANG)
    assert session.state.events == 10 and session.ended


async def test_a_hold_nobody_releases_expires(every_read_a_turn: None) -> None:
    session = StreamSession("test", "openai-chat", live=False)
    turns = Turns()
    turns.hold(0.01)
    await asyncio.wait_for(pump(chunks(3), session, lambda events: None, turns), HANG)
    assert session.state.events == 3 and not turns.held


async def test_a_new_hold_replaces_the_old_expiry() -> None:
    turns = Turns()
    turns.hold(0.0)
    turns.hold(HANG)
    for _ in range(5):
        await asyncio.sleep(0)
    assert turns.held, "the first hold's expiry must not release the second"
    turns.release()
    assert not turns.held
