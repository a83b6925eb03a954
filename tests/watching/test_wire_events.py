"""The raw log's events, decoded again from a tape, are the wire events the
session numbered, whatever the framing and however the body was cut into reads."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from toolstream_stubs import load_scenario
from toolstream_tui.core import StreamSession
from toolstream_tui.core.events import WireEvent
from toolstream_tui.sources.base import BodyChunk, ResponseHead
from toolstream_tui.sources.recording import Tape
from toolstream_tui.watching.wire_events import WireEvents

Event = tuple[int, str, str]  # number, event type, data

NDJSON = b'{"a":1}\n\n{"b":2}\r\n{"c":3}'  # a blank line, a CRLF, no last newline
ARRAY = b'[{"a":1}\r\n,{"b":[2]}\r\n,"three"]'
SSE = b': hello\n\ndata: {"a":1}\n\nevent: x\ndata: {"b":2}\n\n: bye\n'


def session_events(status: int, content_type: str, chunks: list[bytes]) -> list[Event]:
    session = StreamSession("test")
    said = session.open(status, content_type, {}, 0.0)
    for t, chunk in enumerate(chunks):
        said += session.feed(chunk, float(t))
    said += session.close(float(len(chunks)))
    return [(e.number, e.event, e.data) for e in said if isinstance(e, WireEvent)]


def logged_events(status: int, content_type: str, chunks: list[bytes]) -> list[Event]:
    tape = Tape("test")
    tape.keep(ResponseHead(status, content_type))
    for t, chunk in enumerate(chunks):
        tape.keep(BodyChunk(chunk, float(t)))
    wire = WireEvents(tape)
    try:
        assert wire.index(60.0, complete=True), "a minute decodes a few hundred bytes"
        lines = [wire.line(n) for n in range(len(wire))]
    finally:
        wire.close()
        tape.close()
    return [(line.number, line.event, line.data) for line in lines if not line.comment]


def byte_by_byte(body: bytes) -> list[bytes]:
    return [body[i : i + 1] for i in range(len(body))]


BEDROCK = load_scenario("bedrock-text-tools")
BEDROCK_BODY, BEDROCK_EVENTS = b"".join(BEDROCK.events), len(BEDROCK.events)


@pytest.mark.parametrize(
    ("status", "content_type", "body", "count"),
    [
        pytest.param(200, "text/event-stream", SSE, 2, id="sse"),
        pytest.param(200, "application/x-ndjson", NDJSON, 3, id="ndjson"),
        pytest.param(200, "", NDJSON, 3, id="untyped-ndjson"),  # told by its first bytes
        pytest.param(200, "application/json; charset=UTF-8", ARRAY, 3, id="json-array"),
        pytest.param(200, "", ARRAY, 3, id="untyped-json-array"),
        pytest.param(200, BEDROCK.content_type, BEDROCK_BODY, BEDROCK_EVENTS, id="eventstream"),
        pytest.param(200, "", BEDROCK_BODY, BEDROCK_EVENTS, id="untyped-eventstream"),
        pytest.param(500, "application/x-ndjson", b'{"error":"no"}\n', 0, id="error-no-events"),
    ],
)
@pytest.mark.parametrize("cut", [lambda body: [body], byte_by_byte], ids=["whole", "bytes"])
def test_the_log_numbers_the_events_the_session_numbered(
    status: int, content_type: str, body: bytes, count: int, cut: Callable[[bytes], list[bytes]]
) -> None:
    chunks = cut(body)
    expected = session_events(status, content_type, chunks)
    assert len(expected) == count
    assert logged_events(status, content_type, chunks) == expected


def test_an_untyped_body_waits_for_the_bytes_that_tell_its_framing() -> None:
    """Until its first bytes tell the framing, nothing is decoded, and the log has
    caught up with what can be decoded; once they do, the events come."""
    tape = Tape("test")
    tape.keep(ResponseHead(200, ""))
    tape.keep(BodyChunk(b'{"a":1}', 0.0))
    wire = WireEvents(tape)
    try:
        assert wire.index(60.0) and len(wire) == 0
        tape.keep(BodyChunk(b'\n{"b":2}\n', 1.0))
        assert wire.index(60.0)
        assert [wire.line(n).data for n in range(len(wire))] == ['{"a":1}', '{"b":2}']
    finally:
        wire.close()
        tape.close()
