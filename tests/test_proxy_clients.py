"""Slow and hostile clients: connections that send half a request (slowloris) or
nothing never keep a normal client from being served, and are closed once the
proxy's header timeout has passed without a whole request head."""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest
from proxying import WAIT_S, RunningProxy

from toolstream_stubs import StubServer, load_scenario

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
