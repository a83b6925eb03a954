"""The raw event log (`l`): one numbered line per wire event, whatever the framing
(SSE, NDJSON lines, JSON-array elements, AWS event-stream frames), up to the
display cursor, and complete on its own once opened, however many batches the
decoding takes."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.apps import SETTLE_TIMEOUT, make_app, scenario_params, wait_settled
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.widgets import raw_log


async def log_caught_up(app: ToolstreamApp) -> list[str]:
    """The log's lines once it has decoded everything the tape holds."""
    log = app.stream.raw_log
    await asyncio.wait_for(log.caught_up.wait(), SETTLE_TIMEOUT)
    return log.plain_lines()


def numbers(lines: list[str]) -> list[int]:
    return [int(line.split()[0].removeprefix("#")) for line in lines]


@pytest.mark.parametrize(
    ("scenario", "first_line"),
    [
        # a frame: its event type, and its payload as text
        ("bedrock-text-tools", 'event: messageStart {"role":"assistant","p":"abcdefghijk"}'),
        # a line
        ("ollama-text-tools", '{"model":"stub-model","created_at":"2025-07-07T20:22:19.111731Z"'),
        # an element of the array
        ("gemini-array", '{"candidates": [{"content": {"parts": [{"text": "I\'ll check'),
    ],
)
async def test_every_framing_logs_each_event_numbered_up_to_the_cursor(
    app_stub: StubServer, scenario: str, first_line: str
) -> None:
    """Each wire event of a non-SSE stream is one numbered line, with no bytes of
    the framing in it; Home (cursor at event 0) shows none, a step shows the first."""
    app = make_app(app_stub, scenario)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_settled(app)
        events = app.session.state.events
        await pilot.press("l", "v")
        lines = await log_caught_up(app)
        assert events == len(load_scenario(scenario).events)
        assert numbers(lines) == list(range(1, events + 1))
        assert lines[0].split("s ", 1)[1].startswith(first_line)
        assert not any(ord(char) < 0x20 or 0x2400 <= ord(char) < 0x2440 for char in "".join(lines))
        await pilot.press("home")
        assert app.stream.raw_log.plain_lines() == []
        await pilot.press("n")
        assert numbers(app.stream.raw_log.plain_lines()) == [1]


async def test_an_ndjson_line_is_logged_whole(app_stub: StubServer) -> None:
    """With `v`, an NDJSON event's line is the line as sent, without its newline."""
    app = make_app(app_stub, "ollama-text-tools")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_settled(app)
        await pilot.press("l", "v")
        lines = await log_caught_up(app)
        sent = [event.decode().rstrip("\n") for event in load_scenario("ollama-text-tools").events]
        assert [line.split("s ", 1)[1] for line in lines] == sent


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
