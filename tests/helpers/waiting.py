"""Waiting in a test for something another task or thread does: polled with a
deadline, so a regression fails with what was awaited instead of hanging."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

DEADLINE_S = 30.0  # far above any wait here on a loaded machine; only a hang reaches it
STEP_S = 0.01


async def until(pilot: Any, condition: Callable[[], bool], what: str) -> None:
    """Lets the app run (`pilot.pause`) until `condition()` holds; fails naming `what`
    once DEADLINE_S has passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"waited {DEADLINE_S:g} s for {what}")
        await pilot.pause(STEP_S)


def until_true(condition: Callable[[], bool], what: str) -> None:
    """Polls `condition()` (another process or thread makes it true) until it holds;
    fails naming `what` once DEADLINE_S has passed."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {DEADLINE_S:g} s for {what}")
        time.sleep(STEP_S)
