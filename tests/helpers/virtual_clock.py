"""An event loop whose clock jumps: when nothing is ready, it waits a moment of real
time (so a server on another thread can answer), then moves its clock straight
to the next timer. A 10 s timeout then fires after about 20 ms of real time, at
exactly 10 s by the loop's clock, and a timeout ten times too long shows as
100 s without anyone waiting for it."""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

Result = TypeVar("Result")

REAL_WAIT_S = 0.02  # how long real sockets get to become ready before the clock jumps
GIVE_UP_S = 24 * 3600.0  # by the loop's clock: a test still waiting then is hung


class VirtualClock:
    def __init__(self) -> None:
        self.skipped = 0.0

    def now(self) -> float:
        return time.monotonic() + self.skipped


class JumpingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    def __init__(self, clock: VirtualClock) -> None:
        super().__init__()
        self._clock = clock

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout <= 0:
            return super().select(0)
        real_wait = REAL_WAIT_S if timeout is None else min(timeout, REAL_WAIT_S)
        ready = super().select(real_wait)
        if not ready and timeout is not None:
            self._clock.skipped += timeout - real_wait
        return ready


def run_on_virtual_clock(main: Coroutine[Any, Any, Result]) -> Result:
    """Runs `main` on a jumping loop; a hang fails it (at GIVE_UP_S on that clock)."""
    clock = VirtualClock()
    loop = asyncio.SelectorEventLoop(JumpingSelector(clock))
    loop.time = clock.now  # type: ignore[method-assign]

    async def guarded() -> Result:
        async with asyncio.timeout(GIVE_UP_S):
            return await main

    try:
        return loop.run_until_complete(guarded())
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
