"""SIGTERM stops the proxy gently: no new connections, the responses in flight end
for their clients within --drain, then the summary and the --fail-on status; past
the drain, or at a second signal, the streams still going are cut and say so."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.commands.test_proxy import ProxyProcess, proxy_process
from tests.helpers.proxy import WAIT_S
from tests.proxy.test_watcher import wait_until_refused
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.commands.proxy import build_parser, config_of

WEATHER = load_scenario("weather").rendered
LONG_DRAIN_S = 60.0


class HeldStream:
    """A paced response from the stub that stops before its second event until
    `release` is set, read by a client thread."""

    def __init__(self) -> None:
        self.first_sent = threading.Event()
        self.release = threading.Event()
        self.received: list[bytes] = []
        self.error: Exception | None = None
        self.stub = StubServer("weather", speed=0, before_event=self._hold)

    def _hold(self, k: int) -> None:
        if k == 1:
            self.first_sent.set()
            self.release.wait(WAIT_S)

    def pull(self, url: str) -> None:
        try:
            with (
                httpx.Client(timeout=WAIT_S, trust_env=False) as http,
                http.stream("POST", url + "/v1/chat/completions") as response,
            ):
                self.received.extend(response.iter_raw())
        except httpx.HTTPError as exc:
            self.error = exc


@contextmanager
def streaming_through_the_proxy(*args: str) -> Iterator[tuple[HeldStream, ProxyProcess]]:
    held = HeldStream()
    with held.stub, proxy_process("--upstream", held.stub.base_url, "--headless", *args) as proxy:
        client = threading.Thread(target=held.pull, args=(proxy.url,))
        client.start()
        try:
            assert held.first_sent.wait(WAIT_S)
            yield held, proxy
        finally:
            held.release.set()
            client.join(WAIT_S)


def test_sigterm_lets_the_stream_in_flight_end_for_its_client() -> None:
    with streaming_through_the_proxy("--drain", str(LONG_DRAIN_S)) as (held, proxy):
        proxy.process.send_signal(signal.SIGTERM)
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
