"""The proxy over real loopback HTTP: what the client receives is what upstream
sent, read by read; the core's copy is decoupled from it; secrets stay out of
every record; bad input ends each request clearly."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import uvicorn
from uvicorn.server import ServerState

from tests.helpers.proxy import (
    QUERY_KEY,
    SECRET_VALUES,
    SECRETS,
    WAIT_S,
    AsgiUpstream,
    CannedUpstream,
    RunningProxy,
    chunked_answer,
)
from tests.helpers.streaming import assert_close_timing, untimed
from toolstream_stubs import StubServer, load_scenario
from toolstream_stubs.faults import cut_offset
from toolstream_stubs.scenarios import scenario_names
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.proxy.config import WATCH_BUFFER_BYTES, ProxyConfig, is_loopback, parse_upstream
from toolstream_tui.proxy.forwarder import (
    TARGETS_KEPT,
    WATCHER_GONE,
    ForwardingAsgiApp,
    client_connection,
)
from toolstream_tui.proxy.http_rules import HOP_BY_HOP
from toolstream_tui.proxy.pipe import (
    BATCH_BYTES,
    BATCH_S,
    KINDS,
    ClientGone,
    Exchange,
    FrameReader,
    Note,
    Outlet,
    PipeFeed,
    ResponseEnd,
    WatchGap,
    frame,
)
from toolstream_tui.proxy.relay import (
    ClientLeft,
    CutWhenTheClientLeaves,
    Relay,
    UpstreamReads,
    client_gone,
    joined_headers,
)
from toolstream_tui.proxy.requests import NOT_JSON, Change, RequestList, RequestRecord, model_of
from toolstream_tui.proxy.server import ProxiedResponse, bind
from toolstream_tui.proxy.upstream import UpstreamBody, UpstreamConnection, UpstreamTransport
from toolstream_tui.sources import Limits, pump
from toolstream_tui.sources.base import (
    BodyChunk,
    RequestSent,
    ResponseHead,
    Stopwatch,
    TransportError,
)
from toolstream_tui.sources.replay import ReplaySource
from toolstream_tui.sources.secrets import REDACTED
from toolstream_tui.views.requests import REQUEST_COLUMNS, request_row

WEATHER = load_scenario("weather")
COLUMN_TITLES = [title for title, _width, _right in REQUEST_COLUMNS]


def client() -> httpx.Client:
    return httpx.Client(timeout=WAIT_S, trust_env=False)


def fetch(url: str, **options: Any) -> tuple[httpx.Response, bytes]:
    """A request and its body as it came off the wire (not decoded)."""
    with client() as http, http.stream(options.pop("method", "POST"), url, **options) as response:
        return response, b"".join(response.iter_raw())


def end_to_end_headers(response: httpx.Response) -> list[tuple[bytes, bytes]]:
    """The response's headers as they came, less hop-by-hop; names lowercased, as the
    proxy writes them (and as HTTP/2 does: header names are case-insensitive)."""
    return [
        (name.lower(), value)
        for name, value in response.headers.raw
        if name.lower().decode() not in HOP_BY_HOP
    ]


# -- what the client receives -----------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/scenarios/weather/v1/chat/completions",
        "/scenarios/weather/v1/chat/completions?fault=gzip",
        "/scenarios/json-completion/v1/chat/completions",
        "/scenarios/http-401/v1/chat/completions",
        "/scenarios/weather/v1/chat/completions?fault=status&code=429&retry_after=7",
    ],
)
def test_client_receives_upstreams_status_headers_and_bytes(
    proxy: RunningProxy, stub: StubServer, path: str
) -> None:
    direct, direct_body = fetch(stub.base_url + path, content=b"{}")
    proxied, proxied_body = fetch(proxy.url + path, content=b"{}")
    assert proxied.status_code == direct.status_code
    without_date = [(n, v) for n, v in end_to_end_headers(direct) if n != b"date"]
    assert [(n, v) for n, v in end_to_end_headers(proxied) if n != b"date"] == without_date
    assert proxied_body == direct_body
    [record] = proxy.finished(1)
    assert record.http_status == direct.status_code
    assert record.forwarded_bytes == len(direct_body)


# Every scenario but the 6 MB one, whose bytes are those of any other chat stream.
ROUND_TRIP = [name for name in scenario_names() if name != "huge-args"]


def scenario_path(name: str) -> str:
    return f"/scenarios/{name}{load_scenario(name).endpoint}"


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_every_scenario_reaches_the_client_byte_for_byte(
    proxy: RunningProxy, stub: StubServer, name: str
) -> None:
    """CRLF and lone CR line ends, comments, NDJSON, JSON arrays, event-stream
    frames, error bodies: what the client reads through the proxy is what it
    reads from upstream directly, and `forwarded_bytes` is what it got."""
    request = load_scenario(name).request or b"{}"
    direct, direct_body = fetch(stub.base_url + scenario_path(name), content=request)
    proxied, proxied_body = fetch(proxy.url + scenario_path(name), content=request)
    assert (proxied.status_code, proxied_body) == (direct.status_code, direct_body)
    [record] = proxy.finished(1)
    assert record.forwarded_bytes == len(proxied_body)


def cut_anywhere() -> list[str]:
    """The CRLF scenarios and one of each other content type (each cut into pieces
    of a few bytes, every scenario would take seconds)."""
    chosen: dict[str, str] = {}
    for name in ROUND_TRIP:
        scenario = load_scenario(name)
        key = name if scenario.line_ending == "\r\n" else scenario.content_type
        chosen.setdefault(key, name)
    return sorted(chosen.values())


CUT_ANYWHERE = cut_anywhere()


@pytest.fixture(scope="module")
def random_split_proxy(random_split_stub: StubServer) -> Iterator[RunningProxy]:
    with RunningProxy(random_split_stub.base_url) as running:
        yield running


def test_reads_cut_anywhere_reach_the_client_byte_for_byte(
    random_split_proxy: RunningProxy, random_split_stub: StubServer
) -> None:
    """The stub cuts each body into random writes (inside CRLF pairs, inside
    characters, inside frames), compressed or not: the proxy's batches of reads
    still add up to upstream's bytes."""
    crlf = [name for name in CUT_ANYWHERE if load_scenario(name).line_ending == "\r\n"]
    urls = [scenario_path(name) for name in CUT_ANYWHERE]
    urls += [scenario_path(name) + "?fault=gzip" for name in crlf]
    for url in urls:
        _, direct_body = fetch(random_split_stub.base_url + url, content=b"{}")
        _, proxied_body = fetch(random_split_proxy.url + url, content=b"{}")
        assert proxied_body == direct_body, url
    records = random_split_proxy.finished(len(urls))
    assert sum(record.forwarded_bytes for record in records) > 0


HOSTILE_PIECES = (
    b": a comment\r\n\r",
    b'\ndata: {"a":"\xff\xfe not UTF-8"}\r',
    b"\n\r\ndata: lone CR\rdata: \xe2\x82",
    b"\xac split euro\n\n\r\n\r\n",
    b"data: [DONE]\r\n\r\n",
)


def test_bytes_no_server_library_would_send_pass_untouched() -> None:
    """Invalid UTF-8, CRLF pairs and a character cut across chunks, a lone CR."""
    upstream = CannedUpstream([chunked_answer(*HOSTILE_PIECES, b"")])
    with RunningProxy(upstream.url) as proxy:
        _, body = fetch(proxy.url + "/v1/chat/completions", content=b"{}")
        [record] = proxy.finished(1)
    assert body == b"".join(HOSTILE_PIECES)
    assert record.forwarded_bytes == record.bytes == len(body)


def test_hop_by_hop_response_headers_stay_between_upstream_and_the_proxy() -> None:
    """Those RFC 9110 names, and those upstream's `Connection` lists, are for one
    connection only; the others reach the client as they came."""
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"Connection: keep-alive, X-Upstream-Hop\r\nKeep-Alive: timeout=5\r\n"
        b"X-Upstream-Hop: 1\r\nProxy-Authenticate: Basic\r\nX-Request-Id: req-7\r\n"
        b"content-length: 14\r\n\r\ndata: [DONE]\n\n"
    )
    upstream = CannedUpstream([head])
    with RunningProxy(upstream.url) as proxy:
        response, body = fetch(proxy.url + "/v1/chat/completions", content=b"{}")
        proxy.finished(1)
    names = {name.lower() for name in response.headers}
    assert not names & {"keep-alive", "x-upstream-hop", "proxy-authenticate"}
    assert response.headers["x-request-id"] == "req-7"
    assert body == b"data: [DONE]\n\n"


def test_a_compressed_body_is_forwarded_compressed_and_read_decoded(proxy: RunningProxy) -> None:
    response, body = fetch(proxy.url + "/scenarios/weather/v1/chat/completions?fault=gzip")
    assert response.headers["content-encoding"] == "gzip"
    assert body != WEATHER.rendered and httpx.Response(200, headers=response.headers, content=body)
    [gzipped] = proxy.finished(1)
    fetch(proxy.url + "/scenarios/weather/v1/chat/completions")
    plain = proxy.finished(2)[1]
    assert gzipped.bytes == len(WEATHER.rendered)
    assert untimed(gzipped.summary())["tool_calls"] == untimed(plain.summary())["tool_calls"]
    assert gzipped.state == plain.state == "finished"


def test_each_read_reaches_the_client_before_upstream_writes_the_next() -> None:
    """The stub writes event k only once the client has event k-1: a proxy that
    held reads back (buffering) would leave both waiting."""
    events = WEATHER.events
    ends = [sum(len(e) for e in events[: k + 1]) for k in range(len(events))]
    client_has = [threading.Event() for _ in events]
    starved: list[int] = []

    def write_when_client_has_the_previous(k: int) -> None:
        if k > 0 and not client_has[k - 1].wait(10):
            starved.append(k)

    with (
        StubServer("weather", speed=0, before_event=write_when_client_has_the_previous) as stub,
        RunningProxy(stub.base_url) as proxy,
        client() as http,
        http.stream("POST", proxy.url + "/v1/chat/completions", content=b"{}") as response,
    ):
        received = b""
        for chunk in response.iter_raw():
            received += chunk
            for k, end in enumerate(ends):
                if len(received) >= end:
                    client_has[k].set()
        proxy.finished(1)
    assert starved == []
    assert received == WEATHER.rendered


# -- the tee to the core never holds the client back ------------------------------


def test_a_listener_that_raises_changes_nothing_for_the_client(stub: StubServer) -> None:
    def broken(record: RequestRecord, change: Change) -> None:
        raise RuntimeError("a view crashed")

    with RunningProxy(stub.base_url, listeners=(broken,)) as proxy:
        bodies = [fetch(proxy.url + "/v1/chat/completions", content=b"{}")[1] for _ in range(2)]
        records = proxy.finished(2)
    assert bodies == [WEATHER.rendered] * 2
    assert [record.state for record in records] == ["finished", "finished"]
    assert len(proxy.warnings) == 1 and "a view crashed" in proxy.warnings[0]


def test_a_blocked_consumer_does_not_hold_back_the_client() -> None:
    """The log's loop is stuck in a listener from the request's first change on,
    while the stub only writes each event once the client has the one before (and
    the second once the loop is stuck: a fast proxy could deliver the whole stream
    before the request's first frame reached the log): the client still gets the
    whole stream, and the record catches up afterwards."""
    release, blocked = threading.Event(), threading.Event()
    events = WEATHER.events
    ends = [sum(len(e) for e in events[: k + 1]) for k in range(len(events))]
    client_has = [threading.Event() for _ in events]
    starved: list[int] = []

    def stuck(record: RequestRecord, change: Change) -> None:
        if change is Change.ADDED:
            blocked.set()
            release.wait(WAIT_S)

    def write_when_client_has_the_previous(k: int) -> None:
        if k > 0 and not client_has[k - 1].wait(10):
            starved.append(k)
        if k == 1 and not blocked.wait(10):
            starved.append(k)

    with (
        StubServer("weather", speed=0, before_event=write_when_client_has_the_previous) as stub,
        RunningProxy(stub.base_url, listeners=(stuck,)) as proxy,
    ):
        with client() as http, http.stream("POST", proxy.url + "/v1/chat/completions") as response:
            received = b""
            for chunk in response.iter_raw():
                received += chunk
                for k, end in enumerate(ends):
                    client_has[k].set() if len(received) >= end else None
        assert blocked.is_set() and not release.is_set()  # the whole stream came meanwhile
        release.set()
        [record] = proxy.finished(1)
    assert starved == [] and received == WEATHER.rendered
    assert record.state == "finished" and record.bytes == len(received)


def test_a_watcher_that_reads_nothing_never_holds_back_a_stream_bigger_than_the_pipe() -> None:
    """The log's loop (which reads the pipe from the forwarder) is stuck from the
    request's first change on, and the response is many times what a pipe holds:
    the forwarder keeps what the pipe cannot take, and the client gets every byte
    before the watcher reads one."""
    release, blocked, gave_up = threading.Event(), threading.Event(), threading.Event()
    event = b"data: " + b"x" * 4090 + b"\n\n"
    events = 1024  # 4 MiB

    async def big_stream(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        head = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        for _ in range(events):
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def stuck(record: RequestRecord, change: Change) -> None:
        if change is Change.ADDED:
            blocked.set()
            if not release.wait(WAIT_S):
                gave_up.set()  # a forwarder waiting on the pipe would end up here

    with (
        AsgiUpstream(big_stream) as upstream,
        RunningProxy(upstream.url, listeners=(stuck,)) as proxy,
    ):
        _, received = fetch(proxy.url + "/v1/chat/completions", content=b"{}")
        assert blocked.is_set() and not gave_up.is_set()  # the whole stream came meanwhile
        release.set()
        [record] = proxy.finished(1)
    assert received == event * events
    assert record.forwarded_bytes == record.bytes == len(received)


def test_a_core_that_fails_does_not_cut_the_client(
    proxy: RunningProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    def feed_fails(self: StreamSession, chunk: bytes, t: float) -> list[Any]:
        raise ValueError("the core broke")

    monkeypatch.setattr(StreamSession, "feed", feed_fails)
    _, body = fetch(proxy.url + "/v1/chat/completions")
    [record] = proxy.finished(1)
    assert body == WEATHER.rendered
    assert record.forwarded_bytes == len(body)
    assert any("the core broke" in note for note in record.notes)


# -- secrets ------------------------------------------------------------------------


def test_secrets_go_upstream_and_nowhere_else(stub: StubServer, tmp_path: Path) -> None:
    before = len(stub.requests)
    path = f"/scenarios/http-401-echo/v1/chat/completions?key={QUERY_KEY}"
    body = json.dumps({"model": "m", "note": "sk-proxy-xapi-1f2e3d4c"}).encode()
    with RunningProxy(stub.base_url, record_dir=tmp_path) as proxy:
        response, received = fetch(proxy.url + path, headers=SECRETS, content=body)
        [record] = proxy.finished(1)
    upstream = {k.lower(): v for k, v in stub.requests[before].headers.items()}
    assert {name: upstream[name] for name in SECRETS} == SECRETS
    assert QUERY_KEY in stub.requests[before].path
    assert response.status_code == 401 and b"sk-proxy-bearer-7a6b5c4d" in received  # echoed
    kept = json.dumps(record.summary()) + "".join(
        path.read_text(encoding="utf-8", errors="replace") for path in tmp_path.iterdir()
    )
    for secret in [*SECRET_VALUES, QUERY_KEY]:
        assert secret not in kept
    assert REDACTED in record.path and REDACTED in record.summary()["error"]


def test_each_request_is_redacted_of_its_own_key(stub: StubServer) -> None:
    """Requests with different keys one after another (A, B, then A again): the key
    the upstream echoes is redacted from each record, whichever came before."""
    keys = ["sk-proxy-first-0a1b2c3d4e", "sk-proxy-second-5f6a7b8c9d", "sk-proxy-first-0a1b2c3d4e"]
    path = "/scenarios/http-401-echo/v1/chat/completions"
    with RunningProxy(stub.base_url) as proxy:
        for key in keys:
            headers = {"authorization": f"Bearer {key}"}
            _, received = fetch(proxy.url + path, headers=headers, content=b"{}")
            assert key.encode() in received  # the client gets the echo untouched
        records = proxy.finished(3)
    for key, record in zip(keys, records, strict=True):
        assert key not in json.dumps(record.summary())
        assert REDACTED in record.summary()["error"]


def test_the_forwarder_stops_cleanly_once_the_watching_process_is_gone() -> None:
    """The watching process holds the forwarder's stdin: once that is closed (the
    process ended, however it ended), the forwarder stops by itself, with status 0
    and one line on stderr that says why."""
    listening = bind("127.0.0.1", 0)
    read_fd, write_fd = os.pipe()
    config = json.dumps({"upstream": f"http://127.0.0.1:{free_port()}", "port": 0})
    command = [sys.executable, "-m", "toolstream_tui.proxy.forwarder"]
    command += ["--listen-fd", str(listening.fileno()), "--pipe-fd", str(write_fd)]
    try:
        forwarder = subprocess.Popen(
            [*command, "--config", config],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(listening.fileno(), write_fd),
        )
    finally:
        os.close(write_fd)
        listening.close()
    assert forwarder.stdin is not None and forwarder.stderr is not None
    forwarder.stdin.close()
    code = forwarder.wait(WAIT_S)
    os.close(read_fd)
    assert code == 0
    assert forwarder.stderr.read().decode() == WATCHER_GONE.format(drain=5) + "\n"


# -- bad input ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_upstream_gets_the_agents_headers_and_no_others() -> None:
    """Sent off a raw socket, so no client library adds any: upstream sees the
    agent's headers, repeated ones and their order kept, with only its own Host
    and the body's length; no Accept, Accept-Encoding, User-Agent or Content-Type
    the agent did not send (an added Accept-Encoding would get it a body
    compressed that it never asked for)."""
    seen: list[list[tuple[bytes, bytes]]] = []

    async def answer(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        seen.append(list(scope["headers"]))
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    agents = [(b"x-trace", b"first"), (b"authorization", b"Bearer sk-h"), (b"x-trace", b"second")]
    with AsgiUpstream(answer) as upstream, RunningProxy(upstream.url) as proxy:
        port = int(proxy.url.rsplit(":", 1)[1])
        head = b"".join(b"%s: %s\r\n" % pair for pair in agents)
        request = b"POST /v1/x HTTP/1.1\r\nHost: agent\r\nContent-Length: 2\r\n%s\r\n{}" % head
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
            sock.sendall(request)
            assert sock.recv(4096).startswith(b"HTTP/1.1 204 ")
        proxy.finished(1)
    host = upstream.url.removeprefix("http://").encode()
    assert sorted(seen[0]) == sorted([(b"host", host), (b"content-length", b"2"), *agents])
    assert [pair for pair in seen[0] if pair in agents] == agents


def test_response_headers_reach_the_client_in_upstreams_order_names_lowercased() -> None:
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-ID: req_1\r\n"
        b"openai-Processing-MS: 12\r\nContent-Length: 2\r\n\r\n{}"
    )
    upstream = CannedUpstream([answer])
    with RunningProxy(upstream.url) as proxy:
        response, body = fetch(proxy.url + "/v1/chat/completions", content=b"{}")
        proxy.finished(1)
    upstream.sock.close()
    assert [(name, value) for name, value in response.headers.raw] == [
        (b"content-type", b"application/json"),
        (b"x-request-id", b"req_1"),
        (b"openai-processing-ms", b"12"),
        (b"content-length", b"2"),
    ]
    assert body == b"{}"


def test_every_byte_before_an_upstream_cut_reaches_the_client() -> None:
    """An upstream that closes mid-body with its last bytes in the same read: the
    client gets those bytes, then the same cut, on every try (a client library
    that drops what it holds once it sees the close loses them some of the time)."""
    events = WEATHER.events[:3]
    tries = 10
    # Each answer in one write, the connection closed after it, no last chunk.
    upstream = CannedUpstream([chunked_answer(*events)] * tries, close=True)
    received: list[bytes] = []
    with RunningProxy(upstream.url) as proxy:
        for _ in range(tries):
            data = b""
            with (
                pytest.raises(httpx.HTTPError),
                client() as http,
                http.stream("POST", proxy.url + "/v1/chat/completions", content=b"{}") as response,
            ):
                for chunk in response.iter_raw():
                    data += chunk
            received.append(data)
        records = proxy.finished(tries)
    upstream.sock.close()
    assert received == [b"".join(events)] * tries
    assert all(record.state == "truncated" for record in records)
    assert [record.forwarded_bytes for record in records] == [len(b"".join(events))] * tries


def test_an_upstream_behind_the_environments_proxy_is_reached_through_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HTTP_PROXY names a proxy (here one that answers itself): the forwarder sends
    the request there, for the upstream's host, as httpx does."""
    asked: list[tuple[str, str]] = []

    async def answer(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        host = dict(scope["headers"]).get(b"host", b"").decode()
        asked.append((host, scope["path"]))
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"via the proxy"})

    for name in ("NO_PROXY", "no_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    with AsgiUpstream(answer) as environments_proxy:
        monkeypatch.setenv("HTTP_PROXY", environments_proxy.url)
        with RunningProxy("http://upstream.invalid:8080") as proxy:
            response, body = fetch(proxy.url + "/v1/x", content=b"{}")
            proxy.finished(1)
    assert (response.status_code, body) == (200, b"via the proxy")
    # The absolute form of the target: what a client asks of a proxy.
    assert asked == [("upstream.invalid:8080", "http://upstream.invalid:8080/v1/x")]


def test_an_upstream_that_is_down_gets_the_client_a_502_and_the_row_says_why() -> None:
    with RunningProxy(f"http://127.0.0.1:{free_port()}") as proxy:
        response, body = fetch(proxy.url + "/v1/chat/completions", content=b"{}")
        [record] = proxy.finished(1)
    assert response.status_code == 502
    assert response.headers["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == "upstream_unreachable" and "connection refused" in error["message"]
    assert record.state == "error" and record.http_status is None
    assert "connection refused" in record.summary()["error"]
    assert any("502" in note for note in record.notes)
    request = request_row(record, now=0.0).cells[1]
    assert "connection refused" in request and "502" in request


def test_a_client_that_leaves_mid_stream_closes_the_upstream_request() -> None:
    upstream_saw_it_closed = threading.Event()

    async def one_event_then_wait(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        head = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": WEATHER.events[0], "more_body": True})
        if (await receive())["type"] == "http.disconnect":
            upstream_saw_it_closed.set()

    with AsgiUpstream(one_event_then_wait) as upstream, RunningProxy(upstream.url) as proxy:
        with client() as http, http.stream("POST", proxy.url + "/v1/chat/completions") as response:
            first = next(response.iter_raw())
        [record] = proxy.finished(1)
        assert upstream_saw_it_closed.wait(WAIT_S)
    assert first == WEATHER.events[0]
    assert record.state == "truncated"
    assert any("client disconnected" in note for note in record.notes)
    assert "client-gone" in record.anomalies and "connection-lost" not in record.anomalies


OLLAMA_LINES = [
    b'{"model":"m","created_at":"2025-07-07T20:00:00Z",'
    b'"message":{"role":"assistant","content":"Hel"},"done":false}\n',
    b'{"model":"m","created_at":"2025-07-07T20:00:01Z",'
    b'"message":{"role":"assistant","content":"lo"},"done":false}\n',
]


def test_a_client_that_leaves_with_a_key_sent_leaves_every_byte_seen(tmp_path: Path) -> None:
    """With a key in the request, the body is read for echoes of it, and what that
    holds back (an NDJSON line, all of an event-stream body) was dropped when the
    client left: the row said 0 events and 0 bytes of 300 forwarded. Its recording
    also replayed the hang-up as a lost connection."""
    upstream_saw_it_closed = threading.Event()

    async def two_lines_then_wait(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        head = [(b"content-type", b"application/x-ndjson")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        for line in OLLAMA_LINES:
            await send({"type": "http.response.body", "body": line, "more_body": True})
        if (await receive())["type"] == "http.disconnect":
            upstream_saw_it_closed.set()

    headers = {"Authorization": "Bearer sk-test-0123456789abcdef"}
    with (
        AsgiUpstream(two_lines_then_wait) as upstream,
        RunningProxy(upstream.url, record_dir=tmp_path) as proxy,
    ):
        with (
            client() as http,
            http.stream("POST", proxy.url + "/api/chat", headers=headers) as response,
        ):
            received = b""
            for chunk in response.iter_raw():
                received += chunk
                if received.count(b"\n") == len(OLLAMA_LINES):
                    break
        [record] = proxy.finished(1)
        assert upstream_saw_it_closed.wait(WAIT_S)
    summary = record.summary()
    assert summary["bytes"] == summary["forwarded_bytes"] == len(b"".join(OLLAMA_LINES))
    assert summary["text"] == "Hello" and summary["dialect"] == "ollama"
    assert "client-gone" in record.anomalies
    [recording] = [path for path in tmp_path.iterdir() if not path.name.endswith(".jsonl")]
    replayed = ReplaySource(recording, speed=0)
    session = StreamSession(replayed.label)
    asyncio.run(pump(replayed.items(), session, lambda events: None))
    assert [anomaly.kind for anomaly in session.state.anomalies] == ["client-gone"]


def test_an_upstream_reset_cuts_the_client_where_it_cut_the_proxy(proxy: RunningProxy) -> None:
    received = b""
    with (
        pytest.raises(httpx.HTTPError),
        client() as http,
        http.stream("POST", proxy.url + "/v1/chat/completions?fault=reset&at=3") as response,
    ):
        for chunk in response.iter_raw():
            received += chunk
    [record] = proxy.finished(1)
    assert received == WEATHER.rendered[: cut_offset(WEATHER, 3)]
    assert record.state == "truncated" and "connection-lost" in record.anomalies
    assert record.forwarded_bytes == record.bytes == len(received)


def test_a_request_body_that_is_not_json_is_forwarded_as_is(
    proxy: RunningProxy, stub: StubServer
) -> None:
    before = len(stub.requests)
    _, body = fetch(proxy.url + "/v1/chat/completions", content=b"\x00not {json")
    [record] = proxy.finished(1)
    assert stub.requests[before].body == b"\x00not {json"
    assert body == WEATHER.rendered
    assert record.notes == [NOT_JSON] and record.model is None
    assert record.state == "finished"


def test_a_request_body_over_the_limit_is_refused_and_not_forwarded(stub: StubServer) -> None:
    before = len(stub.requests)
    with RunningProxy(stub.base_url, max_request_bytes=1000) as proxy:
        response, body = fetch(proxy.url + "/v1/chat/completions", content=b"x" * 5000)
        [record] = proxy.finished(1)
    assert response.status_code == 413
    assert json.loads(body)["error"]["code"] == "request_too_large"
    assert len(stub.requests) == before
    assert record.state == "error" and "--max-request-bytes" in record.summary()["error"]


@pytest.mark.parametrize("size", [8 << 10, 1 << 20])
def test_headers_over_the_limit_are_refused(stub: StubServer, size: int) -> None:
    """Over the limit, whether the head arrives whole or in pieces, the proxy answers
    431; in pieces it closes while the client may still be sending, which the
    client can see as a reset."""
    before = len(stub.requests)
    with RunningProxy(stub.base_url, max_header_bytes=4096) as proxy:
        try:
            response, _ = fetch(proxy.url + "/v1/chat/completions", headers={"x-big": "y" * size})
            status = response.status_code
        except httpx.TransportError:
            status = None
    assert status == 431 if size < 64 << 10 else status in (431, None)
    assert len(stub.requests) == before


class WrittenTransport(asyncio.Transport):
    """A client connection's transport that keeps what is written to it."""

    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


@pytest.mark.parametrize("unfinished_bytes", [4095, 4096, 4097])
async def test_the_reads_of_a_head_not_yet_whole_are_bounded_at_the_limit(
    unfinished_bytes: int,
) -> None:
    """Read by read, as the connection takes them: a head not yet whole that has
    brought the limit's bytes may still end; one byte more is answered 431."""

    async def never_called(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("no request reaches the app")

    config = uvicorn.Config(
        never_called, http=client_connection(60.0, 4096), log_config=None, lifespan="off"
    )
    config.load()
    connection = config.http_protocol_class(  # type: ignore[call-arg]
        config=config, server_state=ServerState(), app_state={}
    )
    transport = WrittenTransport()
    connection.connection_made(transport)
    start = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-big: "
    unfinished = start + b"y" * (unfinished_bytes - len(start))
    for at in range(0, len(unfinished), 1000):
        connection.data_received(unfinished[at : at + 1000])
    connection.connection_lost(None)
    refused = transport.written.startswith(b"HTTP/1.1 431 ")
    assert refused == (unfinished_bytes > 4096)
    assert transport.written == b"" or refused


async def test_a_head_past_the_limit_is_answered_after_the_response_going_out() -> None:
    """A client that sends its next request's head while a response still streams
    to it gets that response whole; the 431 for a head past the limit follows it."""
    streaming, ended, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def streams_until_released(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        streaming.set()
        await release.wait()
        await send({"type": "http.response.body", "body": b"data: 2\n\n"})
        ended.set()

    config = uvicorn.Config(
        streams_until_released,
        http=client_connection(60.0, 4096),
        log_config=None,
        lifespan="off",
    )
    config.load()
    connection = config.http_protocol_class(  # type: ignore[call-arg]
        config=config, server_state=ServerState(), app_state={}
    )
    transport = WrittenTransport()
    connection.connection_made(transport)
    connection.data_received(b"GET /v1/stream HTTP/1.1\r\nHost: x\r\n\r\n")
    await streaming.wait()
    connection.data_received(b"GET /next HTTP/1.1\r\nx-big: " + b"y" * 5000)
    assert b" 431 " not in transport.written and not transport.closed
    release.set()
    await ended.wait()
    response, _, refusal = transport.written.partition(b"0\r\n\r\n")
    assert response.endswith(b"data: 2\n\n\r\n")
    assert refusal.startswith(b"HTTP/1.1 431 ") and transport.closed
    connection.connection_lost(None)


@pytest.mark.parametrize("unfinished_bytes", [4095, 4096, 4097])
def test_a_head_arriving_in_pieces_is_refused_once_past_the_limit(
    stub: StubServer, unfinished_bytes: int
) -> None:
    """What came of a head not yet whole is bounded read by read: up to the limit the
    head may still end (it is then measured whole); one byte past it, 431 at once."""
    start = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nx-big: "
    unfinished = start + b"y" * (unfinished_bytes - len(start))
    with RunningProxy(stub.base_url, max_header_bytes=4096) as proxy:
        host, port = proxy.server.config.host, proxy.server.port
        with socket.create_connection((host, port), timeout=WAIT_S) as sock:
            for at in range(0, len(unfinished), 1000):
                sock.sendall(unfinished[at : at + 1000])
            if unfinished_bytes > 4096:
                status_line = sock.makefile("rb").readline()
            else:
                sock.sendall(b"\r\n\r\n{}")
                status_line = sock.makefile("rb").readline()
                proxy.finished(1)
    assert status_line.split()[1] == (b"431" if unfinished_bytes > 4096 else b"200")


@pytest.mark.parametrize(
    "request_line",
    [b"GET http://example.invalid/v1/models HTTP/1.1", b"CONNECT example.invalid:443 HTTP/1.1"],
)
def test_a_target_naming_another_host_is_refused(
    proxy: RunningProxy, stub: StubServer, request_line: bytes
) -> None:
    before = len(stub.requests)
    host, port = proxy.server.config.host, proxy.server.port
    with socket.create_connection((host, port), timeout=WAIT_S) as sock:
        sock.sendall(request_line + b"\r\nHost: x\r\n\r\n")
        status_line = sock.makefile("rb").readline()
    [record] = proxy.finished(1)
    assert status_line.split()[1] == b"400"
    assert len(stub.requests) == before
    assert record.state == "error"


def test_an_idle_timeout_cuts_a_silent_upstream(stub: StubServer) -> None:
    with RunningProxy(stub.base_url, idle_timeout=0.2) as proxy:
        with pytest.raises(httpx.HTTPError):
            fetch(proxy.url + "/v1/chat/completions?fault=stall&at=2&seconds=30")
        [record] = proxy.finished(1)
    assert record.state == "truncated"
    assert "--idle-timeout" in " ".join(a.detail for a in record.session.state.anomalies)


def test_a_size_limit_stops_the_core_but_never_the_client(stub: StubServer) -> None:
    with RunningProxy(stub.base_url, limits=Limits(max_bytes=100)) as proxy:
        _, body = fetch(proxy.url + "/v1/chat/completions")
        [record] = proxy.finished(1)
    assert body == WEATHER.rendered
    assert record.bytes == 100 and record.forwarded_bytes == len(body)
    assert "limit-reached" in record.anomalies and record.duration is not None


# -- the log ------------------------------------------------------------------------


def test_keep_forgets_the_oldest_finished_requests_but_not_their_recordings(
    stub: StubServer, tmp_path: Path
) -> None:
    with RunningProxy(stub.base_url, keep=2, record_dir=tmp_path) as proxy:
        for _ in range(4):
            fetch(proxy.url + "/v1/chat/completions")
            proxy.finished(1)
        records = proxy.finished(4)
        kept = sorted(proxy.log.records)
        changes = list(proxy.changes)
    assert kept == [records[2].id, records[3].id]
    assert [i for i, change in changes if change is Change.DROPPED] == [
        records[0].id,
        records[1].id,
    ]
    assert all(record.recording is not None and record.recording.exists() for record in records)


async def test_a_second_run_never_overwrites_a_recording(tmp_path: Path) -> None:
    """Two runs into one directory, each with its request 1 in the same second."""
    recordings = []
    for body in (b"data: first\n\n", b"data: second\n\n"):
        log = RequestList(record_dir=tmp_path)
        tap = ProxiedResponse(
            Exchange("POST", "/v1/x", "http://h/v1/x", {}, b"{}", 1_767_225_600.5, 0.0)
        )
        log.take(tap)
        for item in (ResponseHead(200, "text/event-stream", t=0.1), BodyChunk(body, 0.2)):
            tap.put(item)
        tap.put(ResponseEnd(0.3, len(body)))
        await log.wait_idle()
        recordings.append(log.records[1].recording)
    first, second = recordings
    assert first is not None and second is not None and first != second
    assert first.read_bytes() == b"data: first\n\n"
    assert second.read_bytes() == b"data: second\n\n"


def test_a_record_reads_live_fields_as_the_response_streams() -> None:
    record_seen: dict[str, Any] = {}

    def first_update(record: RequestRecord, change: Change) -> None:
        if change is Change.UPDATED and not record_seen:
            record_seen.update(state=record.state, over=record.over, elapsed=record.elapsed())

    with (
        StubServer("weather", speed=1, delay_ms=5) as stub,
        RunningProxy(stub.base_url, listeners=(first_update,)) as proxy,
    ):
        fetch(proxy.url + "/v1/chat/completions", content=b'{"model": "gpt-x"}')
        [record] = proxy.finished(1)
    assert record_seen["state"] == "streaming" and record_seen["over"] is False
    assert record_seen["elapsed"] >= 0
    assert (record.method, record.path, record.model) == ("POST", "/v1/chat/completions", "gpt-x")
    assert (record.dialect, record.http_status, record.calls) == ("openai-chat", 200, 1)
    assert record.state == "finished" and record.over and record.duration is not None
    assert record.elapsed() == record.duration


@pytest.mark.parametrize(
    "body, expected",
    [
        (None, (None, True)),
        ('{"model": "gpt-x"}', ("gpt-x", True)),
        ('{"model": 5}', (None, True)),
        ("[1]", (None, True)),
        ("not json", (None, False)),
    ],
)
def test_model_of_a_request_body(body: str | None, expected: tuple[str | None, bool]) -> None:
    assert model_of(body) == expected


GEMINI = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
VERTEX = "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro"
ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-v1:0"


@pytest.mark.parametrize(
    "url, expected",
    [
        (GEMINI + "?alt=sse", "gemini-2.5-flash"),
        ("https://generativelanguage.googleapis.com" + GEMINI, "gemini-2.5-flash"),
        ("/v1beta/models/gemini-2.0-flash:generateContent", "gemini-2.0-flash"),
        (VERTEX + ":streamGenerateContent", "gemini-2.5-pro"),
        (VERTEX.replace("/v1/", "/v1beta1/") + ":generateContent", "gemini-2.5-pro"),
        ("/v1/publishers/google/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash"),
        ("/scenarios/x/model/anthropic.claude-3/converse-stream", "anthropic.claude-3"),
        ("/model/amazon.nova-pro-v1%3A0/converse", "amazon.nova-pro-v1:0"),
        ("/model/amazon.nova-pro-v1:0/invoke-with-response-stream", "amazon.nova-pro-v1:0"),
        ("/model/meta.llama3-70b/invoke", "meta.llama3-70b"),
        ("/model/" + quote(ARN, safe="") + "/converse-stream", ARN),
        # Not a model's call of these shapes: no model.
        ("/v1/models/gpt-4o", None),
        ("/v1beta/models/gemini-2.5-flash:countTokens", None),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent/more", None),
        ("/model/anthropic.claude-3/converse-stream-more", None),
        ("/model/a/b/converse", None),
        ("/v1/chat/completions", None),
    ],
)
def test_model_of_a_request_named_in_its_path(url: str, expected: str | None) -> None:
    """Gemini, Vertex AI and Bedrock name the model in the URL, not the body (a
    Bedrock id URL-encoded: an ARN's colons and slash, a version's colon)."""
    assert model_of("{}", url) == (expected, True)
    assert model_of(None, url) == (expected, True)


def test_the_bodys_model_comes_before_the_paths() -> None:
    assert model_of('{"model": "gemini-x"}', GEMINI) == ("gemini-x", True)
    assert model_of('{"model": ""}', GEMINI) == ("gemini-2.5-flash", True)
    assert model_of("not json", GEMINI) == ("gemini-2.5-flash", False)


def test_a_proxied_request_names_the_model_of_its_path(proxy: RunningProxy) -> None:
    """The row's model and the headless line's, for the providers that put it in the URL."""
    paths = [
        "/scenarios/gemini-text-tools" + GEMINI + "?alt=sse",
        "/scenarios/vertex-partial-args" + VERTEX + ":streamGenerateContent",
        "/scenarios/bedrock-text-tools/model/" + quote(ARN, safe="") + "/converse-stream",
        "/scenarios/weather/v1/chat/completions",
    ]
    for path in paths:
        fetch(proxy.url + path, content=b'{"messages": []}')
    records = sorted(proxy.finished(len(paths)), key=lambda record: record.id)
    models = [record.summary()["model"] for record in records]
    assert models == ["gemini-2.5-flash", "gemini-2.5-pro", ARN, None]
    rows = [dict(zip(COLUMN_TITLES, request_row(r, 0.0).cells, strict=True)) for r in records]
    assert [row["model"] for row in rows[:2]] == ["gemini-2.5-flash", "gemini-2.5-pro"]


# -- recordings ----------------------------------------------------------------------


async def replayed_report(path: Path) -> dict[str, Any]:
    session = StreamSession(str(path))
    await pump(ReplaySource(path, speed=0).items(), session, lambda events: None)
    return build_report(session.state)


@pytest.mark.parametrize(
    "path",
    [
        "/scenarios/demo/v1/chat/completions",
        "/scenarios/weather/v1/chat/completions?fault=gzip",
        "/scenarios/json-completion/v1/chat/completions",
        "/scenarios/anthropic-parallel/v1/messages",
        "/scenarios/weather/v1/chat/completions?fault=reset&at=4",
        "/scenarios/http-401/v1/chat/completions",
    ],
)
def test_a_recording_replays_to_the_same_report(
    stub: StubServer, tmp_path: Path, path: str
) -> None:
    with RunningProxy(stub.base_url, record_dir=tmp_path) as proxy:
        with contextlib.suppress(httpx.HTTPError):  # the reset
            fetch(proxy.url + path, content=b'{"model": "m"}')
        [record] = proxy.finished(1)
    assert record.recording is not None
    live = record.summary()
    replayed = asyncio.run(replayed_report(record.recording))
    assert {**untimed(replayed), "source": None} == {
        key: value for key, value in {**untimed(live), "source": None}.items() if key in replayed
    }
    assert_close_timing(replayed["timing"], live["timing"])


# -- the pipe from the forwarding process -------------------------------------------


async def test_frames_come_back_whole_however_the_pipe_cuts_them() -> None:
    items = [
        (1, Exchange("POST", "/v1/x", "http://h/v1/x", {"a": "b"}, b"{}", 1.5, 2.5)),
        (1, ResponseHead(200, "text/event-stream", headers={"x": "y"}, t=0.01)),
        (1, BodyChunk(b"data: \xe4\xb8\xad\n\n", 0.25)),
        (2, BodyChunk(b"", 0.0)),
        (1, Note("a note")),
        (2, TransportError("reset", 0.5)),
        (1, ResponseEnd(0.75, 12)),
    ]
    wire = b"".join(frame(request_id, item) for request_id, item in items)
    for step in (1, 2, 5, 17, len(wire)):
        received: list[tuple[int, Any]] = []
        reader = FrameReader(
            lambda request_id, item, kept=received: kept.append((request_id, item))
        )
        for start in range(0, len(wire), step):
            reader.data_received(wire[start : start + step])
        assert received == items, step


class Unknown:
    """An item of no kind the pipe knows: it goes as a pickle."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unknown) and other.text == self.text


async def test_every_kind_of_item_comes_back_with_every_field() -> None:
    items = [
        Exchange("GET", "/v1/m?a=1", "http://h/v1/m?a=1", {}, b"\x00", 1.0, 2.0, "rec/1.json"),
        ResponseHead(206, "text/plain", "Partial", "http://h/x", {"a": "b"}, ("http://h/r",), 0.5),
        RequestSent("POST", "http://h/x", {"k": "v"}, None),
        TransportError("idle", 3.0, "idle-timeout"),
        WatchGap(120, 0.25),
        ClientGone("gone", 0.5),
        Note("a note"),
        ResponseEnd(0.75, 12),
        Unknown("kept"),
    ]
    assert {type(item) for item in items} >= set(KINDS)
    wire = b"".join(frame(7, item) for item in items)
    received: list[tuple[int, Any]] = []
    FrameReader(lambda request_id, item: received.append((request_id, item))).data_received(wire)
    assert received == [(7, item) for item in items]
    assert [type(item) for _, item in received] == [type(item) for item in items]


class RecordedWrites:
    """A write transport that keeps each write, and says when one came."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.written = asyncio.get_running_loop().create_future()

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        if not self.written.done():
            self.written.set_result(None)

    def get_write_buffer_size(self) -> int:
        return 0  # what a paused pipe holds is the feed's own


async def test_the_tap_writes_the_frames_of_several_loop_turns_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop's clock stands still over the reads (on a loaded machine three turns
    of the loop can outlast the batch's time), then moves past the batch's time."""
    loop = asyncio.get_running_loop()
    now = loop.time()
    monkeypatch.setattr(loop, "time", lambda: now)
    feed = PipeFeed(WATCH_BUFFER_BYTES)
    recorded = RecordedWrites()
    feed.transport = recorded  # type: ignore[assignment]
    chunks = [BodyChunk(b"data: %d\n\n" % n, n / 10) for n in range(3)]
    for chunk in chunks:
        feed.put(7, chunk)
        await asyncio.sleep(0)  # a turn of the loop: each chunk as its own read
    assert recorded.writes == []
    monkeypatch.setattr(loop, "time", lambda: now + BATCH_S)
    await recorded.written
    assert recorded.writes == [b"".join(frame(7, chunk) for chunk in chunks)]


async def test_the_tap_writes_at_once_past_its_batch_size() -> None:
    feed = PipeFeed(WATCH_BUFFER_BYTES)
    recorded = RecordedWrites()
    feed.transport = recorded  # type: ignore[assignment]
    big = BodyChunk(b"x" * BATCH_BYTES, 0.0)
    feed.put(1, BodyChunk(b"small", 0.0))
    feed.put(1, big)
    assert recorded.writes == [frame(1, BodyChunk(b"small", 0.0)) + frame(1, big)]


async def test_the_tap_holds_its_frames_while_the_pipe_is_full() -> None:
    """Handing a paused transport more would grow its part-written buffer, which
    copies all it holds; the frames wait and go in one write once it has drained."""
    feed = PipeFeed(WATCH_BUFFER_BYTES)
    recorded = RecordedWrites()
    feed.transport = recorded  # type: ignore[assignment]
    feed.pause_writing()
    big = BodyChunk(b"x" * BATCH_BYTES, 0.0)
    feed.put(1, BodyChunk(b"small", 0.0))
    feed.put(2, big)
    assert recorded.writes == []
    feed.resume_writing()
    assert recorded.writes == [frame(1, BodyChunk(b"small", 0.0)) + frame(2, big)]
    feed.resume_writing()  # nothing held: nothing written
    assert len(recorded.writes) == 1


class PiecesBody(httpx.AsyncByteStream):
    """A response body that yields its pieces as fast as it is asked (as httpx does
    with the chunks of one socket read), then fails with `error` if given."""

    def __init__(self, pieces: list[bytes], error: Exception | None = None) -> None:
        self.pieces = pieces
        self.error = error
        self.pulled = 0

    async def __aiter__(self) -> Any:
        for piece in self.pieces:
            self.pulled += 1
            yield piece
        if self.error is not None:
            raise self.error


@pytest.mark.parametrize(
    "raw",
    [
        [],
        [(b"Content-Type", b"text/event-stream"), (b"X-A", b"1"), (b"x-a", b"2"), (b"X-B", b"")],
        [(b"set-cookie", b"a=1"), (b"Set-Cookie", b"b=2"), (b"set-cookie", b"c=3")],
        [(b"x-name", "caf\u00e9".encode()), (b"x-other", b"plain")],  # read as UTF-8
        [(b"x-name", b"caf\xe9"), (b"X-Name", b"again")],  # read as latin-1
    ],
)
def test_a_response_head_keeps_the_headers_as_dict_of_them_gives_them(
    raw: list[tuple[bytes, bytes]],
) -> None:
    headers = httpx.Headers(raw)
    assert joined_headers(headers) == dict(headers)
    assert list(joined_headers(headers)) == list(dict(headers))


def test_a_target_asked_for_again_is_the_same_url() -> None:
    app = ForwardingAsgiApp(
        ProxyConfig("http://upstream.test/base"), httpx.MockTransport(lambda _: None), print
    )
    for _ in range(2):
        assert app._target("/v1/x?a=%20b c") == httpx.URL("http://upstream.test/base/v1/x?a=%20b c")
        assert app._target("http://other.test/v1/x") is None
        assert app._target("*") is None
    for n in range(TARGETS_KEPT + 1):  # past what is kept, each is parsed again
        assert app._target(f"/v1/{n}") == httpx.URL(f"http://upstream.test/base/v1/{n}")
    assert app._target("/v1/0") == httpx.URL("http://upstream.test/base/v1/0")


async def test_the_client_leaving_cuts_only_what_waits_inside_the_block() -> None:
    leaving: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    upstream: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(leaving.set_result, None)
    with pytest.raises(ClientLeft), CutWhenTheClientLeaves(leaving):
        await upstream  # never answers: the client leaving ends the wait
    assert upstream.cancelled()
    after = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(after.set_result, "still running")
    assert await after == "still running"  # nothing cancelled once out of the block


async def test_a_client_that_left_after_the_block_cuts_nothing() -> None:
    leaving: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    answered: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    answered.set_result("answer")
    with CutWhenTheClientLeaves(leaving):
        answer = await answered
    leaving.set_result(None)  # its callback runs at the next await, outside the block
    later = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(later.set_result, "went on")
    assert (answer, await later) == ("answer", "went on")


async def test_a_cancel_from_elsewhere_stays_a_cancel_while_the_client_is_there() -> None:
    leaving: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def waits() -> None:
        with CutWhenTheClientLeaves(leaving):
            await asyncio.get_running_loop().create_future()

    task = asyncio.ensure_future(waits())
    await asyncio.sleep(0)
    task.cancel()  # as uvicorn does once the drain is over
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_client_leaving_cuts_nothing_once_the_response_is_complete() -> None:
    leaving: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    last_write: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    loop = asyncio.get_running_loop()
    loop.call_soon(leaving.set_result, None)
    loop.call_soon(loop.call_soon, last_write.set_result, None)
    with CutWhenTheClientLeaves(leaving, unless=lambda: True):
        await last_write  # the client leaves meanwhile: uvicorn says so once complete
    assert last_write.done() and not last_write.cancelled()


async def test_the_relay_forwards_what_one_read_brought_in_one_write() -> None:
    body = PiecesBody([b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"])
    clock = iter([12.5, 13.0]).__next__  # the first piece read at 12.5 s
    reads = UpstreamReads(httpx.Response(200, stream=body), clock)
    assert await reads.take() == (b"data: 1\n\ndata: 2\n\ndata: 3\n\n", 12.5)
    assert await reads.take() is None


async def test_the_relay_forwards_every_byte_before_the_upstream_failure() -> None:
    failure = httpx.RemoteProtocolError("peer closed connection")
    body = PiecesBody([b"data: 1\n\n", b"data: 2"], failure)
    reads = UpstreamReads(httpx.Response(200, stream=body))
    batch = await reads.take()
    assert batch is not None and batch[0] == b"data: 1\n\ndata: 2"
    with pytest.raises(httpx.RemoteProtocolError):
        await reads.take()


async def test_the_relay_reads_ahead_of_a_slow_client_only_so_far() -> None:
    body = PiecesBody([b"x" * 6] * 5)
    reads = UpstreamReads(httpx.Response(200, stream=body), limit=10)
    batch = await reads.take()
    assert batch is not None and batch[0] == b"x" * 12
    assert body.pulled == 2  # the reader waited at its limit for the batch to be taken
    rest = b""
    while (batch := await reads.take()) is not None:
        rest += batch[0]
    assert rest == b"x" * 18
    await reads.stop()


async def test_what_came_with_the_head_goes_on_in_the_same_turn_of_the_loop() -> None:
    """While 64 requests start at once, each turn of the loop is long: the first
    event, which arrives with the head, must not wait for another."""
    elapsed = Stopwatch()
    connection = UpstreamConnection((b"http", b"upstream", 80), 65536)
    connection.data_received(chunked_answer(b"data: 1\n\n", b""))  # and its end
    response = httpx.Response(200, stream=UpstreamBody(connection, UpstreamTransport(65536), None))
    assert connection.complete  # nothing left to wait for upstream
    relay_started = elapsed()
    turns: list[str] = []
    asyncio.get_running_loop().call_soon(turns.append, "the loop's next turn")
    sent: list[tuple[str, bytes, list[str]]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append((message["type"], message.get("body", b""), list(turns)))

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {}

    items: list[Any] = []
    tap = Outlet(1, lambda _, item: items.append(item))
    exchange = Exchange("POST", "/v1/x", "http://upstream/v1/x", {}, b"{}", 0.0, 0.0)
    leaving = asyncio.ensure_future(client_gone(receive))
    await Relay(response, send, tap, elapsed, None, exchange).run(leaving)
    leaving.cancel()
    assert sent[:2] == [
        ("http.response.start", b"", []),
        ("http.response.body", b"data: 1\n\n", []),
    ]
    chunks = [item for item in items if isinstance(item, BodyChunk)]
    assert [chunk.data for chunk in chunks] == [b"data: 1\n\n"]
    assert chunks[0].t < relay_started  # when it arrived, not when it went on


# -- arguments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("example.com", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    "upstream",
    [
        "ftp://example.com",
        "api.openai.com",
        "https://api.openai.com/v1?key=x",
        "http://",
        "https://user:hunter2@api.openai.com",  # would be neither sent nor hidden
    ],
)
def test_unusable_upstreams_are_refused(upstream: str) -> None:
    with pytest.raises(ValueError, match="--upstream"):
        parse_upstream(upstream)


async def test_requests_wait_their_turn_to_start_while_running_streams_go_on() -> None:
    """With the starting requests held (as when many arrive at once and have used
    up their slice of the loop), a running stream's next chunk still reaches its
    client; the held request starts once released."""
    second_event = asyncio.Event()
    started: list[str] = []

    class Events(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b"data: 1\n\n"
            await second_event.wait()
            yield b"data: 2\n\n"

    async def upstream(request: httpx.Request) -> httpx.Response:
        started.append(request.url.path)
        return httpx.Response(200, stream=Events())

    def ignore_tap(request_id: int, item: object) -> None:
        pass

    app = ForwardingAsgiApp(
        ProxyConfig("http://upstream.test"), httpx.MockTransport(upstream), ignore_tap
    )
    received: dict[str, bytes] = {"/a": b"", "/b": b""}
    arrived = asyncio.Event()

    def call(path: str) -> asyncio.Task[None]:
        requests = iter([{"type": "http.request", "body": b"{}", "more_body": False}])

        async def receive() -> dict[str, Any]:
            return next(requests, None) or await asyncio.Future()  # then: never leaves

        async def send(message: dict[str, Any]) -> None:
            received[path] += message.get("body", b"")
            arrived.set()

        scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode()}
        return asyncio.create_task(
            app({**scope, "query_string": b"", "headers": []}, receive, send)
        )

    async def until(condition: Any) -> None:
        async with asyncio.timeout(WAIT_S):
            while not condition():
                arrived.clear()
                await arrived.wait()

    tasks = [call("/a")]
    await until(lambda: received["/a"] == b"data: 1\n\n")
    app.setups.hold(WAIT_S)
    tasks.append(call("/b"))
    second_event.set()
    await until(lambda: received["/a"].endswith(b"data: 2\n\n"))
    assert started == ["/a"]
    app.setups.release()
    await until(lambda: received["/b"] == b"data: 1\n\ndata: 2\n\n")
    assert started == ["/a", "/b"]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def test_a_listing_is_passed_through_not_read_as_a_broken_stream(proxy: RunningProxy) -> None:
    """A GET of JSON (GET /v1/models, Ollama's /api/tags; here the stub's list of
    scenarios) is no model's call: its row says it was passed through, with no
    anomalies, and its JSON line says model_call false. A model call's and an HTTP
    error's rows are as they were."""
    listing, _ = fetch(proxy.url + "/scenarios", method="GET")
    missing, _ = fetch(proxy.url + "/no/such/path", method="GET")
    weather, _ = fetch(proxy.url + "/scenarios/weather/v1/chat/completions", content=b"{}")
    assert (listing.status_code, missing.status_code, weather.status_code) == (200, 404, 200)
    records = {record.path: record for record in proxy.finished(3)}
    cells = {
        path: dict(zip(COLUMN_TITLES, request_row(record, 0.0).cells, strict=True))
        for path, record in records.items()
    }

    passed = cells["/scenarios"]
    assert passed["state"] == "passed" and passed["request"].endswith("· not a model call")
    assert (passed["anomalies"], passed["calls"], passed["dialect"]) == ("", "", "—")
    assert records["/scenarios"].summary()["model_call"] is False
    assert records["/scenarios"].anomalies, "what the core made of the body is still there"

    assert (
        cells["/no/such/path"]["state"] == "error"
        and "HTTP 404" in cells["/no/such/path"]["request"]
    )
    model = cells["/scenarios/weather/v1/chat/completions"]
    assert model["state"] == "finished" and model["calls"] == "1"
    assert records["/scenarios/weather/v1/chat/completions"].summary()["model_call"] is True
