"""Every limit at its edge: a size limit of N lets exactly N bytes through and
stops at N + 1; a timeout of S seconds cuts after S seconds, not 10 S, measured
by a clock that jumps (tests/helpers/virtual_clock.py), so no test waits for a stall."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.helpers.cli import CliRunner
from tests.helpers.proxy import chunked_answer
from tests.helpers.virtual_clock import run_on_virtual_clock
from toolstream_stubs import load_scenario
from toolstream_stubs.eventstream import event_frame
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.core.timing import stream_timing
from toolstream_tui.proxy.config import ProxyConfig, parse_upstream
from toolstream_tui.proxy.forwarder import ForwardingAsgiApp
from toolstream_tui.proxy.upstream import transport_for
from toolstream_tui.sources.base import (
    BodyChunk,
    RequestSent,
    ResponseHead,
    SourceItem,
    TransportError,
)
from toolstream_tui.sources.http import HttpRequest, HttpSource
from toolstream_tui.sources.recording import source_items
from toolstream_tui.views.status import status_view

WEATHER = load_scenario("weather").rendered
EDGES = [-1, 0, 1]  # the limit one byte short of the size, equal to it, one byte over


def limit_reached(session: StreamSession) -> bool:
    return any(anomaly.kind == "limit-reached" for anomaly in session.state.anomalies)


def fed(session: StreamSession, body: bytes, piece: int) -> StreamSession:
    for start in range(0, len(body), piece):
        session.feed(body[start : start + piece], 0.0)
    session.close(0.0)
    return session


def opened(content_type: str, **limits: int) -> StreamSession:
    session = StreamSession("limits", **limits)  # type: ignore[arg-type]
    session.open(200, content_type, t=0.0)
    return session


# -- sizes --------------------------------------------------------------------------


@pytest.mark.parametrize("piece", [len(WEATHER), 7, 1])
@pytest.mark.parametrize("edge", EDGES)
def test_max_bytes_lets_exactly_n_bytes_through(edge: int, piece: int) -> None:
    limit = len(WEATHER) + edge
    session = fed(opened("text/event-stream", max_bytes=limit), WEATHER, piece)
    assert limit_reached(session) == (edge < 0)
    assert session.state.bytes_received == min(limit, len(WEATHER))


EVENT_HEAD = b'data: {"choices":[{"index":0,"delta":{"content":"'
EVENT_TAIL = b'"},"finish_reason":null}]}'
EVENT_TEXT = "x" * (200 - len(EVENT_HEAD) - len(EVENT_TAIL))
EVENT = EVENT_HEAD + EVENT_TEXT.encode() + EVENT_TAIL  # 200 bytes between its blank lines


@pytest.mark.parametrize("piece", [1 << 20, 1])
@pytest.mark.parametrize("edge", EDGES)
def test_max_event_bytes_lets_an_sse_event_of_exactly_n_bytes_through(
    edge: int, piece: int
) -> None:
    body = EVENT + b"\n\ndata: [DONE]\n\n"
    session = fed(opened("text/event-stream", max_event_bytes=len(EVENT) + edge), body, piece)
    assert limit_reached(session) == (edge < 0)
    assert (build_report(session.state)["text"] == EVENT_TEXT) == (edge >= 0)


@pytest.mark.parametrize("piece", [1 << 20, 1])
@pytest.mark.parametrize("edge", EDGES)
def test_max_event_bytes_lets_an_ndjson_line_of_exactly_n_bytes_through(
    edge: int, piece: int
) -> None:
    line = json.dumps({"message": {"role": "assistant", "content": "y" * 150}}).encode()
    body = line + b"\n" + json.dumps({"done": True}).encode() + b"\n"
    session = fed(opened("application/x-ndjson", max_event_bytes=len(line) + edge), body, piece)
    assert limit_reached(session) == (edge < 0)


@pytest.mark.parametrize("piece", [1 << 20, 1])
@pytest.mark.parametrize("edge", EDGES)
def test_max_event_bytes_lets_a_json_body_of_exactly_n_bytes_through(edge: int, piece: int) -> None:
    """A response past the limit is not read whole, and so not parsed, however it
    arrived: truncated. In one read it used to be parsed whole beside its
    limit-reached; in pieces it failed as JSON that does not parse."""
    body = load_scenario("json-completion").rendered
    session = fed(opened("application/json", max_event_bytes=len(body) + edge), body, piece)
    assert limit_reached(session) == (edge < 0)
    report = build_report(session.state)
    assert (report["status"], report["error"]) == (
        ("truncated", None) if edge < 0 else ("finished", None)
    )
    assert len(report["tool_calls"]) == (0 if edge < 0 else 2)


@pytest.mark.parametrize("piece", [1 << 20, 1])
@pytest.mark.parametrize("edge", EDGES)
def test_max_bytes_stops_a_json_body_as_truncated_not_as_json_that_fails(
    edge: int, piece: int
) -> None:
    body = load_scenario("json-completion").rendered
    session = fed(opened("application/json", max_bytes=len(body) + edge), body, piece)
    report = build_report(session.state)
    assert (report["status"], report["error"]) == (
        ("truncated", None) if edge < 0 else ("finished", None)
    )
    assert report["body"] == body.decode()[: len(body) + min(edge, 0)], "what arrived is kept"


@pytest.mark.parametrize("piece", [1 << 20, 1])
@pytest.mark.parametrize("edge", EDGES)
def test_max_event_bytes_lets_an_event_stream_frame_of_exactly_n_bytes_through(
    edge: int, piece: int
) -> None:
    delta = {"contentBlockDelta": {"delta": {"text": "w" * 100}, "contentBlockIndex": 0}}
    first = event_frame("contentBlockDelta", json.dumps(delta).encode())
    body = first + event_frame("messageStop", b'{"stopReason":"end_turn"}')
    content_type = "application/vnd.amazon.eventstream"
    session = fed(opened(content_type, max_event_bytes=len(first) + edge), body, piece)
    assert limit_reached(session) == (edge < 0)


@pytest.mark.parametrize("piece", [1 << 20, 1])
@pytest.mark.parametrize("edge", EDGES)
def test_max_event_bytes_lets_a_json_array_element_of_exactly_n_bytes_through(
    edge: int, piece: int
) -> None:
    element = json.dumps({"candidates": [{"content": {"parts": [{"text": "z" * 100}]}}]})
    body = ("[" + element + "," + json.dumps({"candidates": []}) + "]").encode()
    session = fed(opened("application/json", max_event_bytes=len(element) + edge), body, piece)
    assert limit_reached(session) == (edge < 0)


@pytest.mark.parametrize("edge", EDGES)
def test_the_max_bytes_option_lets_exactly_n_bytes_through(cli: CliRunner, edge: int) -> None:
    limit = len(WEATHER) + edge
    result = cli("--headless", "--scenario", "weather", "--speed", "0", "--max-bytes", str(limit))
    report = json.loads(result.stdout)
    kinds = [anomaly["kind"] for anomaly in report["anomalies"]]
    assert ("limit-reached" in kinds) == (edge < 0)
    assert report["bytes"] == min(limit, len(WEATHER))


# -- the proxy's request limits, on its ASGI app ------------------------------------

UPSTREAM = "http://upstream.test"


def ignore_tap(request_id: int, item: object) -> None:
    pass


async def proxied_status(
    config: ProxyConfig, headers: list[tuple[str, str]], body_parts: list[bytes]
) -> int:
    """The status the client gets for a POST to /v1/x with these headers and body
    (the body in `body_parts` messages)."""
    answer = httpx.MockTransport(lambda request: httpx.Response(200, content=b"ok"))
    app = ForwardingAsgiApp(config, answer, ignore_tap)
    messages = iter(
        [
            {"type": "http.request", "body": part, "more_body": number < len(body_parts) - 1}
            for number, part in enumerate(body_parts)
        ]
    )
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return next(messages, None) or await asyncio.Future()  # then: the client stays

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/x",
        "raw_path": b"/v1/x",
        "query_string": b"",
        "headers": [(name.encode(), value.encode()) for name, value in headers],
    }
    async with asyncio.timeout(30):
        await app(scope, receive, send)
    return statuses[0]


@pytest.mark.parametrize("edge", EDGES)
def test_max_request_bytes_lets_a_body_of_exactly_n_bytes_through(edge: int) -> None:
    config = ProxyConfig(UPSTREAM, max_request_bytes=1000 + edge)
    status = asyncio.run(proxied_status(config, [], [b"x" * 600, b"x" * 400]))
    assert status == (413 if edge < 0 else 200)


def head_size(target: str, headers: list[tuple[str, str]]) -> int:
    """The request target and the header lines (`name: value` CRLF), as sent."""
    return len(target) + sum(len(f"{name}: {value}\r\n") for name, value in headers)


@pytest.mark.parametrize("edge", EDGES)
def test_the_header_limit_lets_a_head_of_exactly_n_bytes_through(edge: int) -> None:
    headers = [("content-type", "application/json"), ("x-pad", "p" * 500)]
    config = ProxyConfig(UPSTREAM, max_header_bytes=head_size("/v1/x", headers) + edge)
    status = asyncio.run(proxied_status(config, headers, [b"{}"]))
    assert status == (431 if edge < 0 else 200)


# -- timeouts, on a clock that jumps ------------------------------------------------

IDLE_S = 5.0
LATE = 1.5  # a timeout that fires after more than this many times its seconds is wrong


class SilentAfterOneChunk:
    """A source whose response begins, sends one chunk and then nothing, ever."""

    label = "silent"

    async def items(self) -> AsyncIterator[SourceItem]:
        yield RequestSent("GET", "http://silent.test", {}, None)
        yield ResponseHead(200, "text/event-stream", t=0.0)
        yield BodyChunk(b"data: {}\n\n", 0.0)
        await asyncio.Future()


async def seconds_until_idle_stop(idle_timeout: float) -> tuple[float, TransportError]:
    loop = asyncio.get_running_loop()
    last_chunk_at = 0.0
    async for item in source_items(SilentAfterOneChunk(), None, None, idle_timeout, warn=print):
        if isinstance(item, BodyChunk):
            last_chunk_at = loop.time()
        if isinstance(item, TransportError):
            return loop.time() - last_chunk_at, item
    raise AssertionError("the source ended without an idle-timeout stop")


def test_the_idle_timeout_stops_after_its_seconds() -> None:
    waited, stop = run_on_virtual_clock(seconds_until_idle_stop(IDLE_S))
    assert IDLE_S <= waited < IDLE_S * LATE
    assert "--idle-timeout" in stop.message


class SilentUpstream:
    """An upstream on the test's own loop (so the clock never jumps while its bytes
    are on their way): reads a request's head, writes `answer`, then says nothing
    more until the test ends."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.over = asyncio.Event()
        self.url = ""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(self.answer)
        await writer.drain()
        await self.over.wait()
        writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        try:
            yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        finally:
            self.over.set()
            server.close()
            await asyncio.sleep(0)  # the handlers see `over` and close their connections


async def seconds_until_transport_error(timeout: float) -> tuple[float, str]:
    loop = asyncio.get_running_loop()
    async with SilentUpstream(b"").running() as url:
        source = HttpSource(HttpRequest(url, "POST", body=b"{}", timeout=timeout), clock=loop.time)
        started = loop.time()
        async for item in source.items():
            if isinstance(item, TransportError):
                return loop.time() - started, item.message
    raise AssertionError("the request ended without a transport error")


def test_the_request_timeout_fires_after_its_seconds() -> None:
    """`--timeout`: a server that reads the request and never answers."""
    waited, message = run_on_virtual_clock(seconds_until_transport_error(IDLE_S))
    assert IDLE_S <= waited < IDLE_S * LATE
    assert "timeout" in message


FIRST_EVENTS = WEATHER.split(b"\n\n")[:2]


async def proxy_seconds_until_cut() -> tuple[float, bytes]:
    """The proxy's ASGI app over its own upstream transport to an upstream that
    sends two events and falls silent: the seconds from the last byte to the cut."""
    loop = asyncio.get_running_loop()
    events = [event + b"\n\n" for event in FIRST_EVENTS]
    async with SilentUpstream(chunked_answer(*events)).running() as url:
        config = ProxyConfig(url, idle_timeout=IDLE_S)
        transport = transport_for(parse_upstream(url), config.max_header_bytes)
        app = ForwardingAsgiApp(config, transport, ignore_tap)
        received = bytearray()
        last_byte_at = loop.time()
        requests = iter([{"type": "http.request", "body": b"{}", "more_body": False}])

        async def receive() -> dict[str, Any]:
            return next(requests, None) or await asyncio.Future()

        async def send(message: dict[str, Any]) -> None:
            nonlocal last_byte_at
            if message.get("body"):
                received.extend(message["body"])
                last_byte_at = loop.time()

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/v1/chat/completions",
            "raw_path": b"/v1/chat/completions",
            "query_string": b"",
            "headers": [],
        }
        await app(scope, receive, send)
        await transport.aclose()
    return loop.time() - last_byte_at, bytes(received)


def test_the_proxys_idle_timeout_cuts_after_its_seconds() -> None:
    waited, received = run_on_virtual_clock(proxy_seconds_until_cut())
    assert IDLE_S <= waited < IDLE_S * LATE
    assert received == b"".join(event + b"\n\n" for event in FIRST_EVENTS)


# -- the stall threshold --------------------------------------------------------------


def test_a_silence_is_a_stall_only_past_the_threshold() -> None:
    """Reads 0.5 s apart (exactly the threshold) then 0.75 s apart."""
    session = StreamSession("stalls", stall_threshold=0.5)
    session.open(200, "text/event-stream", t=0.0)
    events = WEATHER.split(b"\n\n")[:4]
    for t, event in zip([0.5, 1.0, 1.75, 2.5], events, strict=True):
        session.feed(event + b"\n\n", t)
    session.close(2.5)
    stalls = stream_timing(session.state).stalls
    assert [(stall.start, stall.seconds) for stall in stalls] == [(1.0, 0.75), (1.75, 0.75)]


@pytest.mark.parametrize(("quiet", "stalled"), [(0.5, False), (0.75, True)])
def test_the_status_bar_says_no_data_only_past_the_threshold(quiet: float, stalled: bool) -> None:
    session = StreamSession("stalls", stall_threshold=0.5)
    session.open(200, "text/event-stream", t=0.0)
    session.feed(WEATHER[:40], 0.1)
    view = status_view(session.state, 0, paused=False, live_elapsed=1.0, quiet=quiet)
    assert (view.waiting is not None) == stalled
