"""Drives a source into a `StreamSession`, handing the resulting events on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass

from ..core import StreamSession
from ..core.events import StreamEvent
from ..core.session import MAX_BYTES, MAX_EVENT_BYTES
from ..core.state import STALL_SECONDS
from .base import BodyChunk, RequestSent, ResponseHead, SourceItem

EventSink = Callable[[list[StreamEvent]], None]


@dataclass(frozen=True, slots=True)
class Limits:
    """Where a watch stops instead of growing without bound or waiting forever."""

    max_bytes: int = MAX_BYTES
    max_event_bytes: int = MAX_EVENT_BYTES
    idle_timeout: float | None = None
    stall_threshold: float = STALL_SECONDS

    def session(self, source: str, dialect: str | None, **options: bool) -> StreamSession:
        return StreamSession(
            source,
            dialect,
            max_bytes=self.max_bytes,
            max_event_bytes=self.max_event_bytes,
            stall_threshold=self.stall_threshold,
            **options,
        )


async def pump(
    items: AsyncIterator[SourceItem],
    session: StreamSession,
    sink: EventSink,
    idle_timeout: float | None = None,
) -> None:
    """Feed every item to the session until the source ends, fails, goes silent
    for `idle_timeout` seconds, or the session stops taking bytes (a size limit).
    The source is closed in every case, so a connection or recording is released."""
    last_t = 0.0
    opened = False
    async with aclosing(items):  # type: ignore[type-var]
        while True:
            try:
                async with asyncio.timeout(idle_timeout):  # same task: httpx needs that
                    item = await anext(items)
            except StopAsyncIteration:
                break
            except TimeoutError:
                message = f"no data for {idle_timeout:g} s (--idle-timeout); stopped waiting"
                sink(
                    session.interrupt(message, last_t) if opened else session.fail(message, last_t)
                )
                return
            if isinstance(item, RequestSent):
                sink(session.requested(item.body))
                continue
            if isinstance(item, ResponseHead):
                opened = True
                sink(session.open(item.status, item.content_type, item.headers, item.t))
                if item.redirects:
                    sink(session.redirected(item.redirects, item.url))
            elif isinstance(item, BodyChunk):
                last_t = item.t
                sink(session.feed(item.data, item.t))
                if session.ended:  # a size limit cut the stream: stop reading
                    return
                await asyncio.sleep(0)  # a fast source must not starve the event loop
            else:
                fail = session.interrupt if opened else session.fail
                sink(fail(item.message, item.t))
                return
    sink(session.close(last_t))
