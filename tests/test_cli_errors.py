"""Error paths end with one clear line on stderr, the right exit code, and
everything received kept in the report — never a traceback."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from streaming import assert_close_timing, untimed

from conftest import CliRunner
from toolstream_stubs import StubServer

PARTIAL_BODY = (
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_cut",'
    b'"type":"function","function":{"name":"get_weather","arguments":""}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
    b'{"arguments":"{\\"city\\":\\"Ber"}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"tool_ca'
)


@pytest.fixture
def cutting_server() -> Iterator[str]:
    """Sends a chunked SSE response, then drops the connection mid-chunk."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve_once() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            head = (
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            chunk = b"%x\r\n" % (len(PARTIAL_BODY) + 100) + PARTIAL_BODY
            connection.sendall(head + chunk)

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/v1/chat/completions"
    thread.join(timeout=10)
    listener.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_connection_refused_names_the_url(cli: CliRunner) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1/chat/completions"
    result = cli("--headless", "--url", url, "--timeout", "5")
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert report["status"] == "error"
    assert report["error"] == f"connection refused: {url}"
    assert result.stderr.strip() == f"toolstream-tui: connection refused: {url}"
    assert "Traceback" not in result.stderr


def test_stream_cut_mid_arguments_is_truncated_with_the_partial_buffer(
    cli: CliRunner, cutting_server: str
) -> None:
    result = cli("--headless", "--url", cutting_server, "--timeout", "10")
    report = json.loads(result.stdout)
    assert result.returncode == 2
    assert report["status"] == "truncated"
    (call,) = report["tool_calls"]
    assert call["arguments_raw"] == '{"city":"Ber'
    assert call["arguments"] is None
    assert "before the finish" in call["error"]
    kinds = {anomaly["kind"] for anomaly in report["anomalies"]}
    assert {"connection-lost", "unterminated-event"} <= kinds
    assert '{"choices":[{"index":0,"delta":{"tool_ca' in report["trailing"]
    assert "truncated" in result.stderr
    assert "Traceback" not in result.stderr


def test_request_method_body_and_headers_reach_the_server(cli: CliRunner, tmp_path: Path) -> None:
    body = tmp_path / "request.json"
    body.write_text('{"model": "m", "stream": true}', encoding="utf-8")
    with StubServer("weather", speed=0) as server:
        result = cli(
            "--headless",
            "--url",
            server.url,
            "-d",
            f"@{body}",
            "-H",
            "Authorization: Bearer sk-test",
            "-H",
            "X-Trace: 42",
        )
        (request,) = server.requests
    assert result.returncode == 0
    assert request.method == "POST"
    assert request.body == body.read_bytes()
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["x-trace"] == "42"
    assert headers["content-type"] == "application/json"


def test_without_data_the_request_is_a_get(cli: CliRunner) -> None:
    with StubServer("weather", speed=0) as server:
        assert cli("--headless", "--url", server.url).returncode == 0
        assert cli("--headless", "--url", server.url, "-X", "post").returncode == 0
        methods = [request.method for request in server.requests]
    assert methods == ["GET", "POST"]


def test_recording_replays_to_the_same_report(cli: CliRunner, tmp_path: Path) -> None:
    recording = tmp_path / "demo.sse"
    with StubServer("demo", split="random", seed=5, speed=0) as server:
        live = cli("--headless", "--url", server.url, "--record", str(recording))
    replayed = cli("--headless", "--replay", str(recording), "--speed", "0")
    live_report, replay_report = json.loads(live.stdout), json.loads(replayed.stdout)
    assert live.returncode == replayed.returncode == 0
    assert replay_report["source"] == str(recording)
    for report in (live_report, replay_report):
        del report["source"]
    assert untimed(replay_report) == untimed(live_report)
    assert_close_timing(replay_report["timing"], live_report["timing"])
    assert recording.read_bytes().startswith(b"data: ")


def test_a_bare_sse_file_replays(cli: CliRunner, tmp_path: Path) -> None:
    body = tmp_path / "cut.sse"
    body.write_bytes(PARTIAL_BODY)
    result = cli("--headless", "--replay", str(body), "--speed", "0")
    report = json.loads(result.stdout)
    assert result.returncode == 2
    assert report["tool_calls"][0]["arguments_raw"] == '{"city":"Ber'


def test_http_error_recording_replays_as_the_same_error(cli: CliRunner, tmp_path: Path) -> None:
    recording = tmp_path / "401.sse"
    with StubServer("http-401", speed=0) as server:
        live = cli("--headless", "--url", server.url, "--record", str(recording))
    replayed = cli("--headless", "--replay", str(recording))
    assert live.returncode == replayed.returncode == 1
    assert json.loads(replayed.stdout)["error"] == json.loads(live.stdout)["error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "nope"], "unknown scenario 'nope'; known: "),
        (["--url", "http://127.0.0.1:9/", "-H", "no colon"], "is not of the form 'Name: value'"),
        (["--url", "http://127.0.0.1:9/", "-d", "@/no/such/file"], "cannot read request body"),
        (["--replay", "/no/such/file.sse"], "cannot read recording /no/such/file.sse"),
    ],
)
def test_bad_input_gets_one_clear_line(cli: CliRunner, args: list[str], message: str) -> None:
    result = cli("--headless", *args)
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.returncode in (1, 2)


def test_list_scenarios_names_each_with_a_description(cli: CliRunner) -> None:
    result = cli("--list-scenarios")
    lines = result.stdout.splitlines()
    assert result.returncode == 0
    names = {line.split()[0] for line in lines}
    assert {"demo", "weather", "huge-args", "many-parallel", "http-401"} <= names
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)
