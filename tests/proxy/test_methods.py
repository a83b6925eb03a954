"""Upgrades and the methods an SDK rarely sends: a WebSocket upgrade is refused
with a clear 501 (never forwarded half-way, never a hang); HEAD, OPTIONS (a
browser's CORS preflight) and `Expect: 100-continue` behave as they do directly."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.helpers.proxy import WAIT_S, AsgiUpstream, RunningProxy
from toolstream_stubs import StubServer

CORS = [
    (b"access-control-allow-origin", b"https://app.example"),
    (b"access-control-allow-methods", b"POST, OPTIONS"),
    (b"access-control-allow-headers", b"authorization, content-type"),
    (b"access-control-max-age", b"600"),
]


async def preflight_and_head(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers OPTIONS as a CORS preflight (204), HEAD with the length a GET's body
    would have, anything else with that body."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    body = b'{"object": "list", "data": []}'
    if scope["method"] == "OPTIONS":
        await send({"type": "http.response.start", "status": 204, "headers": CORS})
        await send({"type": "http.response.body", "body": b""})
        return
    head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": head})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


@pytest.fixture(scope="module")
def upstream() -> Iterator[AsgiUpstream]:
    with AsgiUpstream(preflight_and_head) as server:
        yield server


def answer(url: str, method: str, headers: dict[str, str]) -> tuple[int, list[Any], bytes]:
    with httpx.Client(timeout=WAIT_S, trust_env=False) as http:
        response = http.request(method, url, headers=headers)
    kept = [(k, v) for k, v in response.headers.multi_items() if k not in ("date", "server")]
    return response.status_code, kept, response.content


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        ("HEAD", {}),
        (
            "OPTIONS",
            {
                "origin": "https://app.example",
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization",
            },
        ),
    ],
)
def test_head_and_a_cors_preflight_answer_as_directly(
    upstream: AsgiUpstream, method: str, headers: dict[str, str]
) -> None:
    with RunningProxy(upstream.url) as proxy:
        through = answer(proxy.url + "/v1/models", method, headers)
        [record] = proxy.finished(1)
    assert through == answer(upstream.url + "/v1/models", method, headers)
    assert record.method == method and record.http_status == through[0]


def read_head(sock: socket.socket) -> bytes:
    received = b""
    while b"\r\n\r\n" not in received:
        data = sock.recv(4096)
        assert data, f"closed before a whole head: {received!r}"
        received += data
    return received


def test_expect_100_continue_gets_its_go_ahead_before_the_body(upstream: AsgiUpstream) -> None:
    body = b'{"model": "m"}'
    head = (
        b"POST /v1/models HTTP/1.1\r\nhost: p\r\nexpect: 100-continue\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
    )
    with RunningProxy(upstream.url) as proxy:
        address = httpx.URL(proxy.url)
        with socket.create_connection((address.host, address.port), timeout=WAIT_S) as sock:
            sock.sendall(head)
            go_ahead = read_head(sock)  # the client sends nothing more until it comes
            sock.sendall(body)
            rest = b""
            while data := sock.recv(65536):
                rest += data
        [record] = proxy.finished(1)
    assert go_ahead.startswith(b"HTTP/1.1 100 ")
    assert rest.startswith(b"HTTP/1.1 200") and rest.endswith(b'{"object": "list", "data": []}')
    assert record.model == "m"


def test_a_websocket_upgrade_is_refused_clearly_and_never_reaches_upstream(
    capfd: pytest.CaptureFixture[str],
) -> None:
    head = (
        b"GET /v1/realtime?model=gpt-realtime HTTP/1.1\r\nhost: p\r\n"
        b"connection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n"
        b"sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    with StubServer("weather", speed=0) as stub, RunningProxy(stub.base_url) as proxy:
        address = httpx.URL(proxy.url)
        with socket.create_connection((address.host, address.port), timeout=WAIT_S) as sock:
            sock.sendall(head)
            answer_head = read_head(sock)
        [record] = proxy.finished(1)
        asked = len(stub.requests)
    status_line = answer_head.split(b"\r\n", 1)[0]
    assert status_line == b"HTTP/1.1 501 Not Implemented"
    assert asked == 0
    assert record.state == "error"
    assert any("501" in note and "WebSocket" in note for note in record.notes)
    assert "upgrade" not in capfd.readouterr().err.lower()


def test_the_refusal_names_what_to_do(upstream: AsgiUpstream) -> None:
    with RunningProxy(upstream.url) as proxy:
        with httpx.Client(timeout=WAIT_S, trust_env=False) as http:
            response = http.get(
                proxy.url + "/v1/realtime",
                headers={"connection": "upgrade", "upgrade": "websocket"},
            )
        proxy.finished(1)
    error = json.loads(response.content)["error"]
    assert response.status_code == 501 and error["code"] == "upgrade_not_forwarded"
    assert "connect this client to the upstream directly" in error["message"]
