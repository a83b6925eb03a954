"""Recordings and their replay: read with flat memory, checked line by line
(bundles are shared with strangers), and replayed to the report the live run
gave, including the response head and why the stream stopped."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.helpers.cli import CliRunner
from tests.helpers.oracles import scenario_report
from toolstream_stubs import StubServer, load_scenario
from toolstream_tui.core import StreamSession
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE
from toolstream_tui.sources import pump
from toolstream_tui.sources.base import (
    UNREADABLE,
    BodyChunk,
    ResponseHead,
    SourceItem,
    TransportError,
)
from toolstream_tui.sources.recording import Recorder, Tape, recorded, timing_path
from toolstream_tui.sources.replay import READ_PIECE, ReplaySource

DONE_STREAM = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def replay_items(path: Path, speed: float = 0) -> list[SourceItem]:
    async def collect() -> list[SourceItem]:
        return [item async for item in ReplaySource(path, speed=speed).items()]

    return asyncio.run(collect())


def replayed_report(cli: CliRunner, path: Path, *args: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    result = cli("--headless", "--replay", str(path), *args, timeout=60)
    return result.returncode, json.loads(result.stdout), result.stderr


def without_source(report: dict) -> dict:  # type: ignore[type-arg]
    return {key: value for key, value in report.items() if key != "source"}


# -- 13.6: bounded reading, limits, FIFOs and devices -------------------------------


def test_a_device_is_refused_at_once_in_one_line(cli: CliRunner) -> None:
    code, report, stderr = replayed_report(cli, Path("/dev/zero"))
    assert code == 1
    assert report["status"] == "error"
    assert report["bytes"] == 0
    assert stderr == (
        "toolstream-tui: cannot read recording /dev/zero: a character device, not a regular file\n"
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(cli: CliRunner, tmp_path: Path) -> None:
    fifo = tmp_path / "stream.sse"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    code, _, stderr = replayed_report(cli, fifo)
    assert code == 1
    assert stderr.splitlines() == [
        f"toolstream-tui: cannot read recording {fifo}: a FIFO, not a regular file"
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_timing_file_is_refused_without_blocking(cli: CliRunner, tmp_path: Path) -> None:
    body = tmp_path / "stream.sse"
    body.write_bytes(DONE_STREAM)
    os.mkfifo(timing_path(body))
    code, _, stderr = replayed_report(cli, body)
    assert code == 1
    assert "stream.sse.timing.jsonl is a FIFO, not a regular file" in stderr


def test_the_body_is_read_a_piece_at_a_time_even_for_one_huge_recorded_read(
    tmp_path: Path,
) -> None:
    body = tmp_path / "big.sse"
    body.write_bytes(DONE_STREAM * 20_000)  # 2.3 MB
    timing_path(body).write_text(json.dumps({"end": body.stat().st_size, "t": 0.5}) + "\n")
    chunks = [item for item in replay_items(body) if isinstance(item, BodyChunk)]
    assert max(len(chunk.data) for chunk in chunks) <= READ_PIECE
    assert b"".join(chunk.data for chunk in chunks) == body.read_bytes()
    assert {chunk.t for chunk in chunks} == {0.5}


def test_max_bytes_stops_reading_a_large_bare_recording(cli: CliRunner, tmp_path: Path) -> None:
    body = tmp_path / "big.sse"
    body.write_bytes(b"data: " + b"x" * 5_000_000)  # one endless event
    code, report, stderr = replayed_report(cli, body, "--max-bytes", "100000")
    assert code == EXIT_INCOMPLETE
    assert report["bytes"] == 100_000
    assert "size limit of 100000 bytes" in stderr


def test_max_event_bytes_stops_an_endless_event_in_a_recording(
    cli: CliRunner, tmp_path: Path
) -> None:
    body = tmp_path / "big.sse"
    body.write_bytes(b"data: " + b"x" * 5_000_000)
    code, report, _ = replayed_report(cli, body, "--max-event-bytes", "200000")
    assert code == EXIT_INCOMPLETE
    assert 200_000 < report["bytes"] <= 200_000 + READ_PIECE
    (limit,) = [a for a in report["anomalies"] if a["kind"] == "limit-reached"]
    assert "one SSE event passed the size limit of 200000 bytes" in limit["detail"]


def test_a_limit_stops_the_reading_of_a_recording(tmp_path: Path) -> None:
    body = tmp_path / "big.sse"
    body.write_bytes(b"data: " + b"x" * 1_000_000)
    timing_path(body).write_text(
        "".join(json.dumps({"end": end, "t": 0.0}) + "\n" for end in range(1000, 1_000_001, 1000))
    )
    source = ReplaySource(body, speed=0)
    session = StreamSession(source.label, max_event_bytes=10_000)
    asyncio.run(pump(source.items(), session, lambda events: None))
    assert session.state.bytes_received == 11_000  # 11 of the 1000 reads


# -- 13.8: hostile timing files -----------------------------------------------------


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"end":"x"}', 'end "x" is not a byte offset'),
        ('{"end":5,"t":"abc"}', 't "abc" is not a number of seconds'),
        ('{"t":"abc"}', 't "abc" is not a number of seconds'),
        ('{"end":5,"t":1e308}', "t 1e+308 is outside 0..86400 seconds"),
        ('{"end":5,"t":1e999}', "not JSON"),
        ('{"end":5,"t":NaN}', "not JSON"),
        ('{"end":5,"t":-1}', "t -1 is outside 0..86400 seconds"),
        (
            '{"end":5,"t":1' + "0" * 400 + "}",
            "t 1000000000000000000000000000000000000000… is outside",
        ),
        ('{"end":-5}', "end -5 is not a byte offset"),
        ('{"end":true}', "end true is not a byte offset"),
        ("not json", "not JSON"),
        ("[1,2]", "not a JSON object"),
        ('{"status":"abc"}', 'status "abc" is not an HTTP status'),
        ('{"status":200,"headers":[1]}', "headers are not an object of texts"),
        ('{"request":{"method":1}}', "method 1 is not text"),
        ('{"error":5}', "error 5 is not text"),
        ('{"error":"x","kind":"fun"}', 'kind "fun" is not one of'),
        ('{"format":"other/1"}', 'format "other/1" is not a toolstream recording'),
        ('{"hello":1}', "not a recording line"),
        ("[" * 100_000, "not JSON"),
    ],
    ids=lambda value: value[:30],
)
def test_a_hostile_timing_line_is_one_line_naming_it(
    cli: CliRunner, tmp_path: Path, line: str, why: str
) -> None:
    body = tmp_path / "bundle.sse"
    body.write_bytes(DONE_STREAM)
    timing_path(body).write_text('{"format":"toolstream-recording/2"}\n' + line + "\n")
    code, report, stderr = replayed_report(cli, body, "--speed", "1")
    assert code == 1
    assert report["status"] == "error"
    (line_shown,) = stderr.splitlines()
    assert line_shown.startswith(
        f"toolstream-tui: cannot read recording {body}: bundle.sse.timing.jsonl line 2: {why}"
    )


@pytest.mark.parametrize(
    "lines",
    [
        ['{"end":10,"t":1}', '{"end":5,"t":2}'],  # offsets go back
        ['{"end":10,"t":2}', '{"end":20,"t":1}'],  # time goes back
        ['{"end":10,"t":1}', '{"status":200,"content_type":"text/event-stream"}'],
    ],
)
def test_reads_that_go_back_are_refused(cli: CliRunner, tmp_path: Path, lines: list[str]) -> None:
    body = tmp_path / "r.sse"
    body.write_bytes(DONE_STREAM)
    timing_path(body).write_text("\n".join(lines) + "\n")
    code, _, stderr = replayed_report(cli, body)
    assert code == 1
    assert "r.sse.timing.jsonl line 2: " in stderr
    assert "Traceback" not in stderr


def test_an_overlong_timing_line_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    from toolstream_tui.sources import recording

    body = tmp_path / "r.sse"
    body.write_bytes(DONE_STREAM)
    timing_path(body).write_bytes(b'{"end":1,"t":0}\n' + b" " * (recording.MAX_TIMING_LINE + 10))
    (*_, stop) = replay_items(body)
    assert isinstance(stop, TransportError) and stop.kind == UNREADABLE
    assert stop.message.endswith(f"line 2: longer than {recording.MAX_TIMING_LINE} bytes")


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)
KEYS = st.sampled_from(
    ["end", "t", "error", "kind", "status", "content_type", "headers", "redirects", "request"]
)
RECORDS = st.dictionaries(KEYS, JSON_VALUES | st.integers(-10, 400), max_size=4)
LINES = st.one_of(
    RECORDS.map(json.dumps),
    st.text(max_size=20),
    st.binary(max_size=20).map(lambda data: data.decode("latin-1")),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(LINES, max_size=8))
@example(lines=['{"kind": [], "error": ""}'])  # once a TypeError: a list is not hashable
def test_any_timing_file_replays_or_names_its_bad_line(tmp_path: Path, lines: list[str]) -> None:
    body = tmp_path / "fuzz.sse"
    body.write_bytes(DONE_STREAM)
    timing_path(body).write_text("\n".join(line.replace("\n", " ") for line in lines) + "\n")
    source = ReplaySource(body, speed=1e6)  # paced: a day's wait is 0.09 s
    session = StreamSession(source.label)
    asyncio.run(asyncio.wait_for(pump(source.items(), session, lambda events: None), 5))
    assert session.ended
    error = session.state.error
    if error is not None and error.startswith("cannot read recording"):
        # a bad line is named; a read past the body's end, where the body ends
        assert " line " in error or "but its timing file records a read to byte" in error
        assert "\n" not in error


def test_a_body_shorter_than_its_timing_file_is_a_damaged_copy_not_a_cut(
    cli: CliRunner, tmp_path: Path
) -> None:
    """A recording keeps every byte it times: a body that ends sooner was cut after
    it was written (a partial copy), and replayed as a network cut it would blame
    the provider. One line, exit 1."""
    whole = tmp_path / "whole.sse"
    body = DONE_STREAM * 8
    whole.write_bytes(body)
    read_lines = [json.dumps({"t": 0.1 * n, "end": 30 * n}) for n in range(1, 6)]
    timing_path(whole).write_text("\n".join(read_lines) + "\n")
    copy = tmp_path / "copy.sse"
    copy.write_bytes(body[:100])
    timing_path(copy).write_text(timing_path(whole).read_text())
    code, report, stderr = replayed_report(cli, copy)
    assert (code, report["status"]) == (1, "error")
    assert "the body ends at byte 100, but its timing file records a read to byte 120" in stderr
    assert replayed_report(cli, whole)[0] != 1, "the whole copy replays"


# -- 13.9: the response head and why the stream stopped ------------------------------


@pytest.fixture
def weather() -> StubServer:
    with StubServer("weather", speed=0) as server:
        yield server


def live_and_replayed(
    cli: CliRunner, url: str, recording: Path, *args: str
) -> tuple[dict, dict, str]:  # type: ignore[type-arg]
    live = cli("--headless", "--url", url, "--record", str(recording), *args)
    replayed = cli("--headless", "--replay", str(recording))
    assert replayed.returncode == live.returncode
    return json.loads(live.stdout), json.loads(replayed.stdout), replayed.stderr


def test_a_replayed_429_shows_its_retry_after(
    cli: CliRunner, weather: StubServer, tmp_path: Path
) -> None:
    url = weather.scenario_url("weather") + "?fault=status&code=429&retry_after=9"
    live, replayed, stderr = live_and_replayed(cli, url, tmp_path / "429.sse")
    assert replayed["error"].startswith("HTTP 429 (Retry-After: 9): ")
    assert "HTTP 429 (Retry-After: 9)" in stderr
    assert without_source(replayed) == without_source(live)


def test_a_replayed_idle_timeout_is_an_idle_timeout(
    cli: CliRunner, weather: StubServer, tmp_path: Path
) -> None:
    url = weather.scenario_url("weather") + "?fault=stall&at=4&seconds=30"
    live, replayed, stderr = live_and_replayed(
        cli, url, tmp_path / "idle.sse", "--idle-timeout", "0.5"
    )
    kinds = [anomaly["kind"] for anomaly in replayed["anomalies"]]
    assert "idle-timeout" in kinds and "connection-lost" not in kinds
    assert replayed["status"] == "truncated"
    assert "no data for 0.5 s (--idle-timeout)" in stderr
    assert without_source(replayed) == without_source(live)


def test_a_replayed_redirect_is_shown(cli: CliRunner, weather: StubServer, tmp_path: Path) -> None:
    url = weather.scenario_url("weather") + "?fault=redirect&hops=2"
    live, replayed, _ = live_and_replayed(cli, url, tmp_path / "moved.sse")
    assert [a["kind"] for a in replayed["anomalies"]] == ["redirected"]
    assert without_source(replayed) == without_source(live)


def test_a_refused_connection_replays_as_the_error_it_was(cli: CliRunner, tmp_path: Path) -> None:
    recording = tmp_path / "refused.sse"
    live, replayed, _ = live_and_replayed(cli, "http://127.0.0.1:9/v1/x", recording)
    assert replayed["status"] == live["status"] == "error"
    assert without_source(replayed) == without_source(live)


def test_credentials_in_the_response_head_are_never_recorded(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "r.sse", "test")
    headers = {
        "Content-Type": "text/event-stream",
        "Set-Cookie": "session=s3cr3t",
        "Authorization": "Bearer s3cr3t",
        "Retry-After": "3",
    }
    recorder.write(ResponseHead(200, "text/event-stream", headers=headers))
    recorder.close()
    timing = timing_path(tmp_path / "r.sse").read_text()
    assert "s3cr3t" not in timing
    (head,) = replay_items(tmp_path / "r.sse")[:1]
    assert isinstance(head, ResponseHead)
    assert head.headers == {"Content-Type": "text/event-stream", "Retry-After": "3"}


# -- 13.10: both files or neither ---------------------------------------------------


def test_a_recording_whose_timing_file_cannot_be_opened_leaves_nothing_behind(
    cli: CliRunner, tmp_path: Path
) -> None:
    recording = tmp_path / "x.sse"
    timing_path(recording).mkdir()
    with pytest.raises(OSError):
        Recorder(recording, "test")
    assert not recording.exists()
    result = cli("--headless", "--scenario", "weather", "--speed", "0", "--record", str(recording))
    assert result.returncode == 0
    assert f"cannot record to {recording}" in result.stderr
    assert not recording.exists()


FULL_DISK = Path("/dev/full")  # Linux: every write to it fails with ENOSPC


@pytest.mark.skipif(not FULL_DISK.exists(), reason="no /dev/full on this system")
def test_a_recording_that_fills_the_disk_stops_and_the_watch_goes_on(
    cli: CliRunner, tmp_path: Path
) -> None:
    recording = tmp_path / "x.sse"
    recording.symlink_to(FULL_DISK)
    result = cli("--headless", "--scenario", "weather", "--speed", "0", "--record", str(recording))
    assert result.returncode == 0
    assert "Traceback" not in result.stderr
    (said,) = result.stderr.splitlines()
    assert said == (
        f"toolstream-tui: cannot record to {recording}: no space left on device; "
        "recording stopped, the first 0 bytes of the body kept"
    )
    assert json.loads(result.stdout)["tool_calls"][0]["arguments"] == {"location": "Beijing"}


class FailingOnRead(Recorder):
    """A recorder whose disk fills up at the body's read number `fails_at`."""

    def __init__(self, path: Path, fails_at: int) -> None:
        super().__init__(path, "test")
        self.reads, self.fails_at = 0, fails_at

    def write(self, item: SourceItem) -> None:
        if isinstance(item, BodyChunk):
            self.reads += 1
            if self.reads == self.fails_at:
                raise OSError(28, "No space left on device")
        super().write(item)


def test_a_recording_stopped_by_a_failed_write_keeps_what_it_wrote(tmp_path: Path) -> None:
    chunks = [BodyChunk(b"data: 1\n\n", 0.1), BodyChunk(b"data: 2\n\n", 0.2)]
    chunks.append(BodyChunk(b"data: [DONE]\n\n", 0.3))
    said: list[str] = []

    async def source() -> AsyncIterator[SourceItem]:
        for chunk in chunks:
            yield chunk

    async def passed() -> list[SourceItem]:
        recorder = FailingOnRead(tmp_path / "x.sse", fails_at=2)
        return [item async for item in recorded(source(), recorder, said.append)]

    assert asyncio.run(passed()) == chunks, "every item still passes"
    assert (tmp_path / "x.sse").read_bytes() == chunks[0].data
    assert said == [
        f"cannot record to {tmp_path / 'x.sse'}: no space left on device; "
        "recording stopped, the first 9 bytes of the body kept"
    ]
    replayed = [item for item in replay_items(tmp_path / "x.sse") if isinstance(item, BodyChunk)]
    assert replayed == [chunks[0]], "what was kept replays, with its time"


def test_a_recording_whose_body_cannot_be_opened_leaves_no_timing_file(tmp_path: Path) -> None:
    recording = tmp_path / "x.sse"
    recording.mkdir()
    with pytest.raises(OSError):
        Recorder(recording, "test")
    assert not timing_path(recording).exists()


# -- 15.13: a bare body is read by what it is ---------------------------------------


OLLAMA_LINE = (
    b'{"model":"m","created_at":"2025-07-07T20:00:00Z",'
    b'"message":{"role":"assistant","content":"Hel"},"done":false}\n'
)


@pytest.mark.parametrize("name", ["cut.ndjson", "cut.JSONL"])
def test_an_ndjson_file_cut_in_its_first_line_is_a_truncated_stream(
    cli: CliRunner, tmp_path: Path, name: str
) -> None:
    body = tmp_path / name
    body.write_bytes(OLLAMA_LINE[:50])
    code, report, _ = replayed_report(cli, body)
    assert (code, report["status"]) == (EXIT_INCOMPLETE, "truncated")
    assert report["trailing"] == OLLAMA_LINE[:50].decode()


def test_the_same_cut_bytes_under_another_name_are_a_json_response_that_does_not_parse(
    cli: CliRunner, tmp_path: Path
) -> None:
    body = tmp_path / "cut.json"
    body.write_bytes(OLLAMA_LINE[:50])
    code, report, _ = replayed_report(cli, body)
    assert (code, report["status"]) == (1, "error")
    assert report["error"].startswith("JSON response does not parse")


@pytest.mark.parametrize("scenario", ["json-completion", "gemini-array"])
@pytest.mark.parametrize("name", ["saved.jsonl", "saved.NDJSON"])
def test_a_whole_response_or_an_array_under_an_ndjson_name_is_read_as_what_it_is(
    cli: CliRunner, tmp_path: Path, scenario: str, name: str
) -> None:
    """The name says NDJSON only where the bytes cannot tell (one line cut short): a
    chat.completion saved on one line as .jsonl lost its calls and finished, exit 0."""
    body = tmp_path / name
    body.write_bytes(load_scenario(scenario).rendered)
    code, report, _ = replayed_report(cli, body)
    expected = scenario_report(scenario)
    assert (code, report["status"]) == (0, "finished")
    assert [c["arguments"] for c in report["tool_calls"]] == [
        c["arguments"] for c in expected["tool_calls"]
    ]


def test_random_bytes_are_not_an_sse_stream(cli: CliRunner, tmp_path: Path) -> None:
    body = tmp_path / "noise.sse"
    body.write_bytes(bytes(range(256)) * 8)
    code, report, stderr = replayed_report(cli, body)
    assert code == 1
    assert report["status"] == "error"
    assert report["error"].startswith("not an SSE stream (nor a JSON response): ")
    assert stderr.startswith("toolstream-tui: not an SSE stream")
    assert [a["kind"] for a in report["anomalies"]] == ["dialect-unknown"]


def test_an_empty_recording_says_so(cli: CliRunner, tmp_path: Path) -> None:
    body = tmp_path / "empty.sse"
    body.write_bytes(b"")
    code, report, stderr = replayed_report(cli, body)
    assert code == 1
    assert stderr == f"toolstream-tui: empty recording: {body}\n"
    assert [a["kind"] for a in report["anomalies"]] == ["dialect-unknown"]


@pytest.mark.parametrize(
    ("body", "dialect"),
    [
        (
            {
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": "hi",
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "f", "arguments": '{"a":1}'},
                                }
                            ],
                        },
                    }
                ],
            },
            "openai-chat",
        ),
        (
            {
                "type": "message",
                "role": "assistant",
                "stop_reason": "tool_use",
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}},
                ],
            },
            "anthropic",
        ),
        (
            {
                "object": "response",
                "status": "completed",
                "output": [
                    {
                        "type": "message",
                        "content": [{"type": "output_text", "text": "hi"}],
                    },
                    {
                        "type": "function_call",
                        "id": "fc_1",
                        "call_id": "call_1",
                        "name": "f",
                        "arguments": '{"a":1}',
                    },
                ],
            },
            "openai-responses",
        ),
    ],
    ids=["chat.completion", "message", "response"],
)
def test_a_saved_non_streaming_body_replays_as_the_complete_response(
    cli: CliRunner,
    tmp_path: Path,
    body: dict,
    dialect: str,  # type: ignore[type-arg]
) -> None:
    recording = tmp_path / "saved.json"
    recording.write_text(json.dumps(body, indent=2))
    code, report, _ = replayed_report(cli, recording)
    assert code == 0
    assert (report["status"], report["dialect"], report["text"]) == ("finished", dialect, "hi")
    assert [(c["id"], c["name"], c["arguments"]) for c in report["tool_calls"]] == [
        ("call_1", "f", {"a": 1})
    ]
    assert report["anomalies"] == []


def test_a_saved_completion_replays_as_the_url_read_it(cli: CliRunner, tmp_path: Path) -> None:
    from toolstream_stubs import load_scenario

    recording = tmp_path / "completion.json"
    recording.write_bytes(load_scenario("json-completion").rendered)
    live = json.loads(cli("--headless", "--scenario", "json-completion", "--speed", "0").stdout)
    _, replayed, _ = replayed_report(cli, recording)
    for report in (live, replayed):
        del report["source"], report["timing"]
    assert replayed == live


def test_a_capture_that_begins_mid_event_is_still_read_as_sse(
    cli: CliRunner, tmp_path: Path
) -> None:
    recording = tmp_path / "tail.sse"
    recording.write_bytes(b'ning"}}]}\n\n' + DONE_STREAM)
    code, report, _ = replayed_report(cli, recording)
    assert (code, report["status"], report["text"]) == (0, "finished", "hi")


@pytest.mark.parametrize("content_type", ["", "text/event-stream"])
def test_an_untyped_stream_cut_into_single_bytes_reads_as_sse(content_type: str) -> None:
    session = StreamSession("test")
    session.open(200, content_type)
    for at in range(len(DONE_STREAM)):
        session.feed(DONE_STREAM[at : at + 1], at / 1000)
    session.close(1.0)
    assert session.state.status.value == "finished"
    assert "".join(session.state.text) == "hi"
    assert session.state.anomalies == []


@given(
    st.lists(
        st.one_of(
            st.binary(min_size=1, max_size=40).map(lambda data: ("keep", data)),
            st.tuples(st.integers(0, 200), st.integers(0, 200)).map(lambda span: ("read", span)),
        ),
        max_size=30,
    )
)
def test_a_tape_read_between_reads_kept_gives_the_body_as_kept(
    steps: list[tuple[str, object]],
) -> None:
    """The raw log reads a tape while the stream is still being kept on it: each
    read gives the bytes kept so far, and what is kept after a read goes on at
    the body's end."""
    tape = Tape("test")
    kept = b""
    try:
        for number, (what, arg) in enumerate(steps):
            if what == "keep":
                assert isinstance(arg, bytes)
                tape.keep(BodyChunk(arg, float(number)))
                kept += arg
            else:
                assert isinstance(arg, tuple)
                start, end = arg
                assert tape.body(start, end) == kept[start:end]
        assert tape.length == len(kept)
        assert b"".join(item.data for item in tape.items() if isinstance(item, BodyChunk)) == kept
    finally:
        tape.close()
