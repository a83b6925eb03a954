"""Drives a source into a `StreamSession`, handing the resulting events on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from ..core import StreamSession
from ..core.events import StreamEvent
from .base import BodyChunk, RequestSent, ResponseHead, SourceItem, TransportError

EventSink = Callable[[list[StreamEvent]], None]


async def pump(items: AsyncIterator[SourceItem], session: StreamSession, sink: EventSink) -> None:
    last_t = 0.0
    opened = False
    async for item in items:
        if isinstance(item, RequestSent):
            continue
        if isinstance(item, ResponseHead):
            opened = True
            sink(session.open(item.status, item.content_type))
        elif isinstance(item, BodyChunk):
            last_t = item.t
            sink(session.feed(item.data, item.t))
            await asyncio.sleep(0)  # a fast source must not starve the event loop
        elif isinstance(item, TransportError):
            if opened:
                sink(session.interrupt(item.message, item.t))
            else:
                sink(session.fail(item.message, item.t))
            return
    sink(session.close(last_t))
