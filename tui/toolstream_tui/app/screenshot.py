"""The app's screen drawn off-screen, for a bundle written by --headless."""

from __future__ import annotations

import asyncio

from ..sources import Source
from ..watching.options import WatchOptions
from .apps.watch import ToolstreamApp

SIZE = (120, 36)
SETTLE_SECONDS = 60.0


def render_screenshot(source: Source, size: tuple[int, int] = SIZE) -> str:
    """The screen as SVG once `source` (played at once) is all on screen."""
    return asyncio.run(_render(source, size))


async def _render(source: Source, size: tuple[int, int]) -> str:
    app = ToolstreamApp(source, WatchOptions(clock=lambda: 0.0))
    app.animation_level = "none"
    async with app.run_test(size=size) as pilot:
        await asyncio.wait_for(app.settled_event.wait(), SETTLE_SECONDS)
        await pilot.pause()
        return app.export_screenshot()
