"""When the pumps may take the event loop while a screen answers a person. Only
the apps use it: a headless run never imports asyncio for it."""

from __future__ import annotations

import asyncio

# A key or a click holds the pumps until its effect is on screen, at most this long
# (an input that changes nothing on screen releases them only by this clock).
HOLD_SECONDS = 0.25


class Turns:
    """When a pump may take the event loop again: at once, unless a person's input
    is being answered (`hold`), then once that answer is drawn (`release`). The
    screen shares the loop with the pumps; a key must not queue behind them."""

    def __init__(self) -> None:
        self._free = asyncio.Event()
        self._free.set()
        self._expiry: asyncio.TimerHandle | None = None

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

    async def take(self) -> None:
        """Give the loop a turn, and wait while the display answers input."""
        await asyncio.sleep(0)
        await self._free.wait()
