"""SIGTERM stops the proxy gently: no new connections, the responses in flight end
for their clients within --drain, then the summary and the --fail-on status; past
the drain, or at a second signal, the streams still going are cut and say so, and
nothing else: the end of the drain is no error of the proxy's."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import httpx
import pytest

from tests.commands.test_proxy import ProxyProcess, proxy_process
from tests.helpers.proxy import WAIT_S, HeldStream
from tests.proxy.test_watcher import wait_until_refused
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.commands.proxy import build_parser, config_of

WEATHER = load_scenario("weather").rendered
LONG_DRAIN_S = 60.0
SHORT_DRAIN = "0.2"
STOPPED = "toolstream-tui proxy: stopped after 1 request"


@contextmanager
def streaming_through_the_proxy(
    *args: str, job: bool = False
) -> Iterator[tuple[HeldStream, ProxyProcess]]:
    held = HeldStream()
    with (
        held.stub,
        proxy_process("--upstream", held.stub.base_url, "--headless", *args, job=job) as proxy,
    ):
        client = threading.Thread(target=held.pull, args=(proxy.url,))
        client.start()
        try:
            assert held.first_sent.wait(WAIT_S)
            yield held, proxy
        finally:
            held.release.set()
            client.join(WAIT_S)


def sigterm(proxy: ProxyProcess) -> None:
    proxy.process.send_signal(signal.SIGTERM)


def ctrl_c(proxy: ProxyProcess) -> None:
    """What a terminal does: SIGINT to its foreground process group, the proxy's. The
    forwarder, in a group of its own, hears of it once, from the watching process
    (had it the SIGINT too, the watcher's word would be a second signal: cut now)."""
    os.killpg(proxy.process.pid, signal.SIGINT)


@pytest.mark.parametrize("stop", [sigterm, ctrl_c])
def test_a_stop_lets_the_stream_in_flight_end_for_its_client(
    stop: Callable[[ProxyProcess], None],
) -> None:
    with streaming_through_the_proxy("--drain", str(LONG_DRAIN_S), job=True) as (held, proxy):
        stop(proxy)
        assert wait_until_refused(proxy.url), "the proxy went on taking connections"
        held.release.set()
        code = proxy.wait()
    assert held.error is None and b"".join(held.received) == WEATHER
    assert code == 0, proxy.stderr
    [line] = proxy.lines
    assert line["status"] == "finished" and line["forwarded_bytes"] == len(WEATHER)
    assert "stopped after 1 request" in proxy.stderr


def test_past_the_drain_the_stream_is_cut_and_the_summary_says_so() -> None:
    with streaming_through_the_proxy("--drain", "0.2", "--fail-on", "connection-lost") as (
        held,
        proxy,
    ):
        proxy.process.send_signal(signal.SIGTERM)
        code = proxy.wait()
    assert held.error is not None, "the client saw the cut"
    assert code == 3, proxy.stderr
    [line] = proxy.lines
    assert line["status"] == "truncated"
    assert any("--drain 0.2 s was over" in note for note in line["notes"]), (line, proxy.stderr)
    assert "1 with an anomaly named by --fail-on" in proxy.stderr
    assert "running task" not in proxy.stderr  # uvicorn's own line about the cut


def after_listening(stderr: str) -> list[str]:
    """What the proxy said on stderr once it was listening."""
    return stderr.splitlines()[1:]


def test_a_stream_cut_at_the_end_of_the_drain_is_cut_for_its_client_and_no_error() -> None:
    with streaming_through_the_proxy("--drain", SHORT_DRAIN) as (held, proxy):
        proxy.process.send_signal(signal.SIGTERM)
        code = proxy.wait()
    # An honest cut: what came, then the connection closed mid-body (not a wait
    # that only the client's own timeout ends).
    assert isinstance(held.error, httpx.RemoteProtocolError), held.error
    received = b"".join(held.received)
    assert received and WEATHER.startswith(received) and received != WEATHER
    assert code == 0 and after_listening(proxy.stderr) == [STOPPED], proxy.stderr
    [line] = proxy.lines
    assert line["status"] == "truncated" and line["forwarded_bytes"] == len(received)
    assert any(f"--drain {SHORT_DRAIN} s was over" in note for note in line["notes"])


class SilentUpstream:
    """Takes one request on 127.0.0.1 and never answers it; `asked` is set once
    the request's head has come."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.asked = threading.Event()
        self._taker = threading.Thread(target=self._take, daemon=True)

    def _take(self) -> None:
        with suppress(OSError):  # the test closed the socket
            connection, _ = self.sock.accept()
            with connection:
                received = b""
                while b"\r\n\r\n" not in received and (data := connection.recv(65536)):
                    received += data
                self.asked.set()
                while connection.recv(65536):  # until the proxy closes the request
                    pass

    def __enter__(self) -> SilentUpstream:
        self._taker.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.sock.close()


def test_a_request_upstream_has_not_answered_at_the_end_of_the_drain_gets_a_503() -> None:
    answers: list[httpx.Response] = []

    def ask(url: str) -> None:
        with httpx.Client(timeout=WAIT_S, trust_env=False) as http:
            answers.append(http.post(url + "/v1/chat/completions", content=b"{}"))

    with (
        SilentUpstream() as upstream,
        proxy_process("--upstream", upstream.url, "--headless", "--drain", SHORT_DRAIN) as proxy,
    ):
        client = threading.Thread(target=ask, args=(proxy.url,))
        client.start()
        assert upstream.asked.wait(WAIT_S)
        proxy.process.send_signal(signal.SIGTERM)
        code = proxy.wait()
        client.join(WAIT_S)
    [answer] = answers
    assert answer.status_code == 503, answer.text
    error = answer.json()["error"]
    assert error["code"] == "proxy_shutting_down"
    assert f"--drain {SHORT_DRAIN} s was over" in error["message"]
    assert code == 0 and after_listening(proxy.stderr) == [STOPPED], proxy.stderr
    [line] = proxy.lines
    assert line["status"] == "error" and f"--drain {SHORT_DRAIN} s" in line["error"], line
    assert "the client got a 503 from the proxy" in line["notes"]


def test_a_request_still_coming_at_the_end_of_the_drain_gets_a_503_unforwarded() -> None:
    upstream = StubServer("weather", speed=0)
    with (
        upstream,
        proxy_process(
            "--upstream", upstream.base_url, "--headless", "--drain", SHORT_DRAIN
        ) as proxy,
        socket.create_connection(("127.0.0.1", httpx.URL(proxy.url).port), WAIT_S) as client,
    ):
        # "100 Continue" comes once the proxy reads the body: it has the head.
        client.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\n"
            b"Content-Length: 100\r\nExpect: 100-continue\r\n\r\n"
        )
        assert client.recv(65536).startswith(b"HTTP/1.1 100 ")
        client.sendall(b'{"model": ')  # and never the rest
        proxy.process.send_signal(signal.SIGTERM)
        code = proxy.wait()
        answer = b"".join(iter(lambda: client.recv(65536), b""))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 "), answer
    assert json.loads(body)["error"]["code"] == "proxy_shutting_down"
    assert upstream.requests == [], "a request that never came whole went upstream"
    assert code == 0 and after_listening(proxy.stderr) == [STOPPED], proxy.stderr
    [line] = proxy.lines
    assert line["status"] == "error" and "not forwarded" in line["error"], line


def test_a_second_signal_cuts_at_once() -> None:
    with streaming_through_the_proxy("--drain", str(LONG_DRAIN_S)) as (held, proxy):
        proxy.process.send_signal(signal.SIGTERM)
        assert wait_until_refused(proxy.url)
        started = time.monotonic()
        proxy.process.send_signal(signal.SIGINT)
        code = proxy.wait()
        took = time.monotonic() - started
    assert took < LONG_DRAIN_S / 2, "the second signal did not wait for the drain"
    assert code == 0, proxy.stderr
    assert held.error is not None or b"".join(held.received) != WEATHER
    [line] = proxy.lines
    assert line["status"] == "truncated"


def test_drain_is_seconds_from_zero_on(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["--upstream", "http://h", "--drain", "0"])
    assert config_of(args).shutdown_grace == 0
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["--upstream", "http://h", "--drain", "-0.5"])
    assert stopped.value.code == 2
    assert "--drain: expected a number >= 0, got '-0.5'" in capsys.readouterr().err
