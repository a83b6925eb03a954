"""A network source read ahead by a thread while the app loads (sources/early.py):
the items, their order and a failure reach the reader as without the thread; a
reader that stops stops the thread; the thread holds a bounded number of items."""

from __future__ import annotations

import asyncio
import threading
from contextlib import aclosing

import pytest

from toolstream_tui.sources.base import BodyChunk, ResponseHead, SourceItem, SourceItems
from toolstream_tui.sources.early import EarlySource

TIMEOUT_S = 10.0


class CountingSource:
    """`count` body reads after a head; says how far it was read and whether its
    generator was closed."""

    label = "counting"

    def __init__(self, count: int, fail_after: int | None = None) -> None:
        self.count = count
        self.fail_after = fail_after
        self.yielded = 0
        self.read_on = threading.Condition()  # notified at each read made
        self.readings = 0
        self.closed = threading.Event()
        self.began = threading.Event()

    async def items(self) -> SourceItems:
        self.readings += 1
        self.began.set()
        try:
            yield ResponseHead(200, "text/event-stream", t=0.0)
            for number in range(self.count):
                if number == self.fail_after:
                    raise OSError("the connection went away")
                with self.read_on:
                    self.yielded = number + 1
                    self.read_on.notify_all()
                yield BodyChunk(b"data: %d\n\n" % number, float(number))
        finally:
            self.closed.set()

    def made(self, count: int, timeout: float) -> bool:
        """Whether `count` reads were made within `timeout` seconds."""
        with self.read_on:
            return self.read_on.wait_for(lambda: self.yielded >= count, timeout)


async def read_all(source: EarlySource) -> list[SourceItem]:
    async with aclosing(source.items()) as items:
        return [item async for item in items]


async def test_the_source_is_read_before_anyone_asks_and_every_item_arrives_in_order() -> None:
    counting = CountingSource(50)
    early = EarlySource(counting)
    assert counting.began.wait(TIMEOUT_S)  # the thread reads before items() is called
    items = await asyncio.wait_for(read_all(early), TIMEOUT_S)
    assert isinstance(items[0], ResponseHead)
    assert [item.data for item in items[1:] if isinstance(item, BodyChunk)] == [
        b"data: %d\n\n" % number for number in range(50)
    ]
    assert [item.t for item in items[1:]] == [float(number) for number in range(50)]


async def test_a_failure_of_the_source_reaches_the_reader_after_what_came_before() -> None:
    early = EarlySource(CountingSource(10, fail_after=3))
    seen: list[SourceItem] = []
    with pytest.raises(OSError, match="the connection went away"):
        async with aclosing(early.items()) as items:
            async for item in items:
                seen.append(item)
    assert len(seen) == 4  # the head and three reads


async def test_the_thread_holds_at_most_its_buffer_until_the_reader_comes() -> None:
    counting = CountingSource(100)
    early = EarlySource(counting, buffered=5)
    # The head and four reads fill the buffer; the fifth read is made and waits.
    assert counting.made(5, TIMEOUT_S)
    assert not counting.made(6, 0.2)  # a thread that read on would have within this
    assert counting.yielded == 5
    items = await asyncio.wait_for(read_all(early), TIMEOUT_S)
    assert len(items) == 101


async def test_a_reader_that_stops_stops_the_thread_and_closes_the_source() -> None:
    counting = CountingSource(1_000_000)
    early = EarlySource(counting, buffered=10)
    async with aclosing(early.items()) as items:
        async for _item in items:
            break
    assert counting.closed.wait(TIMEOUT_S)
    assert counting.yielded < 1_000


async def test_a_second_reading_reads_the_source_anew() -> None:
    counting = CountingSource(3)
    early = EarlySource(counting)
    first = await asyncio.wait_for(read_all(early), TIMEOUT_S)
    second = await asyncio.wait_for(read_all(early), TIMEOUT_S)
    assert first == second
    assert counting.readings == 2
