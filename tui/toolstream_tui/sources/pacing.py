"""When the pumps may take the event loop while a screen answers a person (the
apps: a headless run never imports asyncio for it), and when the proxy's
forwarder may start another request while streams are running."""

from __future__ import annotations

import asyncio
import time

from .base import TURN_SECONDS

# A key or a click holds the pumps until its effect is on screen, at most this long
# (an input that changes nothing on screen releases them only by this clock).
HOLD_SECONDS = 0.25


class InputFirstPacer:
    """When a pump may take the event loop again: at once, unless a person's input
    is being answered (`hold`), then once that answer is drawn (`release`). The
    screen shares the loop with the pumps; a key must not queue behind them.

    The pumps also share one slice of the loop at a time (`slice_seconds`): a
    proxy runs a pump per request, and 64 of them each taking its own turn made
    one pass of the loop last as long as all their turns, while a key waited."""

    def __init__(self, slice_seconds: float = TURN_SECONDS) -> None:
        self.slice_seconds = slice_seconds
        self._free = asyncio.Event()
        self._free.set()
        self._expiry: asyncio.TimerHandle | None = None
        self._slice_ends = 0.0
        self._passing = False  # a new slice is asked for
        self._passed = True  # the loop has passed since: the next item starts it
        self._waiting = 0  # pumps inside `take`

    @property
    def held(self) -> bool:
        return not self._free.is_set()

    def hold(self, seconds: float = HOLD_SECONDS) -> None:
        self._free.clear()
        if self._expiry is not None:
            self._expiry.cancel()
        self._expiry = asyncio.get_running_loop().call_later(seconds, self.release)

    def release(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        self._free.set()

    def due(self) -> bool:
        """Whether a pump must `take` a turn before its next item: input is being
        answered, or the pumps have used up their slice (real time: this paces
        work, it is never displayed). The first item read after the loop's next
        pass starts a new slice."""
        if self.held:
            return True
        now = time.perf_counter()
        if self._passed:
            self._passed = False
            self._slice_ends = now + self.slice_seconds
            return False
        return now >= self._slice_ends

    async def take(self) -> None:
        """Give the loop turns until the pump may read again: after the loop's next
        pass, and never while the display answers input. The pump that used the
        slice up waits a pass more when others wait too, so that one of them
        begins the next slice (alone, it would only add a pass per slice)."""
        self._waiting += 1
        try:
            while self.due():
                if self.held:
                    await self._free.wait()
                elif not self._passing:
                    self._passing = True
                    asyncio.get_running_loop().call_soon(self._next_pass)
                    others_wait = self._waiting > 1
                    await asyncio.sleep(0)
                    if others_wait:
                        await asyncio.sleep(0)
                else:
                    await asyncio.sleep(0)
        finally:
            self._waiting -= 1

    def _next_pass(self) -> None:
        self._passing = False
        self._passed = True
