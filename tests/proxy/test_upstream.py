"""The forwarder's httpx transport to upstream (llhttp parsing), against canned
answers from a real server on 127.0.0.1: each response ends where HTTP says it
ends, connections are used again only when that is safe, and every byte that
arrived before a failure is handed over before it."""

from __future__ import annotations

import asyncio
import gc
import socket
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest

from tests.helpers.proxy import CannedUpstream, chunked_answer
from tests.helpers.waiting import until
from toolstream_tui.proxy.upstream import (
    READ_AHEAD_BYTES,
    UpstreamConnection,
    UpstreamTransport,
    environment_proxy,
    outgoing,
    transport_for,
)

WAIT_S = 10.0
HEAD_LIMIT = 4096


OK_BODY = chunked_answer(b"data: 1\n\n", b"data: 2\n\n") + b"0\r\n\r\n"


@pytest.fixture
def client() -> Iterator[httpx.AsyncClient]:
    transport = UpstreamTransport(HEAD_LIMIT)
    yield httpx.AsyncClient(transport=transport, timeout=WAIT_S)


@pytest.mark.parametrize(
    ("method", "url", "headers", "body"),
    [
        ("POST", "http://127.0.0.1:8080/v1/x?a=%20b", [("Authorization", "Bearer k")], b"{}"),
        ("post", "https://api.example.com/v1/x", [("x-a", "1"), ("X-A", "2")], b""),
        ("GET", "http://h/", [("accept", "*/*")], b""),
        ("PUT", "http://h/p", [("Content-Length", "2"), ("HOST", "other")], b"{}"),
        ("PATCH", "http://h/p", [("transfer-encoding", "chunked")], b""),
        ("DELETE", "http://h/p", [], b"x"),
    ],
)
def test_a_request_goes_upstream_as_httpx_would_send_it(
    method: str, url: str, headers: list[tuple[str, str]], body: bytes
) -> None:
    sent = outgoing(method, httpx.URL(url), headers, body, {})
    request = httpx.Request(method, url, headers=headers, content=body)
    assert (sent.method, sent.target) == (request.method, request.url.raw_path)
    assert sent.headers == request.headers.raw
    assert sent.body == body


# The read timeout of a request that must time out (one that must succeed keeps
# the client's WAIT_S, however loaded the machine).
SHORT_S = 0.2


async def read(
    client: httpx.AsyncClient, url: str, method: str = "GET", timeout: float | None = None
) -> tuple[int, bytes]:
    extra = {} if timeout is None else {"timeout": timeout}
    async with client.stream(method, url, **extra) as response:
        return response.status_code, b"".join([piece async for piece in response.aiter_raw()])


async def test_a_kept_alive_connection_is_used_again(client: httpx.AsyncClient) -> None:
    upstream = CannedUpstream([OK_BODY, OK_BODY])
    async with client:
        first = await read(client, upstream.url + "/a")
        second = await read(client, upstream.url + "/b")
    assert first == second == (200, b"data: 1\n\ndata: 2\n\n")
    assert upstream.connections == 1
    assert [head.split(b"\r\n")[0] for head in upstream.requests] == [
        b"GET /a HTTP/1.1",
        b"GET /b HTTP/1.1",
    ]


async def test_a_connection_upstream_closed_is_not_used_again(client: httpx.AsyncClient) -> None:
    upstream = CannedUpstream([OK_BODY, OK_BODY], close=True)
    async with client:
        assert (await read(client, upstream.url + "/a"))[0] == 200
        assert (await read(client, upstream.url + "/b"))[0] == 200
    assert upstream.connections == 2


async def test_a_request_that_timed_out_on_a_kept_connection_is_not_sent_again() -> None:
    """Upstream may be working on it: only a connection it closed is tried afresh."""
    upstream = CannedUpstream([OK_BODY])  # then silent
    client = httpx.AsyncClient(transport=UpstreamTransport(HEAD_LIMIT), timeout=WAIT_S)
    async with client:
        assert (await read(client, upstream.url + "/a"))[0] == 200
        with pytest.raises(httpx.ReadTimeout):
            await read(client, upstream.url + "/b", timeout=SHORT_S)
    assert len(upstream.requests) == 2 and upstream.connections == 1


async def test_a_head_response_ends_with_its_head(client: httpx.AsyncClient) -> None:
    """Its Content-Length tells the size of a body that never comes."""
    answer = b"HTTP/1.1 200 OK\r\ncontent-length: 1234\r\n\r\n"
    upstream = CannedUpstream([answer, OK_BODY])
    async with client:
        assert await read(client, upstream.url, method="HEAD") == (200, b"")
        assert (await read(client, upstream.url))[1] == b"data: 1\n\ndata: 2\n\n"
    assert upstream.connections == 2  # not used again after HEAD


@pytest.mark.parametrize("status", [204, 304])
async def test_statuses_without_a_body(client: httpx.AsyncClient, status: int) -> None:
    upstream = CannedUpstream([b"HTTP/1.1 %d Nothing\r\n\r\n" % status])
    async with client, client.stream("GET", upstream.url) as response:
        assert response.status_code == status and response.reason_phrase == "Nothing"
        assert [piece async for piece in response.aiter_raw()] == []


async def test_a_body_without_length_or_chunks_ends_when_upstream_closes(
    client: httpx.AsyncClient,
) -> None:
    upstream = CannedUpstream(
        [b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it"], close=True
    )
    async with client:
        assert await read(client, upstream.url) == (200, b"all of it")


async def test_informational_answers_are_skipped(client: httpx.AsyncClient) -> None:
    early = b"HTTP/1.1 103 Early Hints\r\nlink: </a>; rel=preload\r\n\r\n"
    upstream = CannedUpstream([early + OK_BODY])
    async with client, client.stream("GET", upstream.url) as response:
        assert response.status_code == 200 and "link" not in response.headers
        assert b"".join([piece async for piece in response.aiter_raw()]).endswith(b"2\n\n")


async def test_headers_come_as_upstream_wrote_them(client: httpx.AsyncClient) -> None:
    answer = b"HTTP/1.1 201 Made Here\r\nX-Case: A\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n"
    upstream = CannedUpstream([answer + b"content-length: 2\r\n\r\nok"])
    async with client, client.stream("GET", upstream.url) as response:
        assert response.reason_phrase == "Made Here"
        assert response.headers.raw[:3] == [
            (b"X-Case", b"A"),
            (b"set-cookie", b"a=1"),
            (b"set-cookie", b"b=2"),
        ]
        assert await response.aread() == b"ok"


async def test_bytes_before_a_cut_come_before_the_error(client: httpx.AsyncClient) -> None:
    upstream = CannedUpstream([chunked_answer(b"data: 1\n\n", b"data: 2\n\n")], close=True)
    pieces: list[bytes] = []
    async with client:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending complete"):
            async with client.stream("GET", upstream.url) as response:
                async for piece in response.aiter_raw():
                    pieces.append(piece)
    assert b"".join(pieces) == b"data: 1\n\ndata: 2\n\n"


async def test_a_response_that_is_not_http_is_a_protocol_error(
    client: httpx.AsyncClient,
) -> None:
    upstream = CannedUpstream([b"SSH-2.0-OpenSSH_9.6\r\n\r\n"])
    async with client:
        with pytest.raises(httpx.RemoteProtocolError, match="invalid response"):
            await read(client, upstream.url)


async def test_a_response_head_past_the_limit_is_refused(client: httpx.AsyncClient) -> None:
    huge = b"x-pad: " + b"p" * HEAD_LIMIT + b"\r\n"
    upstream = CannedUpstream([b"HTTP/1.1 200 OK\r\n" + huge + b"content-length: 0\r\n\r\n"])
    async with client:
        with pytest.raises(httpx.RemoteProtocolError, match=f"over {HEAD_LIMIT} bytes"):
            await read(client, upstream.url)


async def test_a_silent_upstream_times_out() -> None:
    upstream = CannedUpstream([b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"])
    client = httpx.AsyncClient(transport=UpstreamTransport(HEAD_LIMIT), timeout=WAIT_S)
    async with client:
        with pytest.raises(httpx.ReadTimeout):
            await read(client, upstream.url, timeout=SHORT_S)


async def test_a_refused_connection_is_a_connect_error(client: httpx.AsyncClient) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with client:
        with pytest.raises(httpx.ConnectError) as raised:
            await read(client, f"http://127.0.0.1:{port}/")
    assert isinstance(raised.value.__cause__, ConnectionRefusedError)


async def test_a_body_bigger_than_the_read_ahead_arrives_whole(client: httpx.AsyncClient) -> None:
    """Upstream is asked to wait each time more than the read-ahead is held."""
    pieces = [bytes([65 + k % 26]) * 65536 for k in range(3 * READ_AHEAD_BYTES // 65536)]
    upstream = CannedUpstream([chunked_answer(*pieces) + b"0\r\n\r\n"])
    async with client:
        status, body = await read(client, upstream.url)
    assert status == 200 and body == b"".join(pieces)


@pytest.mark.parametrize(
    ("environment", "proxied"),
    [
        ({}, False),
        ({"HTTPS_PROXY": "http://proxy.test:3128"}, True),
        ({"ALL_PROXY": "http://proxy.test:3128"}, True),
        ({"HTTP_PROXY": "http://proxy.test:3128"}, False),  # for http:// only
        ({"HTTPS_PROXY": "http://proxy.test:3128", "NO_PROXY": "api.example.com"}, False),
    ],
)
def test_httpx_keeps_the_way_upstream_where_the_environment_names_a_proxy(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], proxied: bool
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        for variant in (name, name.lower()):
            monkeypatch.delenv(variant, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    transport = transport_for(httpx.URL("https://api.example.com"), HEAD_LIMIT)
    assert isinstance(transport, httpx.AsyncHTTPTransport) == proxied
    assert isinstance(transport, UpstreamTransport) != proxied


async def test_bytes_past_the_response_end_neither_fail_it_nor_are_kept(
    client: httpx.AsyncClient,
) -> None:
    """The body its length announces is the response; what follows in the same
    read is no answer to anything, and the connection is not used again."""
    extra = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nextra"
    answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok" + extra
    upstream = CannedUpstream([answer, OK_BODY])
    async with client:
        assert await read(client, upstream.url) == (200, b"ok")
        assert (await read(client, upstream.url))[1] == b"data: 1\n\ndata: 2\n\n"
    assert upstream.connections == 2


async def test_a_connection_that_is_over_is_freed_without_the_collector() -> None:
    """Read as the forwarder reads (no client: httpx's own response and stream hold
    each other). The forwarder collects cycles rarely (tune_garbage_collector): a
    connection held in one by its parser, its transport or a raised error stayed
    until then, the soak's every connection."""

    def connections_alive() -> int:
        return sum(type(found) is UpstreamConnection for found in gc.get_objects())

    # Upstream closes after each answer: the second request finds the kept
    # connection closed (an error raised, then a new connection).
    upstream = CannedUpstream([OK_BODY, OK_BODY], close=True)
    transport = UpstreamTransport(HEAD_LIMIT)
    gc.collect()
    before = connections_alive()
    gc.disable()
    try:
        async with transport:
            for path in ("/a", "/b"):
                request = httpx.Request("GET", upstream.url + path, extensions={"timeout": {}})
                response = await transport.handle_async_request(request)
                body = b"".join([piece async for piece in response.stream])
                assert body == b"data: 1\n\ndata: 2\n\n"
                await response.aclose()
            del request, response
        await until(
            SimpleNamespace(pause=asyncio.sleep),
            lambda: connections_alive() == before,
            "the connections that are over to be freed",
        )
    finally:
        gc.enable()


# -- the environment's proxy --------------------------------------------------------------
UPSTREAM = httpx.URL("https://api.example.com/v1")


@pytest.mark.parametrize(
    ("environ", "proxy"),
    [
        ({}, None),
        ({"HTTPS_PROXY": "http://p:3128"}, "http://p:3128"),
        ({"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"}, "http://lower:1"),
        ({"HTTP_PROXY": "http://p:3128"}, None),  # the upstream is https
        ({"ALL_PROXY": "socks5://p:1080"}, "socks5://p:1080"),
        ({"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "example.com"}, None),
        ({"HTTPS_PROXY": "http://p:3128", "no_proxy": " .example.com , other"}, None),
        ({"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "*"}, None),
        ({"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "api.example.com:443"}, None),
        ({"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "ample.com"}, "http://p:3128"),
        ({"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "api.example.com:8443"}, "http://p:3128"),
    ],
)
def test_the_environment_names_the_proxy_and_no_proxy_exempts_hosts(
    environ: dict[str, str], proxy: str | None
) -> None:
    assert environment_proxy(UPSTREAM, environ) == proxy


def test_a_loopback_upstream_is_exempted_by_its_address() -> None:
    environ = {"HTTP_PROXY": "http://p:3128", "NO_PROXY": "localhost,127.0.0.1"}
    assert environment_proxy(httpx.URL("http://127.0.0.1:8080"), environ) is None
    assert environment_proxy(httpx.URL("http://10.0.0.2:8080"), environ) == "http://p:3128"
