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
    plain_reason,
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
            reason = plain_reason(exc)
            yield TransportError(f"cannot read recording {self.path}: {reason}", elapsed())
            return
        if request is not None:
            yield request
        yield ResponseHead(
            status=timing.status, content_type=timing.content_type, t=timing.response_t
        )
        # Recorded arrival times, not the replay's: timings and lanes show the
        # stream as it came from the provider, at any replay speed.
        reads = timing.reads or [
            {"end": min(end, len(body))}
            for end in range(UNTIMED_READ, len(body) + UNTIMED_READ, UNTIMED_READ)
        ]
        start = 0
        for read in reads:
            recorded_t = read.get("t")
            await self._wait_until(recorded_t, elapsed)
            t = elapsed() if recorded_t is None else float(recorded_t)
            if "error" in read:
                yield TransportError(str(read["error"]), t)
                return
            end = int(read["end"])
            yield BodyChunk(body[start:end], t)
            start = end
        if start < len(body):
            yield BodyChunk(body[start:], elapsed())

    async def _wait_until(self, recorded_t: float | None, elapsed: Stopwatch) -> None:
        if self.speed <= 0 or recorded_t is None:
            return
        delay = float(recorded_t) / self.speed - elapsed()
        if delay > 0:
            await asyncio.sleep(delay)
