"""Upstreams that misbehave: one that never answers gets the client a 504 after
--timeout; a drip reaches the client as a drip; a redirect is passed on, not
followed; a TLS failure names its cause in the 502 and on the row."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator

import httpx
import pytest

from tests.helpers.proxy import WAIT_S, RunningProxy
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.views.requests import request_row

WEATHER = load_scenario("weather")
HEAD_TIMEOUT_S = 0.3


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer("weather", speed=0) as server:
        yield server


def fetch(url: str, **options: object) -> tuple[httpx.Response, bytes]:
    with (
        httpx.Client(timeout=WAIT_S, trust_env=False) as http,
        http.stream("POST", url, **options) as response,  # type: ignore[arg-type]
    ):
        return response, b"".join(response.iter_raw())


def test_an_upstream_that_never_answers_gets_the_client_a_504_and_the_row_says_why(
    stub: StubServer,
) -> None:
    with RunningProxy(stub.base_url, connect_timeout=HEAD_TIMEOUT_S) as proxy:
        response, body = fetch(proxy.url + "/v1/chat/completions?fault=no-answer&seconds=60")
        [record] = proxy.finished(1)
    assert response.status_code == 504
    error = json.loads(body)["error"]
    assert error["code"] == "upstream_timeout"
    assert f"no response within {HEAD_TIMEOUT_S:g} s (--timeout)" in error["message"]
    assert record.state == "error" and "--timeout" in record.summary()["error"]
    row = request_row(record, now=0.0).cells[1]
    assert "504" in row and "--timeout" in row


def test_a_drip_reaches_the_client_as_it_comes(stub: StubServer) -> None:
    """One byte a write: the client has the first bytes while upstream still drips."""
    first_read: list[int] = []
    with RunningProxy(stub.base_url) as proxy:
        path = "/scenarios/done-only/v1/chat/completions?fault=drip&interval_ms=1"
        with (
            httpx.Client(timeout=WAIT_S, trust_env=False) as http,
            http.stream("POST", proxy.url + path) as response,
        ):
            received = b""
            for chunk in response.iter_raw():
                first_read.append(len(chunk)) if not received else None
                received += chunk
        [record] = proxy.finished(1)
    expected = load_scenario("done-only").rendered
    assert received == expected and first_read[0] < len(expected)
    assert record.state == "finished" and record.forwarded_bytes == len(expected)


def test_an_idle_timeout_cuts_a_slow_drip_for_both(stub: StubServer) -> None:
    with RunningProxy(stub.base_url, idle_timeout=HEAD_TIMEOUT_S) as proxy:
        with pytest.raises(httpx.HTTPError):
            fetch(proxy.url + "/v1/chat/completions?fault=drip&interval_ms=5000")
        [record] = proxy.finished(1)
    assert record.state == "truncated" and "idle-timeout" in record.anomalies


def test_a_redirect_is_passed_on_not_followed(stub: StubServer) -> None:
    before = len(stub.requests)
    with RunningProxy(stub.base_url) as proxy:
        response, _ = fetch(proxy.url + "/v1/chat/completions?fault=redirect")
        [record] = proxy.finished(1)
    assert response.status_code == 307
    assert response.headers["location"].startswith(stub.base_url + "/v1/chat/completions")
    assert len(stub.requests) == before + 1, "the proxy did not follow it"
    assert record.http_status == 307


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An HTTPS server on 127.0.0.1 whose certificate nobody trusts."""
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                connection, _ = listening.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(connection, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                continue  # the client refused the certificate, as it should

    threading.Thread(target=serve, daemon=True).start()
    yield f"https://127.0.0.1:{port}"
    listening.close()


@pytest.mark.parametrize("upstream", ["untrusted", "plain-http"])
def test_a_tls_failure_names_its_cause_in_the_502_and_on_the_row(
    upstream: str, self_signed: str, stub: StubServer
) -> None:
    url = self_signed if upstream == "untrusted" else stub.base_url.replace("http:", "https:")
    cause = "certificate verify failed" if upstream == "untrusted" else "wrong version number"
    with RunningProxy(url) as proxy:
        response, body = fetch(proxy.url + "/v1/chat/completions", content=b"{}")
        [record] = proxy.finished(1)
    assert response.status_code == 502
    message = json.loads(body)["error"]["message"]
    assert "TLS failure" in message and cause in message.lower()
    assert "TLS failure" in record.summary()["error"] and cause in record.summary()["error"].lower()
