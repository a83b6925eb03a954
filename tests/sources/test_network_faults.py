"""Bad networks, each a stub fault mode on a real loopback socket, read by the
CLI in a subprocess: a clear outcome, and what arrived is kept."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.helpers.apps import frozen_clock, wait_settled
from tests.helpers.cli import CliRunner
from tests.helpers.virtual_clock import run_on_virtual_clock
from tests.helpers.waiting import until
from toolstream_stubs import StubServer
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE
from toolstream_tui.core.session import REPORTED_CHARS
from toolstream_tui.sources.base import IDLE_TIMEOUT, TransportError
from toolstream_tui.sources.decoding import PIECE
from toolstream_tui.sources.http import HttpRequest, HttpSource
from toolstream_tui.sources.recording import source_items
from toolstream_tui.watching.options import WatchOptions


def weather(stub: StubServer, query: str) -> str:
    return f"{stub.scenario_url('weather')}?{query}"


def headless(cli: CliRunner, url: str, *args: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    result = cli("--headless", "--url", url, *args)
    return result.returncode, json.loads(result.stdout), result.stderr


def kinds(report: dict) -> set[str]:  # type: ignore[type-arg]
    return {anomaly["kind"] for anomaly in report["anomalies"]}


def test_slow_drip_arrives_whole(cli: CliRunner, stub: StubServer) -> None:
    code, report, _ = headless(cli, weather(stub, "fault=drip&interval_ms=0"))
    assert code == 0
    assert report["tool_calls"][0]["arguments"] == {"location": "Beijing"}


def test_a_stall_ends_as_truncated_at_the_idle_timeout(cli: CliRunner, stub: StubServer) -> None:
    code, report, stderr = headless(
        cli, weather(stub, "fault=stall&at=4&seconds=30"), "--idle-timeout", "0.5"
    )
    assert code == EXIT_INCOMPLETE
    assert report["status"] == "truncated"
    assert report["tool_calls"][0]["arguments_raw"].startswith('{"loc')
    assert "no data for 0.5 s" in stderr


def test_a_server_that_never_answers_times_out_naming_the_url(
    cli: CliRunner, stub: StubServer
) -> None:
    url = weather(stub, "fault=no-answer&seconds=30")
    code, report, stderr = headless(cli, url, "--timeout", "0.5")
    assert code == 1
    assert report["status"] == "error"
    assert "timeout" in report["error"] and url in report["error"]
    assert "Traceback" not in stderr


async def first_stop(url: str, timeout: float, idle: float) -> tuple[float, TransportError]:
    """By the loop's clock: how long until the source stopped, and why."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    source = HttpSource(HttpRequest(url=url, timeout=timeout, idle_timeout=idle))
    async for item in source_items(source, None, None, idle, warn=print):
        if isinstance(item, TransportError):
            return loop.time() - start, item
    raise AssertionError("the stream ended without a stop")


def test_an_idle_timeout_longer_than_timeout_is_what_ends_a_silence(stub: StubServer) -> None:
    """--timeout 1 --idle-timeout 3: the silence mid-body is cut at 3 s as idle,
    not at 1 s as a lost connection (which made any --idle-timeout >= --timeout moot)."""
    url = weather(stub, "fault=stall&at=4&seconds=30")
    waited, stop = run_on_virtual_clock(first_stop(url, timeout=1.0, idle=3.0))
    assert stop.kind == IDLE_TIMEOUT
    assert 3.0 <= waited < 3.5


def test_with_an_idle_timeout_the_head_still_comes_within_timeout(stub: StubServer) -> None:
    url = weather(stub, "fault=no-answer&seconds=30")
    waited, stop = run_on_virtual_clock(first_stop(url, timeout=1.0, idle=3.0))
    assert stop.message == f"no response within 1s from {url}"
    assert 1.0 <= waited < 1.5


def test_a_connection_reset_mid_event_is_truncated_with_its_buffers(
    cli: CliRunner, stub: StubServer
) -> None:
    code, report, stderr = headless(cli, weather(stub, "fault=reset&at=4"))
    assert code == EXIT_INCOMPLETE
    assert report["status"] == "truncated"
    assert "connection-lost" in kinds(report)
    assert report["tool_calls"][0]["arguments_raw"]
    assert "Traceback" not in stderr
    lost = next(a["detail"] for a in report["anomalies"] if a["kind"] == "connection-lost")
    assert lost.startswith("connection lost while reading the response from ")
    assert lost.endswith(": connection reset by peer"), "the socket's words, not 'readError'"


def test_chunked_encoding_cut_mid_chunk_after_the_finish_keeps_the_finish(
    cli: CliRunner, stub: StubServer
) -> None:
    """The stub cuts the last chunk, here half of `data: [DONE]`: the finish had
    come, so the calls stand, and the cut is named."""
    code, report, _ = headless(cli, weather(stub, "fault=cut-chunk"))
    assert code == 0
    assert report["status"] == "finished"
    assert {"connection-lost", "done-missing", "unterminated-event"} <= kinds(report)
    assert "incomplete chunked read" in next(
        a["detail"] for a in report["anomalies"] if a["kind"] == "connection-lost"
    )
    assert report["tool_calls"][0]["arguments"] == {"location": "Beijing"}


def test_gzip_streams_are_decoded(cli: CliRunner, stub: StubServer) -> None:
    code, report, _ = headless(cli, weather(stub, "fault=gzip"))
    assert code == 0
    assert report["tool_calls"][0]["arguments"] == {"location": "Beijing"}


def test_redirects_are_followed_and_shown(cli: CliRunner, stub: StubServer) -> None:
    code, report, _ = headless(cli, weather(stub, "fault=redirect&hops=2"))
    assert code == 0
    (redirect,) = [a for a in report["anomalies"] if a["kind"] == "redirected"]
    assert redirect["detail"].startswith("followed 2 redirect(s)")


@pytest.mark.parametrize("status", [429, 500, 503])
def test_rate_limits_and_server_errors_show_retry_after(
    cli: CliRunner, stub: StubServer, status: int
) -> None:
    code, report, stderr = headless(cli, weather(stub, f"fault=status&code={status}"))
    assert code == 1
    assert report["error"].startswith(f"HTTP {status} (Retry-After: 7): ")
    assert report["http_status"] == status
    assert f"HTTP {status} (Retry-After: 7)" in stderr


def test_a_recording_cut_by_the_network_replays_to_the_same_report(
    cli: CliRunner, stub: StubServer, tmp_path: Path
) -> None:
    recording = tmp_path / "cut.sse"
    live = cli("--headless", "--url", weather(stub, "fault=reset&at=5"), "--record", str(recording))
    replayed = cli("--headless", "--replay", str(recording))
    live_report, replay_report = json.loads(live.stdout), json.loads(replayed.stdout)
    del live_report["source"], replay_report["source"]
    assert replay_report == live_report
    assert live_report["status"] == "truncated"


async def test_restart_after_a_failure_streams_again(stub: StubServer) -> None:
    request = HttpRequest(url=weather(stub, "fault=status&code=503"), timeout=5)
    app = ToolstreamApp(HttpSource(request, clock=frozen_clock), WatchOptions(clock=frozen_clock))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_settled(app)
        assert app.stream.status_bar.view.state == "error"
        assert app.stream.error_banner.has_class("-shown")
        app.source = HttpSource(HttpRequest(url=stub.scenario_url("weather")), clock=frozen_clock)
        await pilot.press("r")
        await wait_settled(app)
        assert app.stream.status_bar.view.state == "finished"
        assert not app.stream.error_banner.has_class("-shown")
        assert app.stream.lanes.lanes[0].view.state == "parsed"


async def test_the_status_bar_shows_a_stall_growing(stub: StubServer) -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    source = HttpSource(HttpRequest(url=weather(stub, "fault=stall&at=4&seconds=30")), clock=clock)
    app = ToolstreamApp(source, WatchOptions(clock=clock))
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: app.session.state.events >= 4, "4 events (the stub then stalls)")
        for seconds in (0.5, 2.0, 5.0):
            now[0] = seconds
            app.stream.display_tick()
            shown = str(app.stream.status_bar.render())
            assert ("no data for" in shown) == (seconds > 1.0), shown
        assert "no data for 5.0s" in shown
        assert app.stream.status_bar.view.state == "streaming"


def test_a_gzip_bomb_stops_at_the_event_limit_with_a_bounded_report(
    cli: CliRunner, stub: StubServer
) -> None:
    """4 GiB inflated from a few MB: the limit is checked while the body inflates,
    and the report keeps the start of the endless event, stating its size."""
    code, report, stderr = headless(
        cli, weather(stub, "fault=gzip-bomb&mib=4096"), "--max-event-bytes", "2000000"
    )
    assert code == EXIT_INCOMPLETE
    assert report["status"] == "truncated"
    assert 2_000_000 < report["bytes"] <= 2_000_000 + PIECE
    assert report["trailing_chars"] == report["bytes"]  # ASCII: a character a byte
    assert len(report["trailing"]) == REPORTED_CHARS
    assert report["trailing"].startswith('data: {"choices":[{"index":0,"delta":{"content":"xxx')
    assert "one SSE event passed the size limit of 2000000 bytes" in stderr


def test_a_gzip_bombed_error_body_is_cut_and_bounded_in_the_report(
    cli: CliRunner, stub: StubServer
) -> None:
    code, report, stderr = headless(
        cli,
        weather(stub, "fault=gzip-bomb&mib=4096&error_code=500"),
        "--max-event-bytes",
        "2000000",
    )
    assert code == 1
    assert report["http_status"] == 500
    assert 2_000_000 < report["body_chars"] <= 2_000_000 + PIECE
    assert len(report["body"]) == REPORTED_CHARS
    assert report["error"].startswith('HTTP 500: {"error":{"message":"xxx')
    assert len(report["error"]) < 3000
    (limit,) = [a for a in report["anomalies"] if a["kind"] == "limit-reached"]
    assert "the response body passed the size limit of 2000000 bytes" in limit["detail"]
    assert len(stderr) < 3000
