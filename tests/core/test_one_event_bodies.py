"""A body that is one JSON value: a complete (non-streaming) response is read as
one, but one event of a stream (a stream cut after its first event, saved or sent
as one body) is a stream of that one event, reported as the same bytes are when
they come as SSE. And a stream cut inside its first event is truncated, its bytes
kept, however it is framed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.streaming import Run, run
from toolstream_tui.core.dialects.detect import DIALECTS
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE

NDJSON = "application/x-ndjson"
UNTYPED = ""

CHAT_CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "model": "m",
    "choices": [
        {
            "index": 0,
            "delta": {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a":'},
                    }
                ]
            },
            "finish_reason": None,
        }
    ],
}
OLLAMA_LINE = {
    "model": "llama3.2",
    "created_at": "2025-07-07T20:22:19.184789Z",
    "message": {"role": "assistant", "content": "Hel"},
    "done": False,
}
ANTHROPIC_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude",
        "stop_reason": None,
    },
}
RESPONSES_CREATED = {
    "type": "response.created",
    "sequence_number": 0,
    "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []},
}
COHERE_CALL_START = {
    "type": "tool-call-start",
    "index": 0,
    "delta": {
        "message": {
            "tool_calls": {
                "id": "call_1",
                "type": "function",
                "function": {"name": "f", "arguments": '{"a":'},
            }
        }
    },
}
UI_TEXT_DELTA = {"type": "text-delta", "id": "t1", "delta": "Hel"}

ONE_EVENT = [
    pytest.param(CHAT_CHUNK, "openai-chat", id="chat-chunk"),
    pytest.param(OLLAMA_LINE, "ollama", id="ollama-line"),
    pytest.param(ANTHROPIC_START, "anthropic", id="anthropic-event"),
    pytest.param(RESPONSES_CREATED, "openai-responses", id="responses-event"),
    pytest.param(COHERE_CALL_START, "cohere", id="cohere-event"),
    pytest.param(UI_TEXT_DELTA, "ai-sdk-ui", id="ui-message-part"),
]


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def outcome(r: Run) -> tuple[Any, ...]:
    """What a report says of the stream, leaving out how its bytes were framed."""
    report = r.report
    return (
        report["dialect"],
        report["status"],
        report["finish_reason"],
        report["events"],
        report["text"],
        report["tool_calls"],
        report["error"],
        r.code,
    )


@pytest.mark.parametrize(("chunk", "dialect"), ONE_EVENT)
@pytest.mark.parametrize("ending", [b"", b"\n"], ids=["bare", "newline"])
def test_one_stream_event_without_a_type_is_a_stream_cut_after_it(
    chunk: dict[str, Any], dialect: str, ending: bytes
) -> None:
    r = run(compact(chunk) + ending, content_type=UNTYPED)
    as_sse = run(b"data: " + compact(chunk) + b"\n\n")
    assert r.report["dialect"] == dialect
    assert (r.report["status"], r.report["events"], r.code) == ("truncated", 1, EXIT_INCOMPLETE)
    assert r.report["body"] is None
    assert outcome(r) == outcome(as_sse)
    assert r.kinds == as_sse.kinds


@pytest.mark.parametrize(("chunk", "dialect"), ONE_EVENT)
def test_one_stream_event_sent_as_json_is_a_stream_cut_after_it_and_noted(
    chunk: dict[str, Any], dialect: str
) -> None:
    r = run(compact(chunk), content_type="application/json; charset=utf-8")
    as_sse = run(b"data: " + compact(chunk) + b"\n\n")
    assert outcome(r) == outcome(as_sse)
    detail = r.anomaly("content-type-not-sse")["detail"]
    assert detail == "a stream sent as application/json; charset=utf-8"


def test_a_chat_chunk_keeps_its_partial_arguments_in_their_lane() -> None:
    r = run(compact(CHAT_CHUNK), content_type=UNTYPED)
    assert [(c["index"], c["id"], c["name"], c["arguments_raw"]) for c in r.calls] == [
        (0, "call_1", "f", '{"a":')
    ]
    assert r.calls[0]["arguments"] is None and r.calls[0]["error"]


def test_an_ollama_line_that_is_not_done_keeps_its_text() -> None:
    r = run(compact(OLLAMA_LINE) + b"\n", content_type=UNTYPED)
    assert (r.report["text"], r.report["finish_reason"]) == ("Hel", None)


def test_a_pretty_printed_chunk_is_one_event() -> None:
    r = run(json.dumps(CHAT_CHUNK, indent=2).encode(), content_type=UNTYPED)
    assert (r.report["status"], r.report["events"]) == ("truncated", 1)
    assert r.calls[0]["arguments_raw"] == '{"a":'
    assert "data-not-json" not in r.kinds


def test_a_chunk_that_carries_the_finish_is_a_finished_stream() -> None:
    last = {**CHAT_CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    r = run(compact(last), content_type=UNTYPED)
    assert (r.report["status"], r.report["finish_reason"], r.report["events"]) == (
        "finished",
        "stop",
        1,
    )


def test_a_chunk_without_an_object_field_is_told_by_its_delta() -> None:
    chunk = {key: value for key, value in CHAT_CHUNK.items() if key != "object"}
    r = run(compact(chunk), content_type=UNTYPED)
    assert (r.report["status"], r.report["events"]) == ("truncated", 1)


COMPLETE = [
    pytest.param(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Hi"},
                    "finish_reason": "stop",
                }
            ],
        },
        "openai-chat",
        id="chat-completion",
    ),
    pytest.param(
        {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Hi"},
                    "finish_reason": "stop",
                }
            ]
        },
        "openai-chat",
        id="chat-completion-without-object",
    ),
    pytest.param(
        {**OLLAMA_LINE, "message": {"role": "assistant", "content": "Hi"}, "done": True},
        "ollama",
        id="ollama-done",
    ),
    pytest.param(
        {**ANTHROPIC_START["message"], "content": [{"type": "text", "text": "Hi"}]}
        | {"stop_reason": "end_turn"},
        "anthropic",
        id="anthropic-message",
    ),
    pytest.param(
        {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Hi"}],
                }
            ],
        },
        "openai-responses",
        id="responses-response",
    ),
    pytest.param(
        {
            "id": "c1",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Hi"}]},
            "finish_reason": "COMPLETE",
        },
        "cohere",
        id="cohere-response",
    ),
]


@pytest.mark.parametrize(("body", "dialect"), COMPLETE)
@pytest.mark.parametrize("content_type", [UNTYPED, "application/json"], ids=["untyped", "json"])
def test_a_complete_response_is_still_read_whole(
    body: dict[str, Any], dialect: str, content_type: str
) -> None:
    r = run(compact(body), content_type=content_type)
    assert (r.report["dialect"], r.report["status"], r.report["events"], r.code) == (
        dialect,
        "finished",
        0,
        0,
    )
    assert r.report["text"] == "Hi"
    assert r.report["body"] is not None
    assert r.kinds == []


@pytest.mark.parametrize(("body", "dialect"), COMPLETE)
def test_a_complete_response_after_a_byte_order_mark_is_read_as_without_it(
    body: dict[str, Any], dialect: str
) -> None:
    """RFC 8259 lets a parser ignore a BOM; it was "JSON response does not parse"."""
    with_bom = run(b"\xef\xbb\xbf" + compact(body), content_type="application/json")
    without = run(compact(body), content_type="application/json")
    assert (with_bom.report["status"], with_bom.report["dialect"]) == ("finished", dialect)
    assert outcome(with_bom) == outcome(without)


# -- a stream cut inside its first event --------------------------------------------


def test_an_ndjson_stream_cut_inside_its_first_line_is_truncated_as_sse_is() -> None:
    cut = compact(OLLAMA_LINE)[:-20]
    r = run(cut, content_type=NDJSON)
    as_sse = run(b"data: " + cut)
    assert (r.report["status"], r.code) == ("truncated", EXIT_INCOMPLETE)
    assert r.report["trailing"] == cut.decode()
    assert as_sse.report["trailing"] == "data: " + cut.decode()
    assert outcome(r) == outcome(as_sse)
    assert r.kinds == as_sse.kinds
    assert "unterminated-event" in r.kinds


def test_a_json_body_that_does_not_parse_is_a_failed_response() -> None:
    cut = compact(OLLAMA_LINE)[:-20]
    for content_type in ("application/json", UNTYPED):
        r = run(cut, content_type=content_type)
        assert (r.report["status"], r.code) == ("error", 1)
        assert r.report["error"].startswith("JSON response does not parse")
        assert r.report["body"] == cut.decode()


@pytest.mark.parametrize("dialect", [None, *DIALECTS])
@pytest.mark.parametrize(
    "body", [{"type": []}, {"type": {}}, {"object": [], "choices": [[]]}, {"done": False}]
)
def test_odd_bodies_never_raise_whatever_the_dialect(
    body: dict[str, Any], dialect: str | None
) -> None:
    r = run(compact(body), content_type=UNTYPED, dialect=dialect)
    assert r.report["status"] in ("finished", "truncated", "error")
