"""The Bedrock dialect on event-stream frames: ConverseStream blocks by
`contentBlockIndex`, tool input appended, `messageStop` the finish, exception
frames the end; InvokeModelWithResponseStream chunks decoded and read as
Anthropic's events; a non-streaming Converse body; every departure named."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.streaming import Run, run
from toolstream_stubs.eventstream import event_frame, exception_frame, frame
from toolstream_tui.core import SSEEvent, StreamSession, build_report
from toolstream_tui.core.dialects.base import excerpt
from toolstream_tui.core.dialects.bedrock import CONVERSE_EVENTS, BedrockDialect
from toolstream_tui.core.dialects.detect import (
    dialect_of_completion,
    dialect_of_event,
    dialect_of_head,
)
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE

EVENTSTREAM = "application/vnd.amazon.eventstream"


def ev(kind: str, **fields: Any) -> bytes:
    return event_frame(kind, json.dumps(fields, ensure_ascii=False).encode())


def start() -> bytes:
    return ev("messageStart", role="assistant", p="abcdefghij")


def text(index: int, value: str) -> bytes:
    return ev("contentBlockDelta", contentBlockIndex=index, delta={"text": value}, p="abc")


def thought(index: int, **reasoning: Any) -> bytes:
    return ev("contentBlockDelta", contentBlockIndex=index, delta={"reasoningContent": reasoning})


def tool(index: int, call_id: str | None = "t1", name: str | None = "get_weather") -> bytes:
    use = {key: value for key, value in (("toolUseId", call_id), ("name", name)) if value}
    return ev("contentBlockStart", contentBlockIndex=index, start={"toolUse": use}, p="ab")


def tool_input(index: int, value: Any) -> bytes:
    return ev("contentBlockDelta", contentBlockIndex=index, delta={"toolUse": {"input": value}})


def stop(index: int) -> bytes:
    return ev("contentBlockStop", contentBlockIndex=index)


def message_stop(reason: str | None = "tool_use") -> bytes:
    return ev("messageStop", stopReason=reason) if reason else ev("messageStop")


def metadata() -> bytes:
    return ev("metadata", usage={"inputTokens": 3, "outputTokens": 5, "totalTokens": 8}, p="a")


def play(*frames: bytes, pieces: int | None = None) -> Run:
    return run(b"".join(frames), content_type=EVENTSTREAM, pieces=pieces)


# -- ConverseStream ----------------------------------------------------------------------


@pytest.mark.parametrize("pieces", [None, 1, 7])
def test_text_and_tool_uses_by_block_index(pieces: int | None) -> None:
    result = play(
        start(),
        text(0, "Weather in 北"),
        text(0, "京:"),
        stop(0),
        tool(1, "tu_1", "get_weather"),
        tool_input(1, '{"ci'),
        tool_input(1, 'ty": "Bei'),
        tool_input(1, 'jing"}'),
        stop(1),
        tool(2, "tu_2", "get_time"),
        tool_input(2, '{"tz": "\\u6771'),
        tool_input(2, '\\u4eac"}'),
        stop(2),
        message_stop("tool_use"),
        metadata(),
        pieces=pieces,
    )
    report = result.report
    assert (report["dialect"], report["status"], report["finish_reason"]) == (
        "bedrock",
        "finished",
        "tool_use",
    )
    assert report["text"] == "Weather in 北京:"
    assert [(c["index"], c["id"], c["name"]) for c in result.calls] == [
        (1, "tu_1", "get_weather"),
        (2, "tu_2", "get_time"),
    ]
    assert result.call(1)["arguments_raw"] == '{"city": "Beijing"}'
    assert result.args() == [{"city": "Beijing"}, {"tz": "東京"}]
    assert result.kinds == []


def test_each_fragment_is_appended_as_it_came() -> None:
    result = play(start(), tool(0), tool_input(0, '{"a":'), tool_input(0, "1}"), message_stop())
    slot = result.session.state.calls[0]
    assert slot.fragments() == ['{"a":', "1}"]
    assert list(slot.pieces.events) == [3, 4]


def test_reasoning_goes_to_its_channel_and_the_signature_stays_silent() -> None:
    result = play(
        start(),
        thought(0, text="Think "),
        thought(0, text="hard."),
        thought(0, signature="EqQBCkgIBhAB"),
        thought(0, redactedContent="c2VjcmV0"),
        stop(0),
        text(1, "Done."),
        stop(1),
        message_stop("end_turn"),
    )
    assert (result.report["reasoning"], result.report["text"]) == ("Think hard.", "Done.")
    assert result.kinds == []


def test_a_tool_use_with_no_input_or_an_empty_input_has_empty_arguments() -> None:
    result = play(
        start(),
        ev("contentBlockStart", contentBlockIndex=0, start={}),
        text(0, "Hi"),
        stop(0),
        tool(1),
        stop(1),
        tool(2),
        tool_input(2, ""),
        stop(2),
        message_stop(),
    )
    assert result.args() == [{}, {}]
    assert [c["arguments_raw"] for c in result.calls] == ["", ""]
    assert result.kinds == []


def test_a_stream_without_message_stop_is_truncated_with_the_partial_input_kept() -> None:
    result = play(start(), tool(0), tool_input(0, '{"path": "/et'))
    assert result.report["status"] == "truncated"
    assert result.calls[0]["arguments_raw"] == '{"path": "/et'
    assert result.code == EXIT_INCOMPLETE


def test_metadata_after_message_stop_is_usual_other_events_are_not() -> None:
    result = play(start(), text(0, "a"), stop(0), message_stop("end_turn"), metadata())
    assert result.kinds == []
    late = play(start(), message_stop("end_turn"), text(0, "b"))
    assert late.kinds == ["data-after-stop"]
    assert late.report["text"] == "b"


def test_a_padding_field_alone_means_nothing() -> None:
    result = play(start(), ev("contentBlockStop", contentBlockIndex=0, p="abc"), message_stop())
    assert "unknown-delta" not in result.kinds


# -- departures ---------------------------------------------------------------------------


def test_tool_input_without_a_start_is_kept_in_a_lane_of_its_own() -> None:
    result = play(start(), tool_input(3, '{"x": 1}'), stop(3), message_stop())
    assert result.anomaly("delta-without-start")["index"] == 3
    assert result.call(3)["arguments"] == {"x": 1}
    assert (result.call(3)["id"], result.call(3)["name"]) == (None, None)


def test_a_stop_for_a_block_never_seen() -> None:
    result = play(start(), stop(4), message_stop("end_turn"))
    assert result.anomaly("stop-without-start")["index"] == 4


@pytest.mark.parametrize(
    ("frames", "kind"),
    [
        ([text(0, "x"), message_stop("tool_use")], "finish-tools-without-calls"),
        ([tool(0), stop(0), message_stop("end_turn")], "finish-stop-with-tools"),
        ([message_stop(None)], "stop-reason-missing"),
        ([tool(0), message_stop()], "block-not-stopped"),
        ([tool(0), stop(0), stop(0), message_stop()], "block-stopped-twice"),
        ([tool(0), stop(0), tool_input(0, "{}"), message_stop()], "delta-after-stop"),
        ([tool(0), stop(0), tool(0, "t2"), stop(0), message_stop()], "block-index-reused"),
        ([text(0, "x"), tool_input(0, "{}"), stop(0), message_stop()], "delta-type-mismatch"),
        ([tool(0), tool_input(0, {"a": 1}), stop(0), message_stop()], "arguments-object"),
        ([ev("contentBlockDelta", delta={"text": "x"}), message_stop("end_turn")], "index-missing"),
        ([tool(0, call_id=None), stop(0), message_stop()], "id-missing"),
        ([tool(0, name=None), stop(0), message_stop()], "name-missing"),
        ([ev("guardrailTrace", x=1), message_stop("end_turn")], "unknown-event"),
        ([ev("contentBlockDelta", contentBlockIndex=0, delta={"video": 1})], "unknown-delta"),
        (
            [event_frame("contentBlockDelta", b"{not json"), message_stop("end_turn")],
            "data-not-json",
        ),
    ],
)
def test_each_departure_is_named(frames: list[bytes], kind: str) -> None:
    result = play(start(), *frames)
    assert kind in result.kinds, result.report["anomalies"]


def test_arguments_sent_as_an_object_are_kept_as_compact_json() -> None:
    result = play(start(), tool(0), tool_input(0, {"a": [1, 2]}), stop(0), message_stop())
    assert result.calls[0]["arguments_raw"] == '{"a":[1,2]}'
    assert result.args() == [{"a": [1, 2]}]


def test_a_reused_index_starts_a_new_lane_and_keeps_both_calls() -> None:
    result = play(
        start(), tool(0, "a"), tool_input(0, "{}"), stop(0), tool(0, "b"), stop(0), message_stop()
    )
    assert [(c["index"], c["id"]) for c in result.calls] == [(0, "a"), (1, "b")]


def test_an_out_of_range_index_takes_the_next_free_lane() -> None:
    result = play(start(), tool(2**64), stop(2**64), message_stop())
    assert result.anomaly("index-out-of-range")["index"] == 0
    assert result.calls[0]["index"] == 0


# -- exceptions -----------------------------------------------------------------------------


def test_an_exception_frame_ends_the_stream_with_its_message() -> None:
    message = {"message": "Too many tokens, please wait before trying again."}
    result = play(
        start(),
        tool(0),
        tool_input(0, '{"q": "ev'),
        exception_frame("throttlingException", json.dumps(message).encode()),
    )
    assert result.report["status"] == "error"
    assert result.report["error"] == (
        "error in stream: throttlingException: Too many tokens, please wait before trying again."
    )
    assert result.anomaly("error-event")["event"] == 4
    assert result.calls[0]["arguments_raw"] == '{"q": "ev'
    assert result.code == 1


def test_a_model_stream_error_says_what_the_model_said() -> None:
    body = {"message": "Model Stream Error", "originalStatusCode": 500, "originalMessage": "boom"}
    result = play(start(), exception_frame("modelStreamErrorException", json.dumps(body).encode()))
    assert result.report["error"] == (
        "error in stream: modelStreamErrorException: Model Stream Error"
        " (the model's own error: 500 boom)"
    )


def test_an_error_frame_and_an_exception_without_json() -> None:
    error = frame({":message-type": "error", ":error-code": "InternalFailure"}, b"it broke")
    result = play(start(), error)
    assert result.report["error"] == "error in stream: InternalFailure: it broke"
    result = play(start(), exception_frame("internalServerException", b"<html>"))
    assert result.report["error"] == "error in stream: internalServerException: <html>"


# -- InvokeModelWithResponseStream ------------------------------------------------------------


def chunk(event: dict[str, Any] | bytes) -> bytes:
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    return ev("chunk", bytes=base64.b64encode(raw).decode(), p="abcd")


ANTHROPIC_EVENTS: list[dict[str, Any]] = [
    {"type": "message_start", "message": {"id": "msg_bdrk_1", "role": "assistant", "content": []}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "On it."}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"x": '},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": "2}"},
    },
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
    {"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 5}},
]


@pytest.mark.parametrize("pieces", [None, 3])
def test_chunks_are_read_as_anthropic_events(pieces: int | None) -> None:
    result = play(*(chunk(event) for event in ANTHROPIC_EVENTS), pieces=pieces)
    report = result.report
    assert (report["dialect"], report["status"], report["finish_reason"]) == (
        "bedrock",
        "finished",
        "tool_use",
    )
    assert report["text"] == "On it."
    assert [(c["index"], c["id"], c["name"], c["arguments"]) for c in result.calls] == [
        (1, "toolu_1", "f", {"x": 2})
    ]
    assert list(result.session.state.calls[1].pieces.events) == [6, 7]
    assert result.kinds == []


def test_a_cut_invoke_stream_is_truncated() -> None:
    result = play(*(chunk(event) for event in ANTHROPIC_EVENTS[:6]))
    assert result.report["status"] == "truncated"
    assert result.calls[0]["arguments_raw"] == '{"x": '


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        (ev("chunk", bytes="not base64!"), "chunk-undecodable"),
        (chunk(b"\xff\xfe"), "chunk-undecodable"),
        (chunk(b"{not json"), "data-not-json"),
        (chunk({"outputText": "Titan says hi"}), "unknown-event"),
        (chunk({"type": ["message_start"]}), "unknown-event"),
        (ev("chunk", p="abc"), "unexpected-shape"),
        (event_frame("chunk", b"[]"), "unexpected-shape"),
    ],
)
def test_undecodable_chunks_are_named_not_raised(bad: bytes, kind: str) -> None:
    result = play(chunk(ANTHROPIC_EVENTS[0]), bad, *(chunk(e) for e in ANTHROPIC_EVENTS[1:]))
    assert result.kinds == [kind]
    assert result.anomaly(kind)["event"] == 2
    assert result.report["status"] == "finished"


def test_an_anthropic_error_inside_a_chunk_ends_the_stream() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    result = play(chunk(ANTHROPIC_EVENTS[0]), chunk(error))
    assert result.report["error"] == "error in stream: overloaded_error: Overloaded"


# -- detection and a complete Converse body -------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
        "chunk",
        "exception:throttlingException",
        "error:InternalFailure",
    ],
)
def test_the_event_type_alone_tells_bedrock(name: str) -> None:
    assert dialect_of_event(SSEEvent(1, name, "{}", None, None)) == "bedrock"


def test_the_media_type_tells_bedrock_and_an_untyped_event_does_not() -> None:
    assert dialect_of_head(EVENTSTREAM, {}) == "bedrock"
    assert dialect_of_head("text/event-stream", {}) is None
    untyped = SSEEvent(1, "", '{"contentBlockIndex":0}', None, None)
    assert not BedrockDialect.claims_event(untyped, {"contentBlockIndex": 0})


CONVERSE_BODY = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "Need a tool.", "signature": "s"}}},
                {"text": "Let me look."},
                {
                    "toolUse": {
                        "toolUseId": "tu_1",
                        "name": "get_weather",
                        "input": {"city": "Lyon"},
                    }
                },
                {"toolUse": {"toolUseId": "tu_2", "name": "get_time", "input": {}}},
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 30, "outputTokens": 20, "totalTokens": 50},
    "metrics": {"latencyMs": 900},
}


def test_a_converse_body_is_read_whole() -> None:
    assert dialect_of_completion(CONVERSE_BODY) == "bedrock"
    session = StreamSession("test")
    session.open(200, "application/json")
    session.feed(json.dumps(CONVERSE_BODY).encode(), 0.0)
    session.close(1.0)
    report = build_report(session.state)
    assert (report["dialect"], report["status"], report["finish_reason"]) == (
        "bedrock",
        "finished",
        "tool_use",
    )
    assert (report["reasoning"], report["text"]) == ("Need a tool.", "Let me look.")
    assert [(c["id"], c["name"], c["arguments"]) for c in report["tool_calls"]] == [
        ("tu_1", "get_weather", {"city": "Lyon"}),
        ("tu_2", "get_time", {}),
    ]
    assert report["anomalies"] == []


def test_other_bodies_with_an_output_are_not_bedrocks() -> None:
    assert dialect_of_completion({"output": [{"type": "message"}]}) != "bedrock"


# -- never raising ------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
# A provider event as a chunk carries it: JSON of any shape, base64-encoded.
ENCODED_EVENTS = (
    st.dictionaries(st.sampled_from(["type", "index", "delta", "content_block"]), JSON_VALUES)
    .map(json.dumps)
    .map(str.encode)
    .map(base64.b64encode)
    .map(bytes.decode)
)
EVENT_TYPES = st.sampled_from([*CONVERSE_EVENTS, "chunk", "other"])
PAYLOADS = st.fixed_dictionaries(
    {},
    optional={
        "contentBlockIndex": st.integers(-2, 3) | JSON_VALUES,
        "start": st.fixed_dictionaries({}, optional={"toolUse": JSON_VALUES}) | JSON_VALUES,
        "delta": st.dictionaries(
            st.sampled_from(["text", "toolUse", "reasoningContent", "citation"]), JSON_VALUES
        ),
        "stopReason": JSON_VALUES,
        "bytes": st.binary(max_size=20).map(base64.b64encode).map(bytes.decode)
        | ENCODED_EVENTS
        | JSON_VALUES,
    },
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(EVENT_TYPES, PAYLOADS), max_size=12))
def test_any_sequence_of_frames_never_raises(frames: list[tuple[str, dict[str, Any]]]) -> None:
    result = play(*(ev(kind, **fields) for kind, fields in frames))
    assert result.report["status"] in ("finished", "truncated", "error")


def test_a_frame_cut_short_is_named_with_each_byte_written_once() -> None:
    """The trailing text writes a byte that is not text as `\\xNN`: the anomaly
    quotes it as it is (through repr, each was written again, `\\\\xNN`)."""
    said = {"contentBlockIndex": 0, "delta": {"text": "hi"}}
    whole = event_frame("contentBlockDelta", json.dumps(said).encode())
    cut = whole + whole[:-9]
    session = StreamSession("test")
    session.open(200, "application/vnd.amazon.eventstream")
    session.feed(cut, 0.0)
    session.close(0.0)
    (anomaly,) = build_report(session.state)["anomalies"]
    assert anomaly["kind"] == "unterminated-event"
    trailing = whole[:-9].decode("utf-8", errors="backslashreplace")
    said_then = "bytes after the last complete event were not dispatched: "
    assert anomaly["detail"] == f"{said_then}'{excerpt(trailing)}'"
    assert "\\\\x" not in anomaly["detail"]
