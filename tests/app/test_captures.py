"""Captures in the app: a capture of several streams opens the proxy's request list
on every entry (Enter opens one, r shows its request with the secrets redacted);
a capture of one stream opens it as a recording does, the status bar saying
that its per-event times are not recorded. The calls are those a live run of
the same stream shows. Driven with Pilot."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from tests.app.test_proxy_app import utc  # noqa: F401  (a fixture: the list's times in UTC)
from tests.helpers.apps import SETTLE_TIMEOUT, frozen_clock, wait_received
from tests.sources.test_captures import DATA, SECRET, capture
from toolstream_stubs import StubServer
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.app.screens.request import RequestScreen
from toolstream_tui.app.screens.stream import StreamScreen
from toolstream_tui.commands.capture_list import capture_app, capture_log, fill, list_app
from toolstream_tui.core import StreamState
from toolstream_tui.sources import Limits
from toolstream_tui.sources.captures import NOT_TIMED, CaptureSource
from toolstream_tui.sources.http import HttpRequest, HttpSource
from toolstream_tui.watching.options import WatchOptions

SIZE = (170, 30)


def shown_calls(state: StreamState) -> list[tuple[Any, ...]]:
    return [
        (slot.name, slot.parsed_raw, slot.arguments if slot.parsed else None, slot.error)
        for slot in (state.calls[index] for index in sorted(state.calls))
    ] + [(state.status.value, state.finish_reason)]


async def live_state(stub: StubServer, url: str, body: bytes | None) -> StreamState:
    """What the app shows of a live run of the same request against the stub."""
    path = url.split("/", 3)[3]
    request = HttpRequest(url=f"{stub.base_url}/{path}", method="POST", body=body)
    app = ToolstreamApp(HttpSource(request), WatchOptions(clock=frozen_clock))
    async with app.run_test(size=SIZE):
        await wait_received(app)
        return app.session.state


@pytest.mark.parametrize(
    "name",
    [
        "playwright.har",
        "chromium-cdp.har",
        "mitmdump.flows",
        "mitmdump.har",
        "firefox.har",
        "chromium-devtools.har",
    ],
)
async def test_a_capture_of_several_streams_opens_the_request_list(
    name: str, stub: StubServer
) -> None:
    read = capture(name)
    # Each app runs alone: two apps' run_test at once share Textual's active app.
    lives = [await live_state(stub, entry.url, entry.request_body) for entry in read.streams]
    app = await capture_app(read, DATA / name, Limits())
    async with app.run_test(size=SIZE) as pilot:
        screen = app.requests
        screen.draw()
        await pilot.pause()
        assert screen.table.ids == sorted((e.number for e in read.entries), reverse=True)
        status = screen.status_text(screen.table.ids)
        assert f"{len(read.streams)} streams in {len(read.entries)} requests · " in status
        assert NOT_TIMED in status
        for entry in read.streams:
            row, _tone = screen.table.row(entry.number)
            assert row.lstrip().split()[1] == entry.method, "the method, then the URL"
            assert entry.url.partition("?")[0][-20:] in row and " 200 " in row, "its end shown"
        assert screen.selected == read.streams[0].number, "the first stream is selected"
        for position, (entry, live) in enumerate(zip(read.streams, lives, strict=True)):
            screen.selected = entry.number
            await pilot.press("enter")
            stream = app.screen
            assert isinstance(stream, StreamScreen)
            await asyncio.wait_for(stream.settled_event.wait(), SETTLE_TIMEOUT)
            assert shown_calls(stream.watched.state) == shown_calls(live), (position, entry.url)
            assert stream.status_bar.view.source == f"{entry.label(name)}"
            assert stream.status_bar.view.source.endswith(NOT_TIMED)
            await pilot.press("escape")
            assert app.screen is screen


async def test_a_body_firefox_cut_opens_to_the_cut_and_says_why() -> None:
    read = capture("firefox-cut.har")
    cut = read.streams[0]
    app = await capture_app(read, DATA / "firefox-cut.har", Limits())
    async with app.run_test(size=SIZE) as pilot:
        app.requests.draw()
        await pilot.pause()
        assert app.requests.selected == cut.number
        await pilot.press("enter")
        stream = app.screen
        assert isinstance(stream, StreamScreen)
        await asyncio.wait_for(stream.settled_event.wait(), SETTLE_TIMEOUT)
        state = stream.watched.state
        assert state.status.value == "error" and state.error == cut.unreadable
        assert state.error.startswith(f"the capture holds {len(cut.body)} of the body's ")
        assert [state.calls[i].name for i in sorted(state.calls)] == ["get_weather"] * 2
        assert SECRET not in app.export_screenshot()


async def test_r_shows_the_request_with_its_secrets_redacted() -> None:
    read = capture("playwright.har")
    app = await capture_app(read, DATA / "playwright.har", Limits())
    async with app.run_test(size=SIZE) as pilot:
        app.requests.draw()
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        shown = app.screen
        assert isinstance(shown, RequestScreen)
        text = str(shown.query_one("#request-text", Static).content)
        assert text.startswith("POST http://127.0.0.1:")
        assert "Authorization: [REDACTED]" in text
        assert '  "stream": true' in text, "the body, pretty-printed"
        assert SECRET not in text and SECRET not in app.export_screenshot()
        await pilot.press("escape")
        assert app.screen is app.requests


async def test_a_capture_of_one_stream_opens_as_a_recording(stub: StubServer) -> None:
    read = capture("playwright-one.har")
    entry = read.streams[0]
    source = CaptureSource(entry, read.name, speed=0)
    live = await live_state(stub, entry.url, entry.request_body)
    app = ToolstreamApp(source, WatchOptions(clock=frozen_clock))
    async with app.run_test(size=SIZE):
        await wait_received(app)
        assert shown_calls(app.session.state) == shown_calls(live)
        picture = app.export_screenshot()
        assert SECRET not in picture
    assert app.stream.status_bar.view.source.endswith(NOT_TIMED), "the status bar says it"


def test_the_app_is_the_one_the_command_line_opens(tmp_path: Path) -> None:
    """`--replay` on a capture of one stream builds the capture's source, with its
    notes for the app; on several, the list."""
    from toolstream_tui.commands.capturing import CaptureList
    from toolstream_tui.commands.watch import build_parser, build_source

    args = build_parser().parse_args(["--replay", str(DATA / "playwright-one.har")])
    args.notice = None
    one = build_source(args)
    assert isinstance(one, CaptureSource) and args.notice.endswith("in a HAR file")
    args = build_parser().parse_args(["--replay", str(DATA / "playwright.har")])
    assert isinstance(build_source(args), CaptureList)


def known_list() -> tuple[Any, Any]:
    read = capture("playwright.har")
    app = list_app(read, DATA / "playwright.har", capture_log(Limits(), None, tapes=True))
    app.animation_level = "none"

    async def filled(pilot: Pilot[Any]) -> None:
        await fill(pilot.app, read)
        pilot.app.requests.draw()
        await pilot.pause()

    return app, filled


@pytest.mark.usefixtures("utc")
def test_the_capture_list(snap_compare: Any) -> None:
    """playwright.har: the page (GET /scenarios) and four model streams, newest
    first, each with its time, method and URL, model, dialect, status, state,
    calls, anomalies, duration and bytes (the truncated stream in red); the first
    stream (POST …/demo/…) selected; the status line names the file, says 4 of
    its 5 entries stream and that per-event times are not recorded."""
    app, filled = known_list()
    assert snap_compare(app, terminal_size=(150, 12), run_before=filled)


@pytest.mark.usefixtures("utc")
def test_a_captured_request_shown_with_r(snap_compare: Any) -> None:
    """The selected entry's request over the list: POST and its URL, then the
    headers Chromium sent, Authorization as [REDACTED] (the JSON body follows,
    below the fold)."""
    app, filled = known_list()

    async def shown(pilot: Pilot[Any]) -> None:
        await filled(pilot)
        await pilot.press("r")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(110, 24), run_before=shown)
