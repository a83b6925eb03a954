"""Drives a source into a `StreamSession`, handing the resulting events on."""

from __future__ import annotations

import time
import types
from collections.abc import Callable, Coroutine, Generator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar

from ..core import StreamSession
from ..core.events import StreamEvent
from ..core.records import FrozenRecord
from ..core.session import MAX_BYTES, MAX_EVENT_BYTES
from ..core.state import STALL_SECONDS
from .base import (
    CLIENT_GONE,
    IDLE_TIMEOUT,
    LIMIT,
    TRANSPORT,
    TURN_SECONDS,
    WATCH_GAP,
    BodyChunk,
    RequestSent,
    ResponseHead,
    SourceItems,
    TransportError,
)

if TYPE_CHECKING:
    from .pacing import InputFirstPacer

EventSink = Callable[[list[StreamEvent]], None]
Result = TypeVar("Result")


class Limits(FrozenRecord):
    """Where a watch stops instead of growing without bound or waiting forever."""

    __slots__ = ("idle_timeout", "max_bytes", "max_event_bytes", "stall_threshold")

    def __init__(
        self,
        max_bytes: int = MAX_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
        idle_timeout: float | None = None,
        stall_threshold: float = STALL_SECONDS,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_event_bytes = max_event_bytes
        self.idle_timeout = idle_timeout
        self.stall_threshold = stall_threshold

    def session(self, source: str, dialect: str | None, **options: bool) -> StreamSession:
        return StreamSession(
            source,
            dialect,
            max_bytes=self.max_bytes,
            max_event_bytes=self.max_event_bytes,
            stall_threshold=self.stall_threshold,
            **options,
        )


# The anomaly a stop after the response began is named by.
STOP_ANOMALIES = {
    TRANSPORT: "connection-lost",
    IDLE_TIMEOUT: "idle-timeout",
    CLIENT_GONE: "client-gone",
    WATCH_GAP: "watch-gap",
}


async def pump(
    items: SourceItems,
    session: StreamSession,
    sink: EventSink,
    pacer: InputFirstPacer | None = None,
) -> None:
    """Feed every item to the session until the source ends, stops (a transport
    failure, an idle timeout, an unreadable recording), or the session stops
    taking bytes (a size limit). The source is closed in every case, so a
    connection or recording is released. `pacer`: when to give the loop back
    (asked before each item); without them, every TURN_SECONDS of reading."""
    last_t = 0.0
    opened = False
    turn_ends = time.perf_counter() + TURN_SECONDS
    async with aclosing(items):
        async for item in items:
            if pacer is not None and pacer.due():
                await pacer.take()
            if isinstance(item, RequestSent):
                sink(session.requested(item.body))
            elif isinstance(item, ResponseHead):
                opened = True
                sink(session.open(item.status, item.content_type, item.headers, item.t))
                if item.redirects:
                    sink(session.redirected(item.redirects, item.url))
            elif isinstance(item, BodyChunk):
                last_t = item.t
                sink(session.feed(item.data, item.t))
                if session.ended:  # a size limit cut the stream: stop reading
                    return
                if pacer is None and time.perf_counter() >= turn_ends:
                    # a fast source must not starve the event loop (real time: this
                    # paces work, it is never displayed)
                    await next_turn()
                    turn_ends = time.perf_counter() + TURN_SECONDS
            else:
                sink(stopped(session, item, opened))
                return
    sink(session.close(last_t))


@types.coroutine
def next_turn() -> Generator[None, None, None]:
    """Give the event loop a turn: a bare yield, which is what `asyncio.sleep(0)`
    does, here without importing asyncio (see `run_to_end`)."""
    yield


def run_to_end(coroutine: Coroutine[Any, Any, Result], *, event_loop: bool) -> Result:
    """Run `coroutine` in a new asyncio event loop, or without one when nothing it
    awaits needs one (a replay at speed 0 only reads files; its turns are bare
    yields, stepped over here). A short headless run then never imports asyncio,
    which costs more than the rest of it."""
    if event_loop:
        import asyncio

        return asyncio.run(coroutine)
    try:
        while True:
            if coroutine.send(None) is not None:  # a future: only an event loop waits
                coroutine.close()
                raise RuntimeError("the stream awaited something only an event loop can wait for")
    except StopIteration as end:
        return end.value


def stopped(session: StreamSession, stop: TransportError, opened: bool) -> list[StreamEvent]:
    """The stream stopped early: before the response (or when the recording itself
    is broken) that is an error; after it, what arrived stands."""
    if stop.kind == LIMIT and opened:  # a bundle's: its watch stopped at a size limit there
        return session.stopped_at_limit(stop.message, stop.t)
    if stop.kind not in STOP_ANOMALIES or not opened:
        return session.fail(stop.message, stop.t)
    return session.interrupt(stop.message, stop.t, STOP_ANOMALIES[stop.kind])


async def idle_limited(items: SourceItems, seconds: float) -> SourceItems:
    """The items, ending with an idle-timeout stop when none arrives for `seconds`
    once the response has begun (so a recording keeps why the stream stopped).
    Before the response head the transport's own timeout applies: setting up a
    client and connecting is not a silence of the stream."""
    import asyncio  # only here: a run without an event loop never gets here

    last_t = 0.0
    opened = False
    async with aclosing(items):
        while True:
            try:
                # The consumer's task, as httpx needs.
                async with asyncio.timeout(seconds if opened else None):
                    item = await anext(items)
            except StopAsyncIteration:
                return
            except TimeoutError:
                message = f"no data for {seconds:g} s (--idle-timeout); stopped waiting"
                yield TransportError(message, last_t, IDLE_TIMEOUT)
                return
            if isinstance(item, BodyChunk):
                last_t = item.t
            opened = opened or isinstance(item, ResponseHead)
            yield item
