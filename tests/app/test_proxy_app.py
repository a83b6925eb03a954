"""The proxy's request list: requests an agent sends appear live, newest first;
Enter opens one in the stream view, Escape comes back; the list filters by
anomalies and follows the newest. Driven with Pilot, against a real proxy and
the stub server on 127.0.0.1, and as pictures of a list made of known requests."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.cells import cell_len
from textual.pilot import Pilot

from tests.helpers.apps import SETTLE_TIMEOUT
from tests.helpers.proxy import QUERY_KEY, SECRET_VALUES, SECRETS
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.app.apps.proxy import RequestListApp, RequestListScreen, line_of
from toolstream_tui.app.screens.stream import StreamScreen
from toolstream_tui.core import StreamSession
from toolstream_tui.proxy.config import ProxyConfig
from toolstream_tui.proxy.requests import RequestList, RequestRecord
from toolstream_tui.proxy.server import ProxyServer
from toolstream_tui.views.requests import REQUEST_COLUMNS, column_widths, request_row
from toolstream_tui.watching.options import WatchOptions

SIZE = (170, 30)


async def until(condition: Callable[[], bool], pilot: Pilot[Any]) -> None:
    """Wait for `condition` (the deadline only catches a hang; see conftest)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await pilot.pause(0.02)


@contextlib.asynccontextmanager
async def proxy_app(
    upstream: str, log: RequestList, options: WatchOptions | None = None
) -> AsyncIterator[tuple[RequestListApp, str]]:
    """The request list over a real proxy to `upstream`: the app, and the proxy's URL."""
    config = ProxyConfig(upstream, port=0)
    server = ProxyServer(config, log.take, asyncio.get_running_loop()).start()
    try:
        yield RequestListApp(log, server.url, upstream, options=options), server.url
    finally:
        server.stop(force=True)
        await asyncio.to_thread(server.join, 30)
        await log.wait_idle()


async def post(url: str, body: bytes = b"{}") -> bytes:
    async with httpx.AsyncClient(timeout=60, trust_env=False) as client:
        response = await client.post(url, content=body)
        return response.content


async def test_requests_appear_live_and_open_in_the_stream_view(stub: StubServer) -> None:
    log = RequestList(tapes=True)
    async with proxy_app(stub.base_url, log) as (app, url), app.run_test(size=SIZE) as pilot:
        screen = app.requests
        assert screen.empty.display, "no requests yet: says where to point the agent"
        weather = load_scenario("weather")
        body = await post(url + "/scenarios/weather/v1/chat/completions")
        assert body == weather.rendered, "the client gets upstream's bytes"
        await post(url + "/scenarios/name-repeated/v1/chat/completions")
        await until(lambda: log.finished_count == 2, pilot)
        screen.draw()  # as the list's timer does four times a second
        await pilot.pause()
        assert screen.table.ids == [2, 1], "newest first"
        assert screen.selected == 2, "following the newest"
        assert screen.status_text(screen.table.ids).startswith("2 requests · 0 streaming")
        row, _tone = screen.table.row(1)
        assert "POST /scenarios/weather/v1/chat/completions" in row
        assert "openai-chat" in row and "200" in row and "finished" in row
        await pilot.press("a")
        assert screen.table.ids == [2], "only the request with anomalies"
        await pilot.press("a", "down")
        assert screen.selected == 1 and not screen.follow
        await pilot.press("f")
        assert screen.follow and screen.selected == 2, "following the newest again"
        await pilot.press("f", "down")
        assert screen.selected == 1 and not screen.follow
        await pilot.press("enter")
        stream = app.screen
        assert isinstance(stream, StreamScreen)
        await asyncio.wait_for(stream.settled_event.wait(), SETTLE_TIMEOUT)
        assert stream.lanes.lanes[0].view.state == "parsed"
        assert stream.status_bar.view.state == "finished"
        await pilot.press("l")
        await pilot.pause()
        assert any(line.startswith("#1") for line in stream.raw_log.plain_lines())
        await pilot.press("escape")
        assert app.screen is screen


async def test_a_listing_counts_no_anomalies_and_is_left_out_by_the_filter(
    stub: StubServer,
) -> None:
    log = RequestList()
    async with proxy_app(stub.base_url, log) as (app, url), app.run_test(size=SIZE) as pilot:
        screen = app.requests
        async with httpx.AsyncClient(timeout=60, trust_env=False) as client:
            assert (await client.get(url + "/scenarios")).status_code == 200
        await post(url + "/scenarios/name-repeated/v1/chat/completions")
        await until(lambda: log.finished_count == 2, pilot)
        screen.draw()
        await pilot.pause()
        assert "⚠ 1 with anomalies" in screen.status_text(screen.table.ids)
        row, tone = screen.table.row(1)
        assert "GET /scenarios · not a model call" in row and tone == "passed"
        await pilot.press("a")
        assert screen.table.ids == [2], "only the model call with anomalies"


async def test_a_request_still_streaming_is_shown_live(stub: StubServer) -> None:
    """Opened mid-stream, a request's view grows as its response arrives."""
    gate = asyncio.Event()
    loop = asyncio.get_running_loop()

    def before_event(index: int) -> None:
        if index == 4:
            asyncio.run_coroutine_threadsafe(gate.wait(), loop).result(60)

    with StubServer("weather", speed=0, before_event=before_event) as held:
        log = RequestList(tapes=True)
        try:
            async with (
                proxy_app(held.base_url, log) as (app, url),
                app.run_test(size=SIZE) as pilot,
            ):
                sent = asyncio.ensure_future(post(url + "/v1/chat/completions"))
                await until(lambda: bool(log.records), pilot)
                record = log.records[1]
                await until(lambda: record.session.state.events >= 4, pilot)
                app.requests.draw()  # as the list's timer does four times a second
                await pilot.pause()
                assert "streaming" in app.requests.table.row(1)[0]
                assert app.requests.status_text([1]).startswith("1 request · 1 streaming")
                await pilot.press("enter")
                stream = app.screen
                assert isinstance(stream, StreamScreen)
                await pilot.pause()
                assert stream.lanes.lanes[0].view.state == "streaming"
                gate.set()
                await sent
                await asyncio.wait_for(stream.settled_event.wait(), SETTLE_TIMEOUT)
                assert stream.lanes.lanes[0].view.state == "parsed"
        finally:
            gate.set()


async def test_a_request_in_view_dropped_past_keep_still_shows_its_raw_log(
    stub: StubServer,
) -> None:
    """--keep forgets the oldest finished request while the user is looking at it:
    the view keeps what it shows, down to the raw events behind it."""
    log = RequestList(tapes=True, keep=1)
    async with proxy_app(stub.base_url, log) as (app, url), app.run_test(size=SIZE) as pilot:
        await post(url + "/v1/chat/completions")
        await until(lambda: log.finished_count == 1, pilot)
        app.requests.draw()
        await pilot.press("enter")
        stream = app.screen
        assert isinstance(stream, StreamScreen)
        await asyncio.wait_for(stream.settled_event.wait(), SETTLE_TIMEOUT)
        for _ in range(2):
            await post(url + "/v1/chat/completions")
        await until(lambda: log.finished_count == 3 and 1 not in log.records, pilot)
        await pilot.press("l")
        await pilot.pause()
        assert any(line.startswith("#1") for line in stream.raw_log.plain_lines())
        tape = stream.watched.tape
        assert not tape.closed
        await pilot.press("escape")
        assert app.screen is app.requests
        assert tape.closed, "left and forgotten: its file is closed"


async def test_no_secret_reaches_the_screen_the_raw_log_or_a_bundle(
    stub: StubServer, tmp_path: Path
) -> None:
    """The agent's keys, one of them echoed back by upstream, seen through the app."""
    log = RequestList(tapes=True)
    options = WatchOptions(limits=log.limits, clock=time.monotonic, output_dir=tmp_path)
    path = f"/scenarios/http-401-echo/v1/chat/completions?key={QUERY_KEY}"
    async with (
        proxy_app(stub.base_url, log, options) as (app, url),
        app.run_test(size=SIZE) as pilot,
        httpx.AsyncClient(timeout=60, trust_env=False) as http,
    ):
        answer = await http.post(url + path, headers=SECRETS, content=b"{}")
        assert SECRET_VALUES[0] in answer.text, "upstream echoed the key to the agent"
        await until(lambda: log.finished_count == 1, pilot)
        app.requests.draw()
        await pilot.pause()
        seen = [app.requests.table.row(1)[0], app.export_screenshot()]
        await pilot.press("enter")
        stream = app.screen
        assert isinstance(stream, StreamScreen)
        await asyncio.wait_for(stream.settled_event.wait(), SETTLE_TIMEOUT)
        await pilot.press("l")
        await pilot.pause()
        seen += [*stream.raw_log.plain_lines(), app.export_screenshot()]
        await pilot.press("b")
        await pilot.pause()
    bundled = [file for file in tmp_path.rglob("*") if file.is_file()]
    assert bundled, "the bundle was written"
    seen += [file.read_text(encoding="utf-8", errors="replace") for file in bundled]
    everything = "\n".join(seen)
    assert "REDACTED" in everything
    for secret in [*SECRET_VALUES, QUERY_KEY]:
        assert secret not in everything


def test_wide_characters_do_not_shift_the_columns_after_them() -> None:
    widths = column_widths(120)
    titles = tuple(title for title, _, _ in REQUEST_COLUMNS)
    header = line_of(titles, widths)
    row = line_of(tuple("POST /v1/模型" * 9 if t == "request" else t for t in titles), widths)
    assert cell_len(row) == cell_len(header)
    assert row.endswith(header[header.index("model") :])


def test_a_row_says_why_its_request_failed() -> None:
    cut = known_record(1, "truncated", "/v1/chat/completions", None)
    refused = known_record(2, "http-401", "/v1/chat/completions", "gpt-4o")
    fine = known_record(3, "weather", "/v1/chat/completions", "gpt-4o")
    assert request_row(cut, 0.0).cells[1] == "POST /v1/chat/completions · unterminated-event"
    assert "· HTTP 401: Incorrect API key provided" in request_row(refused, 0.0).cells[1]
    assert request_row(fine, 0.0).cells[1] == "POST /v1/chat/completions"


# -- pictures of a list of known requests -----------------------------------------------

STARTED_AT = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC


def known_record(number: int, scenario: str, path: str, model: str | None) -> RequestRecord:
    loaded = load_scenario(scenario)
    session = StreamSession(f"https://api.example.com{path}", live=False)
    session.open(loaded.status, loaded.content_type, t=0.01)
    session.feed(loaded.rendered, 0.05 * number)
    session.close(0.05 * number)
    return RequestRecord(
        id=number,
        method="POST",
        path=path,
        started_at=STARTED_AT + number * 1.25,
        started=100.0 + number,
        session=session,
        model=model,
        forwarded_bytes=len(loaded.rendered),
        duration=0.05 * number,
        over=True,
    )


def known_app() -> RequestListApp:
    log = RequestList()
    requests = [
        ("weather", "/v1/chat/completions", "gpt-4o"),
        ("anthropic-parallel", "/v1/messages", "claude-sonnet-4"),
        ("name-repeated", "/v1/chat/completions", "gpt-4o-mini"),
        ("responses-interleaved", "/v1/responses", "gpt-4.1"),
        ("http-401", "/v1/chat/completions", "gpt-4o"),
        ("truncated", "/v1/chat/completions", None),
    ]
    for number, (scenario, path, model) in enumerate(requests, start=1):
        log.records[number] = known_record(number, scenario, path, model)
    app = RequestListApp(
        log,
        "http://127.0.0.1:8787",
        "https://api.openai.com",
        options=WatchOptions(clock=lambda: 110.0),
    )
    app.animation_level = "none"
    return app


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


async def drawn(pilot: Pilot[Any]) -> None:
    screen = pilot.app.screen
    assert isinstance(screen, RequestListScreen)
    screen.draw()
    await pilot.pause()


async def test_a_request_forgotten_between_two_draws_is_painted_as_drawn() -> None:
    """The list draws four times a second and paints in between; --keep may
    forget a request in between too."""
    app = known_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.requests.table
        newest = table.ids[0]
        app.request_list.records.pop(newest)  # as the log does past --keep
        # Asked before the loop runs again: a draw (every LIST_SECONDS) would show the
        # list without it, and under load one came first.
        assert "truncated" in table.row(newest)[0]
        table.refresh()
        await pilot.pause()  # and the paint in between does not fail either


LONG_PATHS = [  # as the stub serves them: every path starts /scenarios/…
    ("gemini-text-tools", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
    ("bedrock-text-tools", "/model/anthropic.claude-3/converse-stream"),
    ("cohere-text-tools", "/v2/chat"),
    ("ollama-text-tools", "/api/chat"),
    ("truncated", "/v1/chat/completions"),
]


@pytest.mark.parametrize(
    "size, titles",
    [
        ((120, 40), ["time", "request", "model", "state", "calls", "anomalies", "duration"]),
        ((80, 24), ["request", "model", "state", "calls", "anomalies"]),
    ],
)
async def test_the_list_tells_requests_apart_at_80_and_120_columns(
    size: tuple[int, int], titles: list[str]
) -> None:
    """Paths that start alike are told apart by their ends, the reason after a
    path is drawn, and every column drawn is whole (the least useful left out)."""
    log = RequestList()
    for number, (scenario, path) in enumerate(LONG_PATHS, start=1):
        log.records[number] = known_record(number, scenario, f"/scenarios/{scenario}{path}", None)
    app = RequestListApp(log, "http://127.0.0.1:8787", "http://127.0.0.1:9", options=None)
    async with app.run_test(size=size) as pilot:
        await drawn(pilot)
        screen = app.requests
        header = str(screen.columns.content)
        assert header.split() == titles
        start, end = header.index("request"), header.index("model") - 1
        rows = {number: screen.table.row(number)[0] for number in log.records}
        requests = [row[start:end].rstrip() for row in rows.values()]
        assert len(set(requests)) == len(requests), requests
        assert all(cell_len(row) == cell_len(header) for row in rows.values())
        assert rows[1][start:].startswith("POST …"), "a long path shows its end"
        assert "· untermin" in rows[5][start:end], "the reason after the path"
        if size[0] == 120:
            assert "gemini-2.5-flash:streamGenerateContent" in rows[1]
            assert "/model/anthropic.claude-3/converse-stream" in rows[2]


def test_the_request_list(snap_compare: Any, utc: None) -> None:
    """Six requests through the proxy, newest first: the time each started, method
    and path, model, dialect, HTTP status, state (finished in green, the one with
    anomalies in bold yellow, error and truncated in red), calls, anomaly counts,
    duration and bytes; the newest selected; the status line says where the proxy
    listens and what it forwards to."""
    assert snap_compare(known_app(), terminal_size=(150, 16), run_before=drawn)


def test_a_request_opened_from_the_list(snap_compare: Any, utc: None) -> None:
    """Request 2 (Anthropic, two parallel calls) opened from the list: the stream
    view with its lanes as trees and Escape in the footer to go back."""

    async def opened(pilot: Pilot[Any]) -> None:
        await drawn(pilot)
        await pilot.press("down", "down", "down", "down", "enter")
        screen = pilot.app.screen
        assert isinstance(screen, StreamScreen)
        await asyncio.wait_for(screen.settled_event.wait(), SETTLE_TIMEOUT)
        await pilot.pause()

    assert snap_compare(known_app(), terminal_size=(120, 30), run_before=opened)


async def test_a_key_holds_the_proxied_streams_until_its_effect_is_drawn(
    stub: StubServer,
) -> None:
    """The requests' pumps share the loop with the list: a key holds them (the
    agent's bytes are forwarded by another process meanwhile) until it is drawn."""
    log = RequestList()
    app = RequestListApp(log, "http://127.0.0.1:0", stub.base_url)
    async with app.run_test(size=SIZE) as pilot:
        assert log.pacer is app.pacer, "every request's pump takes its turns from the app"
        holds: list[float] = []
        hold = app.pacer.hold

        def hold_until_released(seconds: float = 0.0) -> None:
            holds.append(seconds)
            hold(3600.0)  # only the drawn effect may release it, not the clock

        app.pacer.hold = hold_until_released  # type: ignore[method-assign]
        await pilot.press("a")
        assert len(holds) == 1, "the key held the pumps"
        await pilot.pause()
        assert not app.pacer.held, "released once the filtered list was on screen"
