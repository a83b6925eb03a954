"""Slow and hostile clients: connections that send half a request (slowloris) or
nothing never keep a normal client from being served, and are closed once the
proxy's header timeout has passed without a whole request head."""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.docs_pages import docs_page
from tests.helpers.proxy import WAIT_S, AsgiUpstream, RunningProxy
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.proxy.forwarder import MAX_CONNECTIONS
from toolstream_tui.proxy.http_rules import HEADER_TIMEOUT_S
from toolstream_tui.proxy.upstream import READ_AHEAD_BYTES as UPSTREAM_READ_AHEAD

SLOWLORIS = 1000
SILENT = 10
HEADER_TIMEOUT = 1.0
HALF_A_REQUEST = b"POST /v1/chat/completions HTTP/1.1\r\nhost: proxy\r\nx-slow: "


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer("weather", speed=0) as server:
        yield server


def open_connections(stack: ExitStack, url: str, count: int, send: bytes) -> list[socket.socket]:
    address = httpx.URL(url)
    sockets = []
    for _ in range(count):
        sock = stack.enter_context(socket.create_connection((address.host, address.port)))
        if send:
            sock.sendall(send)
        sockets.append(sock)
    return sockets


def closed_by_the_proxy(sockets: list[socket.socket], within: float) -> int:
    """How many of `sockets` the other end closed (EOF or reset) within `within` s."""
    selector = selectors.DefaultSelector()
    for sock in sockets:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    closed, deadline = 0, time.monotonic() + within
    while closed < len(sockets) and (left := deadline - time.monotonic()) > 0:
        for key, _ in selector.select(left):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                data = sock.recv(4096)
            except ConnectionResetError:
                data = b""
            assert data == b"", f"the proxy answered a half-sent request: {data[:80]!r}"
            selector.unregister(sock)
            closed += 1
    selector.close()
    return closed


def test_half_sent_and_silent_connections_neither_block_a_client_nor_stay_open(
    stub: StubServer,
) -> None:
    with RunningProxy(stub.base_url, header_timeout=HEADER_TIMEOUT) as proxy, ExitStack() as stack:
        slow = open_connections(stack, proxy.url, SLOWLORIS, HALF_A_REQUEST)
        silent = open_connections(stack, proxy.url, SILENT, b"")
        with httpx.Client(timeout=WAIT_S, trust_env=False) as http:
            response = http.post(proxy.url + "/v1/chat/completions")
        assert response.status_code == 200
        assert response.content == load_scenario("weather").rendered
        proxy.finished(1)
        assert closed_by_the_proxy(slow + silent, WAIT_S) == SLOWLORIS + SILENT


def test_a_body_slower_than_the_header_timeout_still_goes_through(stub: StubServer) -> None:
    """The timeout is for the head: a request whose body trickles in is forwarded."""
    body = b'{"model": "m"}'
    head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: p\r\nconnection: close\r\n"
    with RunningProxy(stub.base_url, header_timeout=0.3) as proxy, ExitStack() as stack:
        [sock] = open_connections(
            stack, proxy.url, 1, head + b"content-length: %d\r\n\r\n" % len(body)
        )
        for byte in body:
            time.sleep(0.05)  # paces the sender past the timeout; nothing waits on it
            sock.sendall(bytes([byte]))
        sock.settimeout(WAIT_S)
        answer = b""
        while data := sock.recv(65536):
            answer += data
        [record] = proxy.finished(1)
    assert answer.startswith(b"HTTP/1.1 200") and record.model == "m"


STREAM_BYTES = 50 << 20
PIECE = b"data: " + b"x" * 65530 + b"\n\n"
HELD_AT_MOST = 16 << 20  # read-ahead, and the watcher's copy on its way to the pipe
# What upstream gets written before it must wait: the kernel's socket buffers, which
# loopback grows to several MB each (upstream -> proxy -> client), plus the above.
AHEAD_AT_MOST = 32 << 20


def forwarder_pids() -> list[int]:
    pids = []
    for children in Path("/proc/self/task").glob("*/children"):
        for pid in children.read_text().split():
            if b"proxy.forwarder" in Path(f"/proc/{pid}/cmdline").read_bytes():
                pids.append(int(pid))
    return pids


def rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_a_client_that_stops_reading_a_50_mb_stream_holds_only_the_read_ahead() -> None:
    """The client reads nothing for a while: upstream is made to wait (it has sent
    far less than the stream), and the forwarder holds no more than its read-ahead
    and the sockets' buffers; then the client gets every byte."""
    sent = [0]

    async def big(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        head = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        if scope["path"] == "/v1/warm-up":
            await send({"type": "http.response.body", "body": PIECE, "more_body": False})
            return
        for _ in range(STREAM_BYTES // len(PIECE)):
            await send({"type": "http.response.body", "body": PIECE, "more_body": True})
            sent[0] += len(PIECE)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    with AsgiUpstream(big) as upstream, RunningProxy(upstream.url) as proxy:
        with httpx.Client(timeout=WAIT_S, trust_env=False) as http:
            http.post(proxy.url + "/v1/warm-up", content=b"{}").read()
            [forwarder] = forwarder_pids()
            before = rss_of(forwarder)
            with http.stream("POST", proxy.url + "/v1/chat/completions") as response:
                assert until_it_stops_growing(sent)
                held = rss_of(forwarder) - before
                upstream_ahead = sent[0]
                received = sum(len(chunk) for chunk in response.iter_raw())
        proxy.finished(2)
    total = STREAM_BYTES // len(PIECE) * len(PIECE)
    assert received == total
    assert upstream_ahead < AHEAD_AT_MOST, "upstream was not made to wait"
    assert held < HELD_AT_MOST, held


def until_it_stops_growing(counter: list[int], quiet_s: float = 0.5) -> bool:
    """Until `counter[0]` has not moved for `quiet_s` (polled), within WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    last, since = counter[0], time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if counter[0] != last:
            last, since = counter[0], time.monotonic()
        elif last and time.monotonic() - since >= quiet_s:
            return True
    return False


def test_the_documented_limits_are_the_ones_in_force() -> None:
    page = docs_page("proxy-under-load.md")
    assert f"within **{HEADER_TIMEOUT_S:g} s** of opening" in page
    assert f"up to {MAX_CONNECTIONS:,} at once" in page
    assert f"by at most {UPSTREAM_READ_AHEAD // 1024} KiB per request" in page


def test_a_client_that_leaves_before_upstream_answers_closes_the_upstream_request() -> None:
    """Without waiting for the head (or for --timeout): within a second."""
    asked, closed = threading.Event(), threading.Event()
    closed_at: list[float] = []

    async def never_answers(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        asked.set()
        while (await receive())["type"] != "http.disconnect":
            pass
        closed_at.append(time.monotonic())
        closed.set()

    request = b"POST /v1/chat/completions HTTP/1.1\r\nhost: p\r\ncontent-length: 2\r\n\r\n{}"
    with AsgiUpstream(never_answers) as upstream, RunningProxy(upstream.url) as proxy:
        address = httpx.URL(proxy.url)
        with socket.create_connection((address.host, address.port)) as sock:
            sock.sendall(request)
            assert asked.wait(WAIT_S)
        left_at = time.monotonic()
        assert closed.wait(WAIT_S), "the upstream request stayed open"
        [record] = proxy.finished(1)
    assert closed_at[0] - left_at < 1.0
    assert record.state == "error"
    assert any("disconnected before upstream answered" in note for note in record.notes)
