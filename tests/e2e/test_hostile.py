"""Hostile streams and bad networks: clear outcomes, nothing lost, nothing that
can steer the terminal. (Fuzzing lives in test_fuzz.py.)"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.apps import frozen_clock, wait_settled
from tests.helpers.cli import CliRunner
from tests.helpers.waiting import until
from toolstream_stubs import StubServer
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.core import build_report
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE
from toolstream_tui.core.session import StreamSession
from toolstream_tui.sources.http import HttpRequest, HttpSource, trusting_no_certificate
from toolstream_tui.sources.replay import ReplaySource
from toolstream_tui.watching.options import WatchOptions

HOSTILE = (
    "[b]x[/b] \x1b]52;c;aGk=\x07 \x1b]0;title\x07 \x9b31m \u202eevil\u202c zero\u200bwidth \x7f"
)


def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


def hostile_body() -> bytes:
    call = {"index": 0, "id": "call_\x1b[2J", "function": {"name": "n\u202e", "arguments": ""}}
    return (
        chunk({"content": HOSTILE})
        + chunk({"tool_calls": [call]})
        + chunk(
            {"tool_calls": [{"index": 0, "function": {"arguments": json.dumps({"a": HOSTILE})}}]}
        )
        + chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )


ARGUMENTS = json.dumps({"a": HOSTILE})
TERMINAL_ACTIVE = ["\x1b", "\x07", "\x9b", "\u202e", "\u202c", "\u200b", "\x7f"]


def test_headless_output_cannot_steer_the_terminal(cli: CliRunner, tmp_path: Path) -> None:
    recording = tmp_path / "hostile.sse"
    recording.write_bytes(hostile_body())
    result = cli("--headless", "--replay", str(recording))
    assert result.returncode == 0
    for char in TERMINAL_ACTIVE:
        assert char not in result.stdout, repr(char)
        assert char not in result.stderr, repr(char)
    report = json.loads(result.stdout)
    assert report["text"] == HOSTILE  # the values are exact; only their spelling is inert
    assert report["tool_calls"][0]["arguments"] == {"a": HOSTILE}
    assert report["tool_calls"][0]["name"] == "n\u202e"


def test_invalid_utf8_is_replaced_flagged_and_recorded_as_received(
    cli: CliRunner, tmp_path: Path
) -> None:
    body = chunk({"content": "ok "})[:-2].replace(b"ok ", b"ok \xff\xfe") + b"\n\n"
    body += chunk({}, "stop") + b"data: [DONE]\n\n"
    source = tmp_path / "bad.sse"
    source.write_bytes(body)
    result = cli("--headless", "--replay", str(source), "--record", str(tmp_path / "copy.sse"))
    report = json.loads(result.stdout)
    assert report["text"] == "ok \ufffd\ufffd"
    (flag,) = [a for a in report["anomalies"] if a["kind"] == "invalid-utf8"]
    assert flag["event"] == 1
    assert (tmp_path / "copy.sse").read_bytes() == body


def test_total_size_limit_ends_the_stream_as_truncated_keeping_what_came(
    cli: CliRunner,
) -> None:
    result = cli("--headless", "--scenario", "huge-args", "--speed", "0", "--max-bytes", "50000")
    report = json.loads(result.stdout)
    assert result.returncode == EXIT_INCOMPLETE
    assert report["status"] == "truncated"
    assert report["bytes"] == 50000
    (limit,) = [a for a in report["anomalies"] if a["kind"] == "limit-reached"]
    assert "50000 bytes" in limit["detail"]
    assert report["tool_calls"][0]["arguments_raw"].startswith('{"document":"stub-doc"')
    assert "size limit" in result.stderr


def test_event_size_limit_cuts_an_endless_event() -> None:
    session = StreamSession("test", max_event_bytes=1000)
    session.open(200, "text/event-stream")
    session.feed(b'data: {"choices":[]}\n\n', 0.0)
    session.feed(b"data: " + b"x" * 2000, 1.0)
    assert session.ended
    assert session.state.status.value == "truncated"
    assert [a.kind for a in session.state.anomalies if a.kind == "limit-reached"]
    assert session.state.trailing.startswith("data: xxx")
    assert session.feed(b"more\n\n", 2.0) == []  # nothing taken after the cut


def test_event_size_limit_cuts_an_event_that_arrives_whole_in_one_read() -> None:
    first = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    big = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 2000 + b'"}}]}\n\n'
    session = StreamSession("test", max_event_bytes=1000)
    session.open(200, "text/event-stream")
    session.feed(first + big + b"data: [DONE]\n\n", 0.0)
    assert session.ended
    state = session.state
    assert state.status.value == "truncated"
    assert state.events == 1 and build_report(state)["text"] == "hi"
    kinds = [a.kind for a in state.anomalies]
    assert "limit-reached" in kinds and "unterminated-event" not in kinds
    assert state.trailing == (big + b"data: [DONE]\n\n").decode()  # the rest as it came


def test_max_event_bytes_holds_for_a_scenario_whose_events_arrive_whole(cli: CliRunner) -> None:
    result = cli("--headless", "--scenario", "weather", "--speed", "0", "--max-event-bytes", "100")
    report = json.loads(result.stdout)
    assert result.returncode == EXIT_INCOMPLETE
    assert report["status"] == "truncated"
    (limit,) = [a for a in report["anomalies"] if a["kind"] == "limit-reached"]
    assert "100 bytes" in limit["detail"]
    assert report["trailing"].startswith("data: {")
    assert "size limit of 100 bytes" in result.stderr


@pytest.fixture
def plain_http_server() -> Iterator[int]:
    """Answers anything with a plain HTTP response: an https client fails its handshake."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(4096)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    yield port
    listener.close()
    thread.join(timeout=5)


def test_tls_failure_is_one_clear_line(cli: CliRunner, plain_http_server: int) -> None:
    url = f"https://127.0.0.1:{plain_http_server}/v1/chat/completions"
    result = cli("--headless", "--url", url, "--timeout", "5")
    assert result.returncode == 1
    assert result.stderr.startswith(f"toolstream-tui: TLS failure connecting to {url}")
    assert "Traceback" not in result.stderr


def test_the_embedded_stubs_tls_verifies_and_trusts_nobody() -> None:
    """The demo skips loading the system's certificates; it must not skip checking:
    a redirect from the stub to HTTPS would fail to verify."""
    context = trusting_no_certificate()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.get_ca_certs() == []


def test_unwritable_recording_is_reported_and_the_watch_goes_on(cli: CliRunner) -> None:
    result = cli("--headless", "--scenario", "weather", "--speed", "0", "--record", "/no/dir/x.sse")
    assert "cannot record to /no/dir/x.sse" in result.stderr
    assert result.returncode == 0
    assert json.loads(result.stdout)["tool_calls"][0]["arguments"] == {"location": "Beijing"}


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
async def test_a_recording_that_fills_the_disk_is_said_and_the_app_watches_on(
    tmp_path: Path,
) -> None:
    recording = tmp_path / "full.sse"
    recording.symlink_to("/dev/full")  # every write fails with ENOSPC
    with StubServer("weather", speed=0) as server:
        source = HttpSource(HttpRequest(url=server.url), clock=frozen_clock)
        app = ToolstreamApp(source, WatchOptions(record=recording, clock=frozen_clock))
        async with app.run_test(size=(120, 36)):
            await wait_settled(app)
            assert app.session.state.calls[0].arguments == {"location": "Beijing"}
            assert app.session.state.error is None
            messages = [notification.message for notification in app._notifications]
    assert any(
        message.startswith(f"cannot record to {recording}: no space left on device")
        for message in messages
    ), messages


async def test_hostile_output_is_inert_on_screen(tmp_path: Path) -> None:
    """Text pane, lane title, tree, raw log, inspector: visible and inert."""
    recording = tmp_path / "hostile.sse"
    recording.write_bytes(hostile_body())
    app = ToolstreamApp(
        ReplaySource(recording, speed=0, clock=frozen_clock), WatchOptions(clock=frozen_clock)
    )
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_settled(app)
        await pilot.press("l")
        await pilot.pause()
        screens = [app.export_screenshot()]
        await pilot.press("i")
        await pilot.pause()
        screens.append(app.export_screenshot())
    for svg in screens:
        for char in TERMINAL_ACTIVE:
            assert char not in svg, repr(char)
    visible = screens[0].replace("&#160;", " ")
    assert "[b]x[/b] ␛]52;c;aGk=␇" in visible
    assert "¤evil¤" in visible


async def test_quitting_mid_stream_leaves_a_recording_that_replays_what_was_seen(
    cli: CliRunner, tmp_path: Path
) -> None:
    recording = tmp_path / "quit.sse"
    with StubServer("demo", speed=0) as server:
        url = server.scenario_url("demo") + "?fault=stall&at=12&seconds=30"
        source = HttpSource(HttpRequest(url=url, timeout=30), clock=frozen_clock)
        app = ToolstreamApp(source, WatchOptions(record=recording, clock=frozen_clock))
        async with app.run_test(size=(120, 36)) as pilot:
            await until(
                pilot, lambda: app.session.state.events >= 12, "12 events (the stub then stalls)"
            )
            seen = build_report(app.session.state)
            await pilot.press("q")
    replayed = json.loads(cli("--headless", "--replay", str(recording)).stdout)
    assert replayed["status"] == "truncated"
    assert replayed["text"] == seen["text"]
    assert [c["arguments_raw"] for c in replayed["tool_calls"]] == [
        c["arguments_raw"] for c in seen["tool_calls"]
    ]
    assert replayed["events"] == seen["events"]


async def test_an_unwritable_export_path_is_reported_and_the_watch_goes_on(
    tmp_path: Path,
) -> None:
    with StubServer("weather", speed=0) as server:
        source = HttpSource(HttpRequest(url=server.url), clock=frozen_clock)
        app = ToolstreamApp(
            source, WatchOptions(clock=frozen_clock, output_dir=tmp_path / "missing")
        )
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_settled(app)
            await pilot.press("e")
            await pilot.pause()
            messages = [notification.message for notification in app._notifications]
            assert any("cannot export to" in message for message in messages)
            await pilot.press("r")
            await wait_settled(app)
            assert app.stream.lanes.lanes[0].view.state == "parsed"
            assert app.session.state.calls[0].arguments == {"location": "Beijing"}
