"""Building the app on the stub and waiting for it, for Pilot and snapshot tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import pytest

from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.sources.http import HttpRequest, HttpSource, trusting_no_certificate
from toolstream_tui.watching.options import WatchOptions

FROZEN_CLOCK_VALUE = 0.0


def frozen_clock() -> float:
    """Every elapsed time and arrival time reads 0: pictures do not depend on speed."""
    return FROZEN_CLOCK_VALUE


def make_app(server: StubServer, scenario: str, **options: Any) -> ToolstreamApp:
    body = load_scenario(scenario).request or b"{}"  # as the embedded stub sends it
    request = HttpRequest(url=server.scenario_url(scenario), method="POST", body=body)
    # plain HTTP, as the embedded stub's source: no certificates to load (26 ms an app)
    source = HttpSource(request, clock=frozen_clock, verify=trusting_no_certificate())
    source.label = f"stub:{scenario}"
    app = ToolstreamApp(source, WatchOptions(**{"clock": frozen_clock, **options}))
    app.animation_level = "none"
    return app


# Far above the worst case seen (about 40 s for the 1 MB huge-args stream with
# both cores busy with other work): a deadline only catches a hang, never a slow
# machine.
SETTLE_TIMEOUT = 300.0


async def wait_settled(app: ToolstreamApp, timeout: float = SETTLE_TIMEOUT) -> None:
    """Until everything the stream sent is on screen (fails loudly on timeout)."""
    await asyncio.wait_for(app.settled_event.wait(), timeout)


async def wait_received(app: ToolstreamApp, timeout: float = SETTLE_TIMEOUT) -> None:
    """Until the whole stream has been received (the display may still be paused)."""
    await asyncio.wait_for(app.workers.wait_for_complete(), timeout)


# Scenarios big enough to be slow end to end (a megabyte of arguments): their cases
# are marked slow, so `pytest -m "not slow"` leaves them out.
BIG_SCENARIOS = frozenset({"huge-args"})


def scenario_params(names: Iterable[str]) -> list[Any]:
    """`names` as pytest parameters, the big scenarios marked slow."""
    return [
        pytest.param(name, marks=pytest.mark.slow) if name in BIG_SCENARIOS else name
        for name in names
    ]


MAX_LAYOUT_PASSES = 5  # two are enough: one to mount the lanes, one to size them


async def redrawn_at_rest(pilot: Any) -> None:
    """Redrawn until every lane has the size it wants (known once it has been laid
    out: the display tick does this live; a test that moved the cursor does it here)."""
    screen = pilot.app.stream
    await pilot.pause()
    for _ in range(MAX_LAYOUT_PASSES):
        if screen.lanes.at_rest():
            return
        screen.draw(None)
        await pilot.pause()
    raise AssertionError(f"the lanes found no size in {MAX_LAYOUT_PASSES} redraws")


def settled_then(*keys: str) -> Callable[[Any], Awaitable[None]]:
    """A snapshot's `run_before`: wait until everything is on screen, press `keys`."""

    async def run_before(pilot: Any) -> None:
        await wait_settled(pilot.app)
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    return run_before
