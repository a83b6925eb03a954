"""The Cohere v2 chat dialect driven through StreamSession: one rule or anomaly kind
per focused test on small hand-built streams, then a hypothesis round-trip (any
arguments, any fragments, calls interleaved, any byte-level writes)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.sse import sse
from tests.helpers.streaming import OBJECTS, TEXT, Run, cut, run, serialise, writes
from toolstream_tui.core import SSEEvent, StreamSession, build_report, exit_code
from toolstream_tui.core.dialects.cohere import CohereDialect
from toolstream_tui.core.dialects.detect import dialect_of_completion, dialect_of_payload
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE
from toolstream_tui.core.state import INTERRUPTED_CALL_ERROR, TRUNCATED_CALL_ERROR

# -- payload builders -----------------------------------------------------------


def message_start() -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": [],
        "tool_plan": "",
        "tool_calls": [],
        "citations": [],
    }
    return {"type": "message-start", "id": "msg-1", "delta": {"message": message}}


def plan(text: str) -> dict[str, Any]:
    return {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": text}}}


def call_start(
    index: int | None, call_id: str = "get_weather_1", name: str = "get_weather", args: Any = ""
) -> dict[str, Any]:
    tool_call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
    event: dict[str, Any] = {
        "type": "tool-call-start",
        "delta": {"message": {"tool_calls": tool_call}},
    }
    if index is not None:
        event["index"] = index
    return event


def call_delta(index: int | None, args: Any) -> dict[str, Any]:
    tool_call = {"function": {"arguments": args}}
    event: dict[str, Any] = {
        "type": "tool-call-delta",
        "delta": {"message": {"tool_calls": tool_call}},
    }
    if index is not None:
        event["index"] = index
    return event


def call_end(index: int) -> dict[str, Any]:
    return {"type": "tool-call-end", "index": index}


def content_start(index: int, kind: str = "text") -> dict[str, Any]:
    content = {"type": kind, kind: ""}
    return {"type": "content-start", "index": index, "delta": {"message": {"content": content}}}


def content_delta(index: int, text: str, kind: str = "text") -> dict[str, Any]:
    return {
        "type": "content-delta",
        "index": index,
        "delta": {"message": {"content": {kind: text}}},
    }


def content_end(index: int) -> dict[str, Any]:
    return {"type": "content-end", "index": index}


def message_end(reason: str | None = "TOOL_CALL", **extra: Any) -> dict[str, Any]:
    usage = {"billed_units": {"input_tokens": 5, "output_tokens": 7}}
    delta = {**({"finish_reason": reason} if reason is not None else {}), **extra, "usage": usage}
    return {"type": "message-end", "delta": delta}


def run_sse(*payloads: dict[str, Any], event_lines: bool = True, **options: Any) -> Run:
    return run(sse(*payloads, named=event_lines), **options)


def wrapped(*events: dict[str, Any], reason: str | None = "TOOL_CALL") -> list[dict[str, Any]]:
    return [message_start(), *events, message_end(reason)]


TEXTBOOK = wrapped(
    plan("I will look up"),
    plan(" the weather."),
    call_start(0, "get_weather_a", "get_weather"),
    call_delta(0, '{"ci'),
    call_delta(0, 'ty": "Par'),
    call_delta(0, 'is"}'),
    call_end(0),
    call_start(1, "get_time_b", "get_time"),
    call_delta(1, '{"tz": "UTC"}'),
    call_end(1),
    content_start(0),
    content_delta(0, "Checking "),
    content_delta(0, "both."),
    content_end(0),
)


# -- the textbook stream ----------------------------------------------------------


@pytest.mark.parametrize("pieces", [None, 1, 7])
@pytest.mark.parametrize("event_lines", [True, False], ids=["event-lines", "data-only"])
def test_textbook_stream_finishes_clean(pieces: int | None, event_lines: bool) -> None:
    r = run_sse(*TEXTBOOK, pieces=pieces, event_lines=event_lines)
    assert r.report["dialect"] == "cohere"
    assert (r.report["status"], r.report["finish_reason"], r.code) == ("finished", "TOOL_CALL", 0)
    assert r.report["text"] == "Checking both."
    assert r.report["reasoning"] == "I will look up the weather."
    assert r.report["anomalies"] == []
    assert [
        (c["index"], c["id"], c["name"], c["arguments_raw"], c["fragments"]) for c in r.calls
    ] == [
        (0, "get_weather_a", "get_weather", '{"city": "Paris"}', 3),
        (1, "get_time_b", "get_time", '{"tz": "UTC"}', 1),
    ]
    assert r.args() == [{"city": "Paris"}, {"tz": "UTC"}]


def test_fragments_are_appended_as_they_came() -> None:
    r = run_sse(*TEXTBOOK)
    assert r.session.state.calls[0].fragments() == ['{"ci', 'ty": "Par', 'is"}']


def test_interleaved_calls_keep_their_lanes_by_index() -> None:
    r = run_sse(
        *wrapped(
            call_start(0, "a", "get_weather"),
            call_start(1, "b", "get_time"),
            call_delta(1, '{"tz": '),
            call_delta(0, '{"city": '),
            call_delta(0, '"Oslo"}'),
            call_delta(1, '"CET"}'),
            call_end(1),
            call_end(0),
        )
    )
    assert r.args() == [{"city": "Oslo"}, {"tz": "CET"}]
    assert [c["id"] for c in r.calls] == ["a", "b"]
    assert r.kinds == []


def test_lanes_follow_the_wire_index() -> None:
    r = run_sse(*wrapped(call_start(3, "c"), call_delta(3, "{}"), call_end(3)))
    assert [c["index"] for c in r.calls] == [3]


def test_empty_arguments_mean_an_empty_object() -> None:
    r = run_sse(*wrapped(call_start(0, "t", "current_time"), call_end(0)))
    assert r.calls[0]["arguments_raw"] == ""
    assert r.args() == [{}]
    assert r.code == 0


def test_arguments_in_the_start_event_are_the_first_fragment() -> None:
    r = run_sse(*wrapped(call_start(0, args='{"a": '), call_delta(0, "1}"), call_end(0)))
    assert r.session.state.calls[0].fragments() == ['{"a": ', "1}"]
    assert r.args() == [{"a": 1}]


def test_arguments_sent_as_an_object_are_kept_as_compact_json() -> None:
    r = run_sse(*wrapped(call_start(0), call_delta(0, {"city": "Rome"}), call_end(0)))
    assert r.calls[0]["arguments_raw"] == '{"city":"Rome"}'
    assert r.anomaly("arguments-object")["index"] == 0


# -- text channels ---------------------------------------------------------------


def test_thinking_content_and_the_tool_plan_are_reasoning_text_is_content() -> None:
    r = run_sse(
        *wrapped(
            content_start(0, "thinking"),
            content_delta(0, "Hmm, Paris.", "thinking"),
            content_end(0),
            plan("Call the tool."),
            content_start(1),
            content_delta(1, "Done."),
            content_end(1),
            reason="COMPLETE",
        )
    )
    assert r.report["reasoning"] == "Hmm, Paris.Call the tool."
    assert r.report["text"] == "Done."
    assert r.kinds == []


def test_citations_and_debug_events_are_accepted_quietly() -> None:
    citation = {"start": 0, "end": 4, "text": "Oslo", "sources": [], "type": "TEXT_CONTENT"}
    r = run_sse(
        *wrapped(
            content_start(0),
            content_delta(0, "Oslo is cold."),
            content_end(0),
            {"type": "citation-start", "index": 0, "delta": {"message": {"citations": citation}}},
            {"type": "citation-end", "index": 0},
            {"type": "debug", "prompt": "..."},
            reason="COMPLETE",
        )
    )
    assert r.report["text"] == "Oslo is cold."
    assert r.kinds == []


# -- the end -----------------------------------------------------------------------


def test_stream_cut_mid_arguments_is_truncated_with_the_partial_buffer() -> None:
    r = run_sse(message_start(), call_start(0), call_delta(0, '{"city": "Lis'))
    assert r.report["status"] == "truncated"
    assert r.report["finish_reason"] is None
    assert r.calls[0]["arguments_raw"] == '{"city": "Lis'
    assert r.calls[0]["error"] == TRUNCATED_CALL_ERROR
    assert r.code == EXIT_INCOMPLETE


def test_stream_cut_mid_event_keeps_the_tail() -> None:
    body = (
        sse(message_start(), call_start(0), call_delta(0, '{"a"'), named=True)
        + b"event: tool-call-del"
    )
    r = run(body)
    assert r.report["status"] == "truncated"
    assert r.report["trailing"] == "event: tool-call-del"
    assert r.calls[0]["arguments_raw"] == '{"a"'


def test_message_end_with_an_error_fails_the_stream() -> None:
    r = run_sse(
        message_start(),
        call_start(0),
        call_delta(0, '{"ci'),
        message_end("ERROR", error="generation failed"),
    )
    assert r.report["status"] == "error"
    assert r.report["finish_reason"] == "ERROR"
    assert r.report["error"] == "error in stream: generation failed"
    assert r.anomaly("error-event")["detail"] == "generation failed"
    assert r.calls[0]["arguments_raw"] == '{"ci'
    assert r.code == 1
    # cut by the error, as every dialect's: not the model's invalid JSON
    assert r.calls[0]["error"] == INTERRUPTED_CALL_ERROR
    assert "invalid-json" not in r.kinds


def test_finish_reason_error_without_a_message_still_fails() -> None:
    r = run_sse(*wrapped(content_start(0), content_delta(0, "Hi"), reason="ERROR"))
    assert r.report["status"] == "error"
    assert r.anomaly("error-event")["detail"] == "finish_reason ERROR"


@pytest.mark.parametrize("reason", ["MAX_TOKENS", "STOP_SEQUENCE", "TIMEOUT"])
def test_other_finish_reasons_finish(reason: str) -> None:
    r = run_sse(*wrapped(content_start(0), content_delta(0, "Hi"), reason=reason))
    assert (r.report["status"], r.report["finish_reason"]) == ("finished", reason)
    assert r.kinds == []


def test_arguments_are_parsed_at_message_end_not_before() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    session.feed(
        sse(message_start(), call_start(0), call_delta(0, "{}"), call_end(0), named=True), 0.0
    )
    assert not session.state.calls[0].parsed
    session.feed(sse(message_end(), named=True), 1.0)
    assert session.state.calls[0].parsed


# -- anomalies ---------------------------------------------------------------------


def test_delta_without_start_opens_a_call_that_keeps_the_arguments() -> None:
    r = run_sse(*wrapped(call_delta(2, '{"x": 1}')))
    assert r.anomaly("delta-without-start")["index"] == 2
    assert r.calls[0]["index"] == 2
    assert r.args() == [{"x": 1}]


def test_delta_after_end_is_kept_and_reported() -> None:
    r = run_sse(*wrapped(call_start(0), call_delta(0, '{"a":'), call_end(0), call_delta(0, "1}")))
    assert r.anomaly("delta-after-stop")["index"] == 0
    assert r.args() == [{"a": 1}]


def test_a_call_never_ended_is_reported_at_message_end() -> None:
    r = run_sse(*wrapped(call_start(0), call_delta(0, "{}")))
    assert r.anomaly("block-not-stopped")["index"] == 0
    assert r.args() == [{}]


def test_a_reused_index_starts_a_new_call_in_the_next_free_lane() -> None:
    r = run_sse(
        *wrapped(
            call_start(0, "a"),
            call_delta(0, '{"n": 1}'),
            call_end(0),
            call_start(0, "b"),
            call_delta(0, '{"n": 2}'),
            call_end(0),
        )
    )
    assert [(c["index"], c["id"]) for c in r.calls] == [(0, "a"), (1, "b")]
    assert r.args() == [{"n": 1}, {"n": 2}]
    assert r.anomaly("index-reused")["index"] == 1


def test_events_without_an_index_go_to_the_latest_call() -> None:
    r = run_sse(*wrapped(call_start(None, "a"), call_delta(None, '{"k": true}')))
    assert r.args() == [{"k": True}]
    assert "index-missing" in r.kinds


def test_a_call_without_id_or_name_is_reported() -> None:
    start = call_start(0)
    start["delta"]["message"]["tool_calls"] = {"function": {"arguments": ""}}
    r = run_sse(*wrapped(start, call_end(0)))
    assert {"id-missing", "name-missing"} <= set(r.kinds)


def test_events_after_message_end_are_reported() -> None:
    r = run_sse(*wrapped(content_start(0), reason="COMPLETE"), content_delta(0, "late"))
    assert r.anomaly("data-after-stop")["detail"] == "content-delta arrived after message-end"


def test_message_end_without_a_finish_reason_is_reported() -> None:
    r = run_sse(*wrapped(content_delta(0, "Hi"), reason=None))
    assert r.report["status"] == "finished"
    assert "stop-reason-missing" in r.kinds


def test_tool_call_reason_without_calls_and_complete_with_calls_are_reported() -> None:
    assert "finish-tools-without-calls" in run_sse(*wrapped(content_delta(0, "Hi"))).kinds
    with_calls = run_sse(*wrapped(call_start(0), call_end(0), reason="COMPLETE"))
    assert "finish-stop-with-tools" in with_calls.kinds


def test_unknown_event_type_is_reported_and_ignored() -> None:
    r = run_sse(*wrapped({"type": "content-shimmer"}, reason="COMPLETE"))
    assert r.anomaly("unknown-event")["detail"] == "event type 'content-shimmer' ignored"


def test_an_event_line_that_disagrees_with_the_data_is_reported() -> None:
    mislabelled = ("content-end", content_delta(0, "x"))
    r = run(sse(message_start(), mislabelled, message_end("COMPLETE"), named=True))
    assert r.report["text"] == "x"
    assert "event-type-mismatch" in r.kinds


@pytest.mark.parametrize(
    "payload",
    [
        '{"type": "tool-call-start", "index": 0, "delta": null}',
        '{"type": "tool-call-delta", "index": "zero", "delta": {"message": []}}',
        '{"type": "content-delta", "delta": {"message": {"content": {"text": 5}}}}',
        '{"type": "message-end", "delta": {"finish_reason": ["x"], "error": {"code": 1}}}',
        "[1, 2]",
    ],
)
def test_odd_shapes_never_raise(payload: str) -> None:
    r = run(sse(message_start(), payload, named=True))
    assert r.report["dialect"] == "cohere"
    assert r.kinds, "each odd shape is named"


# -- detection and complete responses ------------------------------------------------


@pytest.mark.parametrize(
    "kind", ["text-delta", "tool-input-start", "start", "finish", "start-step", "error", "debug"]
)
def test_other_hyphenated_types_are_not_claimed(kind: str) -> None:
    event = SSEEvent(1, "", json.dumps({"type": kind}), None, None)
    assert not CohereDialect.claims_event(event, {"type": kind})


def test_every_cohere_type_is_claimed_from_the_data_alone() -> None:
    for payload in TEXTBOOK:
        assert dialect_of_payload(payload) == "cohere", payload["type"]


COMPLETE = {
    "id": "resp-1",
    "finish_reason": "TOOL_CALL",
    "message": {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "Think."}, {"type": "text", "text": "Hi."}],
        "tool_plan": " Plan.",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": ""}},
        ],
    },
    "usage": {"billed_units": {"input_tokens": 1, "output_tokens": 2}},
}


def test_a_complete_response_is_read_whole() -> None:
    assert dialect_of_completion(COMPLETE) == "cohere"
    r = run(json.dumps(COMPLETE).encode(), content_type="application/json")
    assert r.report["dialect"] == "cohere"
    assert (r.report["status"], r.report["finish_reason"]) == ("finished", "TOOL_CALL")
    assert (r.report["text"], r.report["reasoning"]) == ("Hi.", "Think. Plan.")
    assert [(c["index"], c["id"], c["name"], c["arguments"]) for c in r.calls] == [
        (0, "a", "f", {"x": 1}),
        (1, "b", "g", {}),
    ]
    assert r.kinds == []


# -- any inputs, any fragments, any writes ---------------------------------------------


@dataclass
class Call:
    lane: int
    call_id: str
    name: str
    obj: dict[str, Any]
    raw: str
    fragments: list[str]


@dataclass
class Scenario:
    calls: list[Call]
    plan: str
    text: str
    pieces: list[bytes]


STYLES = st.sampled_from(["ascii", "unicode", "compact", "indent"])


@st.composite
def cohere_streams(draw: st.DrawFn) -> Scenario:
    count = draw(st.integers(0, 3))
    calls = []
    for lane in range(count):
        obj = draw(OBJECTS)
        raw = serialise(obj, draw(STYLES))
        fragments = [f for f in draw(cut(raw)) if f]
        calls.append(Call(lane, f"call_{lane}", f"tool_{lane}", obj, raw, fragments))
    plan_text, text = draw(TEXT), draw(TEXT)
    # every call's deltas, interleaved in a drawn order that keeps each call's own order
    queues = [list(call.fragments) for call in calls]
    deltas = []
    while any(queues):
        lane = draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        deltas.append(call_delta(lane, queues[lane].pop(0)))
    events = [
        message_start(),
        plan(plan_text),
        *(call_start(c.lane, c.call_id, c.name) for c in calls),
        *deltas,
        *(call_end(c.lane) for c in calls),
        content_start(0),
        content_delta(0, text),
        content_end(0),
        message_end(),
    ]
    return Scenario(calls, plan_text, text, draw(writes(sse(*events, named=True))))


@settings(max_examples=100, deadline=None)
@given(cohere_streams())
def test_any_inputs_any_fragments_any_writes_reassemble_exactly(scenario: Scenario) -> None:
    session = StreamSession("property")
    session.open(200, "text/event-stream")
    for i, piece in enumerate(scenario.pieces):
        session.feed(piece, float(i))
    session.close(float(len(scenario.pieces)))
    report = build_report(session.state)
    assert report["dialect"] == "cohere"
    assert report["status"] == "finished"
    assert [(c["index"], c["id"], c["name"], c["arguments_raw"]) for c in report["tool_calls"]] == [
        (c.lane, c.call_id, c.name, c.raw) for c in scenario.calls
    ]
    assert [c["arguments"] for c in report["tool_calls"]] == [c.obj for c in scenario.calls]
    for call in scenario.calls:
        assert session.state.calls[call.lane].fragments() == call.fragments
    assert (report["reasoning"], report["text"]) == (scenario.plan, scenario.text)
    expected_kinds = [] if scenario.calls else ["finish-tools-without-calls"]
    assert [a["kind"] for a in report["anomalies"]] == expected_kinds
    assert exit_code(session.state) == 0
