"""The AWS event-stream framer (Bedrock): frames in, events out, however the bytes
are cut; every way a frame can be broken named as `frame-invalid` with the bytes
kept, decided from the prelude before the frame is held, never raising. botocore's
own decoder reads the same bytes as the oracle where it can."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import botocore.eventstream
import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer, EventStreamHeaderParser
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.cli import CliRunner
from tests.helpers.streaming import run, untimed
from toolstream_stubs.eventstream import event_frame, exception_frame, frame, header
from toolstream_tui.core import StreamSession, build_report
from toolstream_tui.core.eventstream import (
    MAX_HEADERS,
    MAX_PAYLOAD,
    EventStreamDecoder,
    looks_like_eventstream,
    read_headers,
)
from toolstream_tui.core.sse import SSEEvent

EVENTSTREAM = "application/vnd.amazon.eventstream"


def payload(**fields: object) -> bytes:
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()


def converse_body() -> bytes:
    """A short ConverseStream: text, a tool use, the stop."""
    return b"".join(
        [
            event_frame("messageStart", payload(role="assistant", p="abcdef")),
            event_frame("contentBlockDelta", payload(contentBlockIndex=0, delta={"text": "Hé 北"})),
            event_frame(
                "contentBlockStart",
                payload(contentBlockIndex=1, start={"toolUse": {"toolUseId": "t1", "name": "f"}}),
            ),
            event_frame(
                "contentBlockDelta",
                payload(contentBlockIndex=1, delta={"toolUse": {"input": "{}"}}),
            ),
            event_frame("contentBlockStop", payload(contentBlockIndex=1)),
            event_frame("messageStop", payload(stopReason="tool_use")),
        ]
    )


def decode(*pieces: bytes, limit: int | None = None) -> tuple[list[SSEEvent], list[str], str]:
    """Events, problems and the trailing text of `pieces` fed one by one."""
    decoder = EventStreamDecoder(limit) if limit else EventStreamDecoder()
    items = [item for piece in pieces for item in decoder.feed(piece)]
    problems = decoder.take_problems()
    _, trailing = decoder.close()
    events = [item for item in items if isinstance(item, SSEEvent)]
    return events, problems + decoder.take_problems(), trailing


def botocore_messages(body: bytes) -> list[tuple[str, bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    return [(message.headers[":event-type"], message.payload) for message in buffer]


def with_prelude(total: int, headers: int) -> bytes:
    prelude = struct.pack(">II", total, headers)
    return prelude + struct.pack(">I", zlib.crc32(prelude))


# -- frames, as botocore reads them ------------------------------------------------------


def test_the_stubs_frames_are_what_botocore_reads() -> None:
    body = converse_body()
    events, problems, trailing = decode(body)
    assert [(e.event, e.data.encode()) for e in events] == botocore_messages(body)
    assert problems == [] and trailing == ""
    assert events[1].data == '{"contentBlockIndex":0,"delta":{"text":"Hé 北"}}'


def typed(name: str, kind: int, value: bytes) -> bytes:
    return bytes([len(name)]) + name.encode() + bytes([kind]) + value


HEADERS_OF_EVERY_TYPE = b"".join(
    [
        typed("t", 0, b""),
        typed("f", 1, b""),
        typed("byte", 2, struct.pack(">b", -5)),
        typed("short", 3, struct.pack(">h", -300)),
        typed("int", 4, struct.pack(">i", 70000)),
        typed("long", 5, struct.pack(">q", -(2**40))),
        typed("bytes", 6, struct.pack(">H", 3) + b"\x00\xff\x01"),
        typed("string", 7, struct.pack(">H", 3) + "北".encode()),
        typed("time", 8, struct.pack(">q", 1700000000000)),
        typed("uuid", 9, bytes(range(16))),
        header(":event-type", "contentBlockStop"),
    ]
)


def test_every_header_type_reads_as_botocore_reads_it() -> None:
    headers, problem = read_headers(HEADERS_OF_EVERY_TYPE)
    assert problem is None
    assert headers == EventStreamHeaderParser().parse(HEADERS_OF_EVERY_TYPE)
    assert headers["short"] == -300 and headers["string"] == "北" and headers["t"] is True


def test_headers_of_other_types_do_not_hide_the_event_type() -> None:
    events, problems, _ = decode(frame({}, b"{}"))  # no headers at all
    assert (events[0].event, problems) == ("", [])
    raw = HEADERS_OF_EVERY_TYPE
    total = 12 + len(raw) + 2 + 4
    message = with_prelude(total, len(raw)) + raw + b"{}"
    body = message + struct.pack(">I", zlib.crc32(message))
    events, problems, _ = decode(body)
    assert (events[0].event, events[0].data, problems) == ("contentBlockStop", "{}", [])


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (typed("x", 42, b""), "header 'x': value type 42 does not exist"),
        (typed("x", 7, b"\x00"), "header 'x': its length runs past the end of the headers"),
        (typed("x", 7, b"\x00\x09abc"), "header 'x': its value runs past the end of the headers"),
        (typed("x", 4, b"\x00\x01"), "header 'x': its value runs past the end of the headers"),
        (b"\x05ab", "header 'ab' runs past the end of the headers"),
        (header("a", "1") + header("a", "2"), "header 'a' appears twice"),
    ],
)
def test_headers_that_do_not_read_are_named_and_the_frame_kept(raw: bytes, problem: str) -> None:
    assert read_headers(raw)[1] == problem
    message_length = 12 + len(raw) + 2 + 4
    message = with_prelude(message_length, len(raw)) + raw + b"{}"
    body = message + struct.pack(">I", zlib.crc32(message)) + event_frame("metadata", b"{}")
    events, problems, trailing = decode(body)
    assert [e.data for e in events] == ["{}", "{}"] and events[1].event == "metadata"
    assert problems == [f"frame 1: {problem}"] and trailing == ""


def test_exception_and_error_frames_are_named_by_their_type() -> None:
    error = frame(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}, b""
    )
    body = exception_frame("throttlingException", payload(message="slow down")) + error
    events, _, _ = decode(body)
    assert [(e.event, e.data) for e in events] == [
        ("exception:throttlingException", '{"message":"slow down"}'),
        ("error:InternalFailure", "boom"),
    ]


# -- cut anywhere -----------------------------------------------------------------------


def test_a_body_cut_at_every_byte_gives_the_same_events() -> None:
    body = converse_body()
    whole, _, _ = decode(body)
    assert len(whole) == 6
    for cut in range(len(body) + 1):
        assert decode(body[:cut], body[cut:]) == (whole, [], ""), cut
    assert decode(*(body[i : i + 1] for i in range(len(body))))[0] == whole


def test_a_frame_cut_short_at_every_byte_keeps_what_arrived() -> None:
    first = event_frame("messageStart", payload(role="assistant"))
    second = event_frame("contentBlockDelta", payload(contentBlockIndex=0, delta={"text": "北"}))
    for cut in range(len(second)):
        events, problems, trailing = decode(first + second[:cut])
        assert [e.event for e in events] == ["messageStart"], cut
        assert problems == []
        kept = second[:cut].decode("utf-8", errors="backslashreplace")
        assert trailing == kept, cut


def test_a_session_cut_mid_frame_is_truncated_with_the_tail_in_trailing() -> None:
    body = converse_body()
    cut = len(body) - 7  # inside messageStop
    result = run(body[:cut], content_type=EVENTSTREAM, pieces=5)
    assert result.report["status"] == "truncated"
    assert result.kinds == ["unterminated-event"]
    assert result.report["trailing_chars"] > 0
    assert result.calls[0]["arguments_raw"] == "{}"


@pytest.mark.parametrize("cut", [12, 30, 60])  # the prelude, into the headers, the payload
def test_an_untyped_body_cut_in_its_first_frame_is_still_bedrocks(cut: int) -> None:
    """Only Bedrock frames a stream so: its prelude tells the dialect before any
    frame is whole, and a cut there is not a stream of unknown dialect."""
    result = run(converse_body()[:cut], content_type="", pieces=1)
    assert result.report["dialect"] == "bedrock"
    assert (result.report["status"], result.kinds) == ("truncated", ["unterminated-event"])


# -- broken frames ------------------------------------------------------------------------


def test_a_bad_message_crc_is_named_and_the_frame_still_read() -> None:
    good = event_frame("messageStart", payload(role="assistant"))
    spoiled = event_frame("contentBlockDelta", payload(delta={"text": "x"}), bad_crc=True)
    with pytest.raises(ChecksumMismatch):
        botocore_messages(good + spoiled)
    events, problems, trailing = decode(good + spoiled + good)
    assert [e.event for e in events] == ["messageStart", "contentBlockDelta", "messageStart"]
    assert problems == ["frame 2: the message CRC32 does not match"] and trailing == ""


def test_each_problem_is_told_by_the_frame_it_concerns() -> None:
    """A session that takes the problems after each frame names each at its own
    event, however the body was cut."""
    spoiled = event_frame("metadata", b"{}", bad_crc=True)
    good = event_frame("messageStart", b"{}")
    decoder = EventStreamDecoder()
    items = decoder.feed(good + spoiled + good + spoiled + with_prelude(15, 0))
    assert len(items) == 4
    assert decoder.take_problems(1) == []
    assert decoder.take_problems(2) == ["frame 2: the message CRC32 does not match"]
    assert decoder.take_problems(3) == []
    assert decoder.take_problems(4) == [
        "frame 4: the message CRC32 does not match",
        "frame 5: a length of 15 bytes is impossible; the bytes from there on were not decoded",
    ]
    assert decoder.take_problems() == []


def test_a_session_names_a_spoiled_frame_at_its_own_event_however_cut() -> None:
    good = event_frame("contentBlockDelta", payload(contentBlockIndex=0, delta={"text": "a"}))
    spoiled = event_frame("contentBlockDelta", b"{not json", bad_crc=True)
    stop = event_frame("contentBlockStop", payload(contentBlockIndex=0))
    body = good + spoiled + good + stop + event_frame("messageStop", payload(stopReason="end_turn"))
    whole = untimed(run(body, content_type=EVENTSTREAM).report)
    assert [a["event"] for a in whole["anomalies"]] == [2, 2]
    for cut in range(1, len(body) + 1):
        result = run(body, content_type=EVENTSTREAM, pieces=cut)  # reads of `cut` bytes
        assert untimed(result.report) == whole, cut


def test_a_bad_prelude_crc_stops_the_framing_and_keeps_the_rest() -> None:
    good = event_frame("messageStart", payload(role="assistant"))
    spoiled = bytearray(event_frame("metadata", b"{}"))
    spoiled[9] ^= 0xFF
    events, problems, trailing = decode(good + bytes(spoiled) + good)
    assert [e.event for e in events] == ["messageStart"]
    assert problems == [
        "frame 2: the prelude's CRC32 does not match; the bytes from there on were not decoded"
    ]
    rest = bytes(spoiled) + good
    assert trailing == rest.decode("utf-8", errors="backslashreplace")


@pytest.mark.parametrize(
    ("prelude", "refusal"),
    [
        (
            with_prelude(MAX_HEADERS + 17, MAX_HEADERS + 1),
            botocore.eventstream.InvalidHeadersLength,
        ),
        (with_prelude(MAX_PAYLOAD + 17, 0), botocore.eventstream.InvalidPayloadLength),
    ],
)
def test_botocore_refuses_the_first_length_past_our_limits(
    prelude: bytes, refusal: type[Exception]
) -> None:
    """Our limits are botocore's: it too refuses a frame one byte past either."""
    buffer = botocore.eventstream.EventStreamBuffer()
    buffer.add_data(prelude)
    with pytest.raises(refusal):
        next(iter(buffer))


@pytest.mark.parametrize(
    "prelude", [with_prelude(MAX_HEADERS + 16, MAX_HEADERS), with_prelude(MAX_PAYLOAD + 16, 0)]
)
def test_botocore_waits_for_a_frame_at_our_limits(prelude: bytes) -> None:
    buffer = botocore.eventstream.EventStreamBuffer()
    buffer.add_data(prelude)
    assert list(buffer) == []  # a sound prelude: the frame's bytes have not come yet


@pytest.mark.parametrize(
    ("prelude", "problem"),
    [
        (with_prelude(15, 0), "a length of 15 bytes is impossible"),
        (with_prelude(100, 90), "a length of 100 bytes is impossible"),
        (with_prelude(MAX_HEADERS + 17, MAX_HEADERS + 1), f"{MAX_HEADERS + 1} bytes of headers"),
        (with_prelude(MAX_PAYLOAD + 17, 0), f"a payload of {MAX_PAYLOAD + 1} bytes"),
        (with_prelude(2**32 - 1, 0), f"a payload of {2**32 - 17} bytes"),
    ],
)
def test_impossible_or_over_limit_lengths_are_refused_from_the_prelude_alone(
    prelude: bytes, problem: str
) -> None:
    decoder = EventStreamDecoder()
    assert decoder.feed(prelude) == []
    (found,) = decoder.take_problems()
    assert found.startswith(f"frame 1: {problem}")
    assert decoder.broken and not decoder.oversized


def test_what_cannot_be_framed_is_held_no_further_than_max_event_bytes() -> None:
    decoder = EventStreamDecoder(max_event_bytes=1000)
    decoder.feed(with_prelude(15, 0))
    for _ in range(9):
        decoder.feed(b"x" * 100)
    assert not decoder.oversized
    decoder.feed(b"x" * 100)
    assert decoder.oversized


def test_a_frame_longer_than_max_event_bytes_is_refused_before_it_is_held() -> None:
    big = event_frame("contentBlockDelta", payload(delta={"text": "x" * 500}))
    decoder = EventStreamDecoder(max_event_bytes=200)
    assert decoder.feed(big[:12]) == [] and decoder.oversized
    events, problems, trailing = decode(event_frame("messageStart", b"{}") + big, limit=200)
    assert [e.event for e in events] == ["messageStart"]
    assert problems == [] and trailing == big.decode("utf-8", errors="backslashreplace")


def test_max_event_bytes_cuts_the_session_and_keeps_the_frame_in_trailing() -> None:
    big = event_frame("contentBlockDelta", payload(contentBlockIndex=0, delta={"text": "y" * 400}))
    body = event_frame("messageStart", b"{}") + big
    session = StreamSession("test", max_event_bytes=300)
    session.open(200, EVENTSTREAM)
    session.feed(body, 0.0)
    session.close(1.0)
    report = build_report(session.state)
    assert [a["kind"] for a in report["anomalies"]] == ["limit-reached"]
    assert report["status"] == "truncated"
    assert report["trailing_chars"] == len(big.decode("utf-8", errors="backslashreplace"))


# -- an untyped body -----------------------------------------------------------------------


def test_an_untyped_body_is_sniffed_as_an_event_stream() -> None:
    body = converse_body()
    assert looks_like_eventstream(body[:12]) and not looks_like_eventstream(b"data: {}\n\n")
    assert not looks_like_eventstream(body[:11])
    result = run(body, content_type="", pieces=5)
    assert result.session.mode == "eventstream"
    assert (result.report["dialect"], result.report["status"]) == ("bedrock", "finished")
    assert result.report["text"] == "Hé 北"


def test_a_replayed_capture_with_no_timing_file_reads_as_bedrock(
    cli: CliRunner, tmp_path: Path
) -> None:
    capture = tmp_path / "capture.eventstream"
    capture.write_bytes(converse_body())
    result = cli("--headless", "--replay", str(capture), "--speed", "0")
    report = json.loads(result.stdout)
    assert (report["dialect"], report["status"], report["text"]) == ("bedrock", "finished", "Hé 北")
    assert report["tool_calls"][0]["arguments"] == {}


# -- never raising --------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.builds(
            lambda flips, data: bytes(b ^ flips.get(i, 0) for i, b in enumerate(data)),
            st.dictionaries(st.integers(0, 400), st.integers(1, 255), max_size=4),
            st.just(converse_body()),
        ),
    ),
    cuts=st.lists(st.integers(1, 64), max_size=20),
)
def test_arbitrary_bytes_never_raise(body: bytes, cuts: list[int]) -> None:
    pieces, at = [], 0
    for size in cuts:
        pieces.append(body[at : at + size])
        at += size
    pieces.append(body[at:])
    assert decode(*pieces) == decode(body)
    result = run(body, content_type=EVENTSTREAM, pieces=7)
    assert result.report["status"] in ("finished", "truncated", "error")


@pytest.mark.parametrize("cut", [None, 7])
def test_a_content_block_index_past_64_bits_stays_exact_however_the_frames_are_cut(
    cut: int | None,
) -> None:
    """The decoder looks for runs of 19 digits once per read, not each payload: an
    index of 2**64 still finds its block, whichever read completes its frame."""
    big = 2**64
    start = {"toolUse": {"toolUseId": "t1", "name": "f"}}
    body = b"".join(
        [
            event_frame("contentBlockStart", payload(contentBlockIndex=big, start=start)),
            event_frame("contentBlockDelta", payload(p="x")),  # no digits: a read of its own
            event_frame(
                "contentBlockDelta",
                payload(contentBlockIndex=big, delta={"toolUse": {"input": '{"a": 1}'}}),
            ),
            event_frame("contentBlockStop", payload(contentBlockIndex=big)),
            event_frame("messageStop", payload(stopReason="tool_use")),
        ]
    )
    reads = [body] if cut is None else [body[at : at + cut] for at in range(0, len(body), cut)]
    session = StreamSession("test", live=False)
    session.open(200, EVENTSTREAM)
    for read in reads:
        session.feed(read, 0.1)
    session.close(0.2)
    report = build_report(session.state)
    assert [(c["name"], c["arguments"]) for c in report["tool_calls"]] == [("f", {"a": 1})]
    assert "index-out-of-range" in {a["kind"] for a in report["anomalies"]}


@settings(max_examples=200, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=12) | st.text(max_size=6).map(str.encode), max_size=5),
    spoiled=st.sets(st.integers(0, 4)),
)
def test_each_payload_reads_as_utf8_or_is_marked_not_utf8(
    payloads: list[bytes], spoiled: set[int]
) -> None:
    """A frame that is whole and sound is read on the short path; one that is not
    UTF-8 or whose message CRC fails still gives the same event, marked, and named."""
    frames = [event_frame("chunk", data) for data in payloads]
    for number in spoiled & set(range(len(frames))):  # the message CRC's last byte
        frames[number] = frames[number][:-1] + bytes([frames[number][-1] ^ 1])
    events, problems, trailing = decode(b"".join(frames))
    assert [(e.number, e.event, e.data, e.valid_utf8) for e in events] == [
        (n, "chunk", data.decode(errors="replace"), valid_utf8(data))
        for n, data in enumerate(payloads, 1)
    ]
    assert problems == [
        f"frame {n + 1}: the message CRC32 does not match"
        for n in sorted(spoiled)
        if n < len(frames)
    ]
    assert trailing == ""


def valid_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
