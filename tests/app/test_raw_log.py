"""The raw event log (`l`): one numbered line per wire event, whatever the framing
(SSE, NDJSON lines, JSON-array elements, AWS event-stream frames), up to the
display cursor, and complete on its own once opened, however many batches the
decoding takes."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.apps import SETTLE_TIMEOUT, make_app, scenario_params, wait_settled
from toolstream_stubs import StubServer
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.widgets import raw_log


async def log_caught_up(app: ToolstreamApp) -> list[str]:
    """The log's lines once it has decoded everything the tape holds."""
    log = app.stream.raw_log
    await asyncio.wait_for(log.caught_up.wait(), SETTLE_TIMEOUT)
    return log.plain_lines()


def numbers(lines: list[str]) -> list[int]:
    return [int(line.split()[0].removeprefix("#")) for line in lines]


async def test_the_log_fills_to_the_cursor_without_more_redraws(
    app_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened on a finished stream (nothing on screen changes any more), the log
    decodes batch after batch until it holds every event, even when a batch
    decodes a single read."""
    monkeypatch.setattr(raw_log, "INDEX_BUDGET", 0.0)
    app = make_app(app_stub, "parallel")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_settled(app)
        events = app.session.state.events
        await pilot.press("l")
        lines = await log_caught_up(app)
        assert numbers(lines) == list(range(1, events + 1))
        assert len(app.stream.raw_log.plain_lines()) == events


@pytest.mark.parametrize("scenario", scenario_params(["huge-args"]))
async def test_a_big_stream_is_logged_whole_once_opened(
    app_stub: StubServer, scenario: str
) -> None:
    """The 23k events of a megabyte of arguments are all in the log once it has
    caught up, with no key pressed after `l`."""
    app = make_app(app_stub, scenario)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_settled(app)
        events = app.session.state.events
        await pilot.press("l")
        lines = await log_caught_up(app)
        assert len(lines) == events
        assert lines[-1].startswith(f"#{events} ")
