"""A model that repeats the key it was sent — cut across deltas, cut across
reads, JSON-escaped, in text, in arguments, in an error body — leaves no trace
of it in any output: the report, stderr, a recording, a bundle (report, SVG,
stream, README), a replay, a diff, the screen, the raw log, an export."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.apps import frozen_clock, wait_settled
from tests.helpers.cli import CliRunner
from toolstream_tui.app import ToolstreamApp
from toolstream_tui.core.redact import REDACTED
from toolstream_tui.sources.http import HttpRequest, HttpSource
from toolstream_tui.watching.options import WatchOptions

SECRET = "sk-live-SECRET123-a1b2c3"
# Stretches of the key that no output may hold (its first 3 characters may be let
# through before a cut: too few to hold a stream back for).
TRACES = ["live-SEC", "SECRET", "RET123", "a1b2c3", "\\u002dlive", "u002dSEC"]
Writes = list[bytes]  # the server's writes, each flushed on its own


def escaped(text: str) -> str:
    """`text` as a JSON string body with every `-` written as \\u002d."""
    return json.dumps(text)[1:-1].replace("-", "\\u002d")


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def raw_chunk(delta_json: str) -> bytes:
    """A chunk whose delta is given as JSON text (to keep an escape as written)."""
    head, tail = b'data: {"choices":[{"index":0,"delta":', b',"finish_reason":null}]}\n\n'
    return head + delta_json.encode() + tail


def echoing_stream(key: str) -> Writes:
    """What a model repeating `key` streams: cut across text deltas, cut across
    two reads, JSON-escaped in text and in arguments, cut across fragments."""
    arguments_start = '{"key":"' + key[:6]
    arguments_rest = key[6:] + '","escaped":"' + key.replace("-", "\\u002d") + '"}'
    split_event = chunk({"content": f" Again: {key}."})
    middle = split_event.index(b"SECRET") + 3
    return [
        chunk({"content": f"Your key is {key[:11]}"}),
        chunk({"content": f"{key[11:]}."}),
        raw_chunk('{"content":" Escaped: ' + escaped(key) + '."}'),
        split_event[:middle],
        split_event[middle:],
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "save_key", "arguments": arguments_start},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments_rest}}]}),
        chunk({}, "tool_calls") + b"data: [DONE]\n\n",
    ]


def error_body(key: str) -> bytes:
    message = "Incorrect API key provided: " + escaped(key)
    return ('{"error":{"message":"' + message + '","code":"invalid_api_key"}}').encode()


EXPECTED_TEXT = f"Your key is {REDACTED}. Escaped: {REDACTED}. Again: {REDACTED}."
EXPECTED_ARGUMENTS = {"key": REDACTED, "escaped": REDACTED}


class EchoServer(ThreadingHTTPServer):
    """Answers with what `answer(key)` gives for the Bearer key it was sent."""

    daemon_threads = True

    def __init__(self, answer: Callable[[str], tuple[int, str, Writes]]) -> None:
        self.answer = answer
        super().__init__(("127.0.0.1", 0), _EchoHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1/chat/completions"


class _EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: EchoServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        status, content_type, writes = self.server.answer(key)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        for piece in writes:
            self.wfile.write(b"%x\r\n%b\r\n" % (len(piece), piece))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def serving(answer: Callable[[str], tuple[int, str, Writes]]) -> Iterator[EchoServer]:
    server = EchoServer(answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def echo_stream() -> Iterator[EchoServer]:
    yield from serving(lambda key: (200, "text/event-stream", echoing_stream(key)))


@pytest.fixture
def echo_error() -> Iterator[EchoServer]:
    yield from serving(lambda key: (401, "application/json", [error_body(key)]))


def traces_in(text: str) -> list[str]:
    return [trace for trace in [SECRET, *TRACES] if trace in text]


def everything_under(directory: Path) -> str:
    return "".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    )


def test_an_echoed_key_reaches_no_report_recording_bundle_replay_or_diff(
    cli: CliRunner, echo_stream: EchoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHO_KEY", SECRET)
    files = tmp_path / "out"
    files.mkdir()
    recording, bundle = files / "live.sse", files / "bundle"
    live = cli(
        "--headless",
        "--url",
        echo_stream.url,
        "--api-key-env",
        "ECHO_KEY",
        "-d",
        '{"stream": true}',
        "--record",
        str(recording),
        "--bundle",
        str(bundle),
    )
    report = json.loads(live.stdout)
    assert live.returncode == 0, live.stderr
    assert report["text"] == EXPECTED_TEXT
    assert report["tool_calls"][0]["arguments"] == EXPECTED_ARGUMENTS
    assert sorted(path.name for path in bundle.iterdir()) == [
        "README.md",
        "report.json",
        "screen.svg",
        "stream.sse",
        "stream.sse.timing.jsonl",
    ]

    replayed = cli("--headless", "--replay", str(recording))
    from_bundle = cli("--headless", "--replay", str(bundle / "stream.sse"))
    for again in (replayed, from_bundle):
        assert again.returncode == 0
        # (timing is from times recorded to the microsecond: rates may differ in a digit)
        unrelated = {"source": "", "timing": None}
        assert {**json.loads(again.stdout), **unrelated} == {**report, **unrelated}
    diff = cli("diff", str(recording), str(bundle / "stream.sse"), "--headless")
    assert diff.returncode == 0, diff.stdout

    outputs = [live.stdout, live.stderr, replayed.stdout, from_bundle.stdout, diff.stdout]
    assert traces_in("".join(outputs) + everything_under(files)) == []


def test_an_echoed_key_in_an_escaped_error_body_is_redacted(
    cli: CliRunner, echo_error: EchoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHO_KEY", SECRET)
    recording = tmp_path / "error.sse"
    result = cli(
        "--headless", "--url", echo_error.url, "--api-key-env", "ECHO_KEY", "-X", "POST",
        "--record", str(recording),
    )  # fmt: skip
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert report["error"] == f"HTTP 401: Incorrect API key provided: {REDACTED}"
    assert json.loads(report["body"])["error"]["message"].endswith(REDACTED)
    assert traces_in(result.stdout + result.stderr + everything_under(tmp_path)) == []


async def test_an_echoed_key_reaches_neither_the_screen_nor_an_export_nor_a_bundle(
    echo_stream: EchoServer, tmp_path: Path
) -> None:
    request = HttpRequest(
        url=echo_stream.url, method="POST", headers={"Authorization": f"Bearer {SECRET}"}
    )
    app = ToolstreamApp(
        HttpSource(request, clock=frozen_clock),
        WatchOptions(clock=frozen_clock, output_dir=tmp_path),
    )
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_settled(app)
        screens = [app.export_screenshot()]
        await pilot.press("l")  # the raw log shows every event as it came
        await pilot.pause()
        screens.append(app.export_screenshot())
        await pilot.press("i")  # the inspector shows every fragment
        await pilot.pause()
        screens.append(app.export_screenshot())
        await pilot.press("escape", "e", "b")
        await pilot.pause()
    exported = json.loads((tmp_path / "toolstream-report.json").read_text(encoding="utf-8"))
    assert exported["text"] == EXPECTED_TEXT
    assert "[REDACTED]" in screens[0].replace("&#160;", " ")
    assert traces_in("".join(screens) + everything_under(tmp_path)) == []
