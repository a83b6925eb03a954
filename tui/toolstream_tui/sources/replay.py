"""Replays a recorded body at its recorded pace scaled by `speed` (0 = as fast
as possible), cut at the recorded read boundaries where they are known."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from .base import (
    BodyChunk,
    Clock,
    RequestSent,
    ResponseHead,
    SourceItem,
    Stopwatch,
    TransportError,
    monotonic,
)
from .recording import read_timing

UNTIMED_READ = 64 * 1024


class ReplaySource:
    def __init__(self, path: Path, speed: float = 1.0, clock: Clock = monotonic) -> None:
        self.path = path
        self.speed = speed
        self.label = str(path)
        self._clock = clock

    async def items(self) -> AsyncIterator[SourceItem]:
        elapsed = Stopwatch(self._clock)
        try:
            body = self.path.read_bytes()
            timing = read_timing(self.path)
            request = RequestSent(**timing.request) if timing.request is not None else None
        except (OSError, ValueError, TypeError) as exc:
            yield TransportError(f"cannot read recording {self.path}: {exc}", elapsed())
            return
        if request is not None:
            yield request
        yield ResponseHead(status=timing.status, content_type=timing.content_type)
        reads = timing.reads
        if not reads:
            reads = [
                {"end": min(end, len(body)), "t": 0.0}
                for end in range(UNTIMED_READ, len(body) + UNTIMED_READ, UNTIMED_READ)
            ]
        start = 0
        for read in reads:
            await self._wait_until(float(read.get("t", 0.0)), elapsed)
            if "error" in read:
                yield TransportError(str(read["error"]), elapsed())
                return
            end = int(read["end"])
            yield BodyChunk(body[start:end], elapsed())
            start = end
        if start < len(body):
            yield BodyChunk(body[start:], elapsed())

    async def _wait_until(self, recorded_t: float, elapsed: Stopwatch) -> None:
        if self.speed <= 0:
            return
        delay = recorded_t / self.speed - elapsed()
        if delay > 0:
            await asyncio.sleep(delay)
