"""The Anthropic Messages dialect driven through StreamSession: one rule or anomaly
kind per focused test on small hand-built streams, then a hypothesis round-trip
(any JSON inputs, any fragments, any SSE framing, any byte-level writes)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.sse import sse
from tests.helpers.streaming import CHARS, OBJECTS, TEXT, Run, cut, run, serialise, writes
from toolstream_tui.core import StreamSession, build_report, exit_code
from toolstream_tui.core.events import (
    CallParsed,
    FinishSeen,
    FragmentAppended,
    StreamEvent,
    TextAppended,
    WireEvent,
)
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE
from toolstream_tui.core.state import TRUNCATED_CALL_ERROR
from toolstream_tui.views.fragments import FragmentRows
from toolstream_tui.views.lanes import lane_title, lane_view

# -- payload builders -----------------------------------------------------------


def message_start() -> dict[str, Any]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    return {"type": "message_start", "message": message}


def ping() -> dict[str, Any]:
    return {"type": "ping"}


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def tool_start(
    index: int, call_id: str = "toolu_1", name: str = "get_weather", input: Any = None
) -> dict[str, Any]:
    block = {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": {} if input is None else input,
    }
    return block_start(index, block)


def text_start(index: int, text: str = "") -> dict[str, Any]:
    return block_start(index, {"type": "text", "text": text})


def thinking_start(index: int, thinking: str = "") -> dict[str, Any]:
    return block_start(index, {"type": "thinking", "thinking": thinking, "signature": ""})


def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


def json_delta(index: int, partial: str) -> dict[str, Any]:
    return delta(index, {"type": "input_json_delta", "partial_json": partial})


def text_delta(index: int, text: str) -> dict[str, Any]:
    return delta(index, {"type": "text_delta", "text": text})


def thinking_delta(index: int, text: str) -> dict[str, Any]:
    return delta(index, {"type": "thinking_delta", "thinking": text})


def signature_delta(index: int) -> dict[str, Any]:
    return delta(index, {"type": "signature_delta", "signature": "c2lnbmF0dXJl"})


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(stop_reason: str | None = "tool_use") -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": 9},
    }


def message_stop() -> dict[str, Any]:
    return {"type": "message_stop"}


def error_event(kind: str = "overloaded_error", message: str = "Overloaded") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


# -- running a stream -----------------------------------------------------------


def run_sse(*payloads: dict[str, Any] | tuple[str, dict[str, Any]], **options: Any) -> Run:
    event_lines = options.pop("event_lines", True)
    return run(sse(*payloads, named=event_lines), **options)


def wrapped(*blocks: dict[str, Any], stop_reason: str | None = "tool_use") -> list[dict[str, Any]]:
    """message_start, the given block events, message_delta, message_stop."""
    return [message_start(), *blocks, message_delta(stop_reason), message_stop()]


TEXTBOOK = wrapped(
    text_start(0),
    text_delta(0, "Let me "),
    text_delta(0, "check."),
    block_stop(0),
    tool_start(1, "toolu_a", "get_weather"),
    json_delta(1, ""),
    json_delta(1, '{"ci'),
    json_delta(1, 'ty": "Par'),
    json_delta(1, 'is"}'),
    block_stop(1),
    tool_start(2, "toolu_b", "get_time"),
    json_delta(2, '{"tz": "UTC"}'),
    block_stop(2),
)


# -- the textbook stream ----------------------------------------------------------


@pytest.mark.parametrize("pieces", [None, 1, 5])
@pytest.mark.parametrize("event_lines", [True, False], ids=["event-lines", "data-only"])
def test_textbook_stream_finishes_clean(pieces: int | None, event_lines: bool) -> None:
    r = run_sse(*TEXTBOOK, pieces=pieces, event_lines=event_lines)
    assert r.report["dialect"] == "anthropic"
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] == "tool_use"
    assert r.report["text"] == "Let me check."
    assert r.report["anomalies"] == []
    assert r.code == 0
    assert r.calls == [
        {
            "index": 1,
            "id": "toolu_a",
            "item_id": None,
            "name": "get_weather",
            "arguments_raw": '{"city": "Paris"}',
            "arguments": {"city": "Paris"},
            "error": None,
            "error_position": None,
            "fragments": 3,
            "schema_errors": [],
        },
        {
            "index": 2,
            "id": "toolu_b",
            "item_id": None,
            "name": "get_time",
            "arguments_raw": '{"tz": "UTC"}',
            "arguments": {"tz": "UTC"},
            "error": None,
            "error_position": None,
            "fragments": 1,
            "schema_errors": [],
        },
    ]


@pytest.mark.parametrize("pieces", [None, 1, 2])
@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("bom", [False, True], ids=["", "bom"])
@pytest.mark.parametrize("event_lines", [True, False], ids=["event-lines", "data-only"])
def test_textbook_stream_in_any_line_ending_cut_into_small_reads(
    pieces: int | None, eol: str, bom: bool, event_lines: bool
) -> None:
    """The framing must not lose the first event (a BOM cut into single bytes) nor
    the last one (a CR-terminated stream ends on a bare CR)."""
    body = sse(*TEXTBOOK, named=event_lines).decode().replace("\n", eol).encode()
    r = run(b"\xef\xbb\xbf" + body if bom else body, pieces=pieces)
    assert r.report["status"] == "finished"
    assert r.report["events"] == len(TEXTBOOK)
    assert r.report["anomalies"] == []
    assert r.report["trailing"] == ""
    assert [c["arguments"] for c in r.calls] == [{"city": "Paris"}, {"tz": "UTC"}]
    assert r.code == 0


def test_data_only_stream_gives_the_same_report_as_with_event_lines() -> None:
    with_lines = run_sse(*TEXTBOOK).report
    data_only = run_sse(*TEXTBOOK, event_lines=False).report
    assert with_lines["bytes"] != data_only["bytes"]
    for report in (with_lines, data_only):
        report.pop("bytes")
    assert data_only == with_lines


def test_explicit_dialect_gives_the_same_report_as_detection() -> None:
    assert run_sse(*TEXTBOOK, dialect="anthropic").report == run_sse(*TEXTBOOK).report


# -- lanes ------------------------------------------------------------------------


def test_lane_is_the_content_block_index() -> None:
    r = run_sse(
        *wrapped(
            thinking_start(0),
            thinking_delta(0, "hm"),
            block_stop(0),
            text_start(1),
            text_delta(1, "ok"),
            block_stop(1),
            text_start(2),
            block_stop(2),
            tool_start(3, "toolu_3", "f"),
            json_delta(3, "{}"),
            block_stop(3),
        )
    )
    assert [(c["index"], c["id"]) for c in r.calls] == [(3, "toolu_3")]
    assert sorted(r.session.state.calls) == [3]
    assert r.kinds == []


# -- arguments ----------------------------------------------------------------------


def test_arguments_are_the_concatenated_partial_json() -> None:
    parts = ['{"q', 'uery": "a', "\\u00e9 \\ud83d", '\\ude00", "n": [1, ', "2]}"]
    r = run_sse(*wrapped(tool_start(0), *(json_delta(0, p) for p in parts), block_stop(0)))
    assert r.call(0)["arguments_raw"] == "".join(parts)
    assert r.call(0)["arguments"] == {"query": "aé 😀", "n": [1, 2]}
    assert r.session.state.calls[0].fragments() == parts
    assert r.code == 0


def test_integers_beyond_64_bits_keep_their_exact_value() -> None:
    raw = '{"big": 18446744073709551616, "neg": -9223372036854775809, "f": 0.1}'
    r = run_sse(
        *wrapped(tool_start(0), json_delta(0, raw[:20]), json_delta(0, raw[20:]), block_stop(0))
    )
    args = r.call(0)["arguments"]
    assert args == {"big": 2**64, "neg": -(2**63) - 1, "f": 0.1}
    assert type(args["big"]) is int
    assert type(args["neg"]) is int


def test_empty_placeholder_input_is_not_prepended() -> None:
    r = run_sse(*wrapped(tool_start(0, input={}), json_delta(0, '{"a": 1}'), block_stop(0)))
    assert r.call(0)["arguments_raw"] == '{"a": 1}'
    assert r.call(0)["arguments"] == {"a": 1}
    assert r.call(0)["fragments"] == 1
    assert r.kinds == []


def test_empty_first_delta_is_not_a_fragment() -> None:
    r = run_sse(*wrapped(tool_start(0), json_delta(0, ""), json_delta(0, "{}"), block_stop(0)))
    assert r.call(0)["fragments"] == 1
    assert r.session.state.calls[0].fragments() == ["{}"]


def test_non_empty_start_input_without_deltas_is_the_arguments() -> None:
    start_input = {"city": "Rome", "days": 2, "tags": ["ü", "😀"], "nested": {"x": None}}
    r = run_sse(*wrapped(tool_start(0, input=start_input), block_stop(0)))
    assert r.call(0)["arguments"] == start_input
    assert json.loads(r.call(0)["arguments_raw"]) == start_input
    assert r.call(0)["fragments"] == 1
    assert r.kinds == []
    assert r.code == 0


def test_tool_without_input_or_deltas_has_empty_arguments() -> None:
    r = run_sse(*wrapped(tool_start(0, input={}), block_stop(0)))
    assert r.call(0)["arguments_raw"] == ""
    assert r.call(0)["arguments"] == {}
    assert r.call(0)["error"] is None
    assert r.code == 0


def test_start_input_with_deltas_keeps_the_deltas_and_is_reported() -> None:
    r = run_sse(
        *wrapped(tool_start(0, input={"stale": True}), json_delta(0, '{"fresh": 1}'), block_stop(0))
    )
    assert r.call(0)["arguments_raw"] == '{"fresh": 1}'
    assert r.call(0)["arguments"] == {"fresh": 1}
    assert r.kinds == ["start-input-with-deltas"]
    assert r.anomaly("start-input-with-deltas")["index"] == 0


# -- the finish ------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["tool_use", "max_tokens", "stop_sequence", "pause_turn"])
def test_stop_reason_of_message_delta_is_the_finish_reason(reason: str) -> None:
    r = run_sse(*wrapped(tool_start(0), json_delta(0, "{}"), block_stop(0), stop_reason=reason))
    assert r.report["finish_reason"] == reason
    assert r.report["status"] == "finished"


def test_max_tokens_with_cut_input_finishes_with_an_unparsable_call() -> None:
    r = run_sse(
        *wrapped(
            tool_start(0),
            json_delta(0, '{"city": "San Fra'),
            block_stop(0),
            stop_reason="max_tokens",
        )
    )
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] == "max_tokens"
    assert r.call(0)["arguments"] is None
    assert r.call(0)["arguments_raw"] == '{"city": "San Fra'
    assert r.call(0)["error"].startswith("invalid JSON arguments")
    assert r.code == EXIT_INCOMPLETE


def test_arguments_are_parsed_at_message_stop_not_before() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    before: list[StreamEvent] = []
    for payload in [
        message_start(),
        tool_start(0, "toolu_1", "f"),
        json_delta(0, '{"a"'),
        json_delta(0, ": 1}"),
        block_stop(0),
        message_delta("tool_use"),
    ]:
        before += session.feed(sse(payload, named=True), 0.0)
    slot = session.state.calls[0]
    assert slot.arguments_raw == '{"a": 1}'
    assert (slot.parsed, slot.arguments) == (False, None)
    assert session.state.finish_reason == "tool_use"
    assert not any(isinstance(e, CallParsed | FinishSeen) for e in before)

    after = session.feed(sse(message_stop(), named=True), 1.0)
    kinds = [type(e) for e in after]
    assert kinds == [WireEvent, FinishSeen, CallParsed]
    assert after[1] == FinishSeen("tool_use", "message_stop")
    assert after[2] == CallParsed(0, {"a": 1}, None, None)
    after += session.close(2.0)
    assert sum(isinstance(e, CallParsed) for e in after) == 1


def test_every_call_is_parsed_once_after_the_single_finish() -> None:
    r = run_sse(*TEXTBOOK)
    finishes = [i for i, e in enumerate(r.events) if isinstance(e, FinishSeen)]
    parsed = [(i, e.index) for i, e in enumerate(r.events) if isinstance(e, CallParsed)]
    assert len(finishes) == 1
    assert [index for _, index in parsed] == [1, 2]
    assert all(i > finishes[0] for i, _ in parsed)


# -- text channels -----------------------------------------------------------------------


def test_thinking_goes_to_reasoning_and_text_to_text() -> None:
    r = run_sse(
        *wrapped(
            thinking_start(0),
            thinking_delta(0, "The user wants "),
            thinking_delta(0, "Oslo."),
            signature_delta(0),
            block_stop(0),
            text_start(1),
            text_delta(1, "Checking "),
            text_delta(1, "Oslo ☃."),
            block_stop(1),
            stop_reason="end_turn",
        )
    )
    assert r.report["reasoning"] == "The user wants Oslo."
    assert r.report["text"] == "Checking Oslo ☃."
    assert r.report["refusal"] == ""
    assert r.kinds == []  # signature_delta is expected, not an anomaly
    channels = [e.channel.value for e in r.events if isinstance(e, TextAppended)]
    assert channels == ["reasoning", "reasoning", "content", "content"]


def test_text_carried_by_the_block_start_is_kept() -> None:
    r = run_sse(
        *wrapped(
            text_start(0, "Hello"), text_delta(0, ", world"), block_stop(0), stop_reason="end_turn"
        )
    )
    assert r.report["text"] == "Hello, world"


# -- truncation and errors ------------------------------------------------------------------


def test_stream_cut_before_message_stop_is_truncated() -> None:
    r = run_sse(
        message_start(),
        tool_start(0, "toolu_1", "f"),
        json_delta(0, '{"city": "Ber'),
    )
    assert r.report["status"] == "truncated"
    assert r.report["finish_reason"] is None
    assert r.call(0)["arguments_raw"] == '{"city": "Ber'
    assert r.call(0)["arguments"] is None
    assert r.call(0)["error"] == TRUNCATED_CALL_ERROR
    assert not any(isinstance(e, CallParsed | FinishSeen) for e in r.events)
    assert r.code == EXIT_INCOMPLETE


def test_stream_cut_after_message_delta_is_still_truncated() -> None:
    r = run_sse(message_start(), tool_start(0), json_delta(0, "{}"), block_stop(0), message_delta())
    assert r.report["status"] == "truncated"
    assert r.report["finish_reason"] == "tool_use"  # known, but message_stop never came
    assert r.call(0)["error"] == TRUNCATED_CALL_ERROR
    assert r.code == EXIT_INCOMPLETE


def test_stream_cut_mid_event_keeps_the_tail() -> None:
    body = sse(message_start(), tool_start(0), json_delta(0, '{"a'), named=True)
    body += b'event: content_block_delta\ndata: {"type":"content_block_delta","ind'
    r = run(body)
    assert r.report["status"] == "truncated"
    assert r.call(0)["arguments_raw"] == '{"a'
    assert r.kinds == ["unterminated-event"]
    assert '"ind' in r.report["trailing"]
    assert r.code == EXIT_INCOMPLETE


def test_error_event_fails_the_stream() -> None:
    r = run_sse(
        message_start(),
        text_start(0),
        text_delta(0, "Here is"),
        tool_start(1),
        json_delta(1, '{"a'),
        error_event("overloaded_error", "Overloaded"),
    )
    assert r.report["status"] == "error"
    assert r.code == 1
    assert r.kinds == ["error-event"]
    assert "overloaded_error" in r.anomaly("error-event")["detail"]
    assert "Overloaded" in r.report["error"]
    assert r.report["text"] == "Here is"
    assert r.call(1)["arguments_raw"] == '{"a'
    assert r.call(1)["arguments"] is None
    assert r.call(1)["error"]


def test_error_event_after_message_stop_still_fails_the_stream() -> None:
    r = run_sse(*TEXTBOOK, error_event())
    assert r.report["status"] == "error"
    assert r.code == 1
    assert "error-event" in r.kinds


# -- anomalies ------------------------------------------------------------------------------


def test_delta_without_start_keeps_the_input_in_the_blocks_lane() -> None:
    r = run_sse(*wrapped(json_delta(3, '{"x"'), json_delta(3, ": 1}"), block_stop(3)))
    assert r.call(3)["arguments"] == {"x": 1}
    assert (r.call(3)["id"], r.call(3)["name"]) == (None, None)
    a = r.anomaly("delta-without-start")
    assert (a["index"], a["count"]) == (3, 1)
    assert r.kinds == ["delta-without-start"]


def test_text_delta_without_start_keeps_the_text() -> None:
    r = run_sse(*wrapped(text_delta(0, "orphan"), block_stop(0), stop_reason="end_turn"))
    assert r.report["text"] == "orphan"
    assert r.calls == []
    assert r.kinds == ["delta-without-start"]


def test_delta_without_start_on_a_taken_lane_goes_to_the_next_free_lane() -> None:
    # Block 0 is reused, so its second call takes lane 1; then a delta arrives for
    # block 1, which never started, and lane 1 is already taken.
    r = run_sse(
        *wrapped(
            tool_start(0, "toolu_a", "a"),
            json_delta(0, "{}"),
            block_stop(0),
            tool_start(0, "toolu_b", "b"),  # reused: lane 1
            json_delta(0, "[]"),
            block_stop(0),
            json_delta(1, '"x"'),  # never started; lane 1 is taken
            block_stop(1),
        )
    )
    assert [(c["index"], c["id"], c["arguments_raw"]) for c in r.calls] == [
        (0, "toolu_a", "{}"),
        (1, "toolu_b", "[]"),
        (2, None, '"x"'),
    ]
    assert r.anomaly("delta-without-start")["index"] == 2


def test_delta_after_stop_is_kept_and_reported() -> None:
    r = run_sse(
        *wrapped(tool_start(0), json_delta(0, '{"a": 1}'), block_stop(0), json_delta(0, " "))
    )
    assert r.call(0)["arguments_raw"] == '{"a": 1} '
    assert r.call(0)["arguments"] == {"a": 1}
    assert r.kinds == ["delta-after-stop"]
    assert r.anomaly("delta-after-stop")["index"] == 0
    assert r.code == 0


def test_reused_block_index_starts_a_new_call_in_the_next_free_lane() -> None:
    r = run_sse(
        *wrapped(
            tool_start(0, "toolu_a", "first"),
            json_delta(0, '{"n": 1}'),
            block_stop(0),
            tool_start(1, "toolu_b", "second"),
            json_delta(1, '{"n": 2}'),
            block_stop(1),
            tool_start(0, "toolu_c", "third"),
            json_delta(0, '{"n": 3}'),
            block_stop(0),
        )
    )
    assert [(c["index"], c["id"], c["name"], c["arguments"]) for c in r.calls] == [
        (0, "toolu_a", "first", {"n": 1}),
        (1, "toolu_b", "second", {"n": 2}),
        (2, "toolu_c", "third", {"n": 3}),
    ]
    assert r.kinds == ["block-index-reused"]
    assert r.code == 0


def test_reused_index_of_a_text_block_keeps_the_lane_of_the_index() -> None:
    r = run_sse(
        *wrapped(
            text_start(0), text_delta(0, "hi"), block_stop(0),
            tool_start(0, "toolu_a", "f"), json_delta(0, "{}"), block_stop(0),
        )
    )  # fmt: skip
    assert [(c["index"], c["id"]) for c in r.calls] == [(0, "toolu_a")]
    assert r.kinds == ["block-index-reused"]


def test_reused_index_of_an_unstopped_full_input_block_keeps_its_input() -> None:
    """CORE BUG: `_open_block` (anthropic.py:104) replaces the old block in `_blocks`
    without closing it, so a tool_use whose whole input came in content_block_start
    loses that input (arguments_raw "" → {}), and no block-not-stopped is noted."""
    r = run_sse(
        *wrapped(
            tool_start(0, "toolu_a", "first", input={"x": 1}),  # never stopped
            tool_start(0, "toolu_b", "second"),
            json_delta(0, '{"y": 2}'),
            block_stop(0),
        )
    )
    assert [(c["index"], c["id"], c["arguments"]) for c in r.calls] == [
        (0, "toolu_a", {"x": 1}),
        (1, "toolu_b", {"y": 2}),
    ]
    assert sorted(r.kinds) == ["block-index-reused", "block-not-stopped"]


def test_stop_without_start_is_reported() -> None:
    r = run_sse(*wrapped(tool_start(0), json_delta(0, "{}"), block_stop(0), block_stop(5)))
    assert r.kinds == ["stop-without-start"]
    assert r.anomaly("stop-without-start")["index"] == 5
    assert r.code == 0


def test_block_not_stopped_is_closed_at_message_stop() -> None:
    r = run_sse(*wrapped(tool_start(0, "toolu_a", "a"), json_delta(0, '{"a": 1}')))
    assert r.call(0)["arguments"] == {"a": 1}
    assert r.kinds == ["block-not-stopped"]
    assert r.anomaly("block-not-stopped")["index"] == 0
    assert r.report["status"] == "finished"
    assert r.code == 0


def test_unstopped_full_input_block_still_gives_its_input() -> None:
    r = run_sse(*wrapped(tool_start(0, input={"city": "Rome"})))
    assert r.call(0)["arguments"] == {"city": "Rome"}
    assert r.kinds == ["block-not-stopped"]


def test_event_line_disagreeing_with_the_data_type_is_reported_and_data_wins() -> None:
    r = run_sse(
        message_start(),
        tool_start(0),
        ("content_block_stop", json_delta(0, "{}")),  # event: line says stop
        block_stop(0),
        message_delta(),
        message_stop(),
    )
    assert r.call(0)["arguments_raw"] == "{}"
    assert r.kinds == ["event-type-mismatch"]
    assert "content_block_stop" in r.anomaly("event-type-mismatch")["detail"]


def test_data_after_message_stop_is_reported_but_ping_is_not() -> None:
    r = run_sse(*TEXTBOOK, ping())
    assert r.kinds == []
    r = run_sse(*TEXTBOOK, text_start(9), text_delta(9, "late"))
    a = r.anomaly("data-after-stop")
    assert a["count"] == 2
    assert r.report["status"] == "finished"
    assert r.report["text"] == "Let me check.late"


def test_tool_use_stop_reason_without_tool_calls_is_reported() -> None:
    r = run_sse(*wrapped(text_start(0), text_delta(0, "hi"), block_stop(0)))
    assert r.kinds == ["finish-tools-without-calls"]
    assert r.report["finish_reason"] == "tool_use"


def test_end_turn_with_tool_use_blocks_is_reported() -> None:
    r = run_sse(*wrapped(tool_start(0), json_delta(0, "{}"), block_stop(0), stop_reason="end_turn"))
    assert r.kinds == ["finish-stop-with-tools"]
    assert r.report["finish_reason"] == "end_turn"
    assert r.call(0)["arguments"] == {}


def test_end_turn_without_tools_is_clean() -> None:
    r = run_sse(*wrapped(text_start(0), text_delta(0, "hi"), block_stop(0), stop_reason="end_turn"))
    assert r.kinds == []
    assert r.code == 0


@pytest.mark.parametrize("with_delta", [False, True], ids=["no-message-delta", "null-reason"])
def test_message_stop_without_stop_reason_is_reported(with_delta: bool) -> None:
    middle = [message_delta(None)] if with_delta else []
    r = run_sse(
        message_start(), tool_start(0), json_delta(0, "{}"), block_stop(0), *middle, message_stop()
    )
    assert r.kinds == ["stop-reason-missing"]
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] is None
    assert r.call(0)["arguments"] == {}


def test_unknown_event_type_is_reported_and_ignored() -> None:
    r = run_sse(*TEXTBOOK[:1], {"type": "mystery_event", "index": 0}, *TEXTBOOK[1:])
    assert r.kinds == ["unknown-event"]
    assert "mystery_event" in r.anomaly("unknown-event")["detail"]
    assert r.report["status"] == "finished"
    assert len(r.calls) == 2


# -- blocks already whole in message_start ------------------------------------------------
# The official SDK starts its message from message_start.message: blocks there are
# the first ones, deltas for their index continue them (an input_json_delta replaces
# a tool_use's input: the SDK parses its delta buffer alone), and its stop_reason
# holds until a message_delta gives another.

PTC_CALLER = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}


def started_with(*content: dict[str, Any], stop_reason: str | None = None) -> dict[str, Any]:
    """message_start whose message already holds `content` (and a stop_reason)."""
    start = message_start()
    start["message"] = {**start["message"], "content": list(content), "stop_reason": stop_reason}
    return start


def tool_block(
    call_id: str = "toolu_1", name: str = "rollDie", input: Any = None, **extra: Any
) -> dict[str, Any]:
    block_input = {"player": "player2"} if input is None else input
    return {"type": "tool_use", "id": call_id, "name": name, "input": block_input, **extra}


def test_a_call_whole_in_message_start_is_the_call_with_its_stop_reason() -> None:
    """Programmatic tool calling (issue 38): no block events, only message_start
    holding the tool_use (made by the code-execution tool) and message_stop."""
    r = run_sse(started_with(tool_block(caller=PTC_CALLER), stop_reason="tool_use"), message_stop())
    assert (r.report["status"], r.report["finish_reason"], r.kinds) == ("finished", "tool_use", [])
    call = r.call(0)
    assert (call["id"], call["name"], call["arguments"]) == (
        "toolu_1",
        "rollDie",
        {"player": "player2"},
    )
    assert call["arguments_raw"] == '{"player":"player2"}'
    assert call["fragments"] == 1
    assert call["caller"] == PTC_CALLER
    assert call["started_in"] == {"type": "message_start", "event": 1}
    slot = r.session.state.calls[0]
    assert (slot.started_event, slot.pieces.events[0], slot.settled_event) == (1, 1, 2)
    assert r.code == 0


def test_the_lane_says_which_tool_made_the_call_and_where_it_arrived() -> None:
    r = run_sse(started_with(tool_block(caller=PTC_CALLER), stop_reason="tool_use"), message_stop())
    view = lane_view(r.session.state, r.session.state.calls[0], upto=2)
    assert view.title == (
        "#0 rollDie · toolu_1 · by code_execution_20250825 srvtoolu_1 · in message_start"
    )
    assert (view.mode, view.fragments) == ("tree", 1)
    row = FragmentRows(r.session.state.calls[0].pieces).row(1)
    assert (row.event, row.text) == (1, '"{\\"player\\":\\"player2\\"}"')  # the inspector's row


def test_a_direct_caller_is_kept_in_the_report_but_not_shown_on_the_lane() -> None:
    r = run_sse(*wrapped(tool_start(0), json_delta(0, "{}"), block_stop(0)))
    assert "caller" not in r.call(0) and "started_in" not in r.call(0)
    direct = block_start(0, tool_block(input={}, caller={"type": "direct"}))
    r = run_sse(*wrapped(direct, json_delta(0, '{"a": 1}'), block_stop(0)))
    assert r.call(0)["caller"] == {"type": "direct", "tool_id": None}
    assert "started_in" not in r.call(0)
    assert lane_title(r.session.state.calls[0], upto=9) == "#0 rollDie · toolu_1"


def test_a_caller_that_is_not_an_object_is_an_unexpected_shape() -> None:
    r = run_sse(started_with(tool_block(caller="code"), stop_reason="tool_use"), message_stop())
    assert "caller" not in r.call(0)
    assert (r.kinds, r.anomaly("unexpected-shape")["index"]) == (["unexpected-shape"], 0)
    assert r.call(0)["arguments"] == {"player": "player2"}


def test_half_a_utf16_pair_in_the_caller_is_named() -> None:
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_\ud83c"}
    r = run_sse(started_with(tool_block(caller=caller), stop_reason="tool_use"), message_stop())
    assert r.kinds == ["lone-surrogate"]
    assert "caller tool id" in r.anomaly("lone-surrogate")["detail"]


def test_blocks_in_message_start_are_continued_by_their_deltas() -> None:
    r = run_sse(
        started_with({"type": "text", "text": "Rolling"}, tool_block(input={})),
        text_delta(0, " for both."),
        json_delta(1, '{"player":'),
        json_delta(1, ' "player1"}'),
        block_stop(1),
        tool_start(2, "toolu_2", "rollDie"),
        json_delta(2, '{"player": "player2"}'),
        block_stop(2),
        message_delta("tool_use"),
        message_stop(),
    )
    assert r.report["text"] == "Rolling for both."
    assert [(c["index"], c["id"], c["arguments"]) for c in r.calls] == [
        (1, "toolu_1", {"player": "player1"}),
        (2, "toolu_2", {"player": "player2"}),
    ]
    assert r.call(1)["fragments"] == 2  # the {} placeholder is not one
    assert r.call(1)["started_in"]["type"] == "message_start"
    assert "started_in" not in r.call(2)
    assert (r.report["finish_reason"], r.kinds) == ("tool_use", [])


def test_an_input_in_message_start_followed_by_deltas_gives_way_to_them() -> None:
    r = run_sse(
        started_with(tool_block(input={"stale": True})),
        json_delta(0, '{"fresh": 1}'),
        message_delta("tool_use"),
        message_stop(),
    )
    assert (r.call(0)["arguments_raw"], r.call(0)["arguments"]) == ('{"fresh": 1}', {"fresh": 1})
    assert r.kinds == ["start-input-with-deltas"]
    assert r.anomaly("start-input-with-deltas")["detail"].startswith("message_start carried")


def test_thinking_and_server_tool_use_in_message_start_are_kept() -> None:
    server_call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution",
                   "input": {"code": "roll()"}}  # fmt: skip
    r = run_sse(
        started_with({"type": "thinking", "thinking": "Roll", "signature": ""}, server_call),
        thinking_delta(0, "ing."),
        message_delta("tool_use"),
        message_stop(),
    )
    assert r.report["reasoning"] == "Rolling."
    assert [(c["index"], c["id"], c["arguments"]) for c in r.calls] == [
        (1, "srvtoolu_1", {"code": "roll()"})
    ]
    assert r.kinds == []


def test_a_later_message_delta_overrides_the_stop_reason_of_message_start() -> None:
    r = run_sse(
        started_with(tool_block(), stop_reason="pause_turn"),
        message_delta("tool_use"),
        message_stop(),
    )
    assert (r.report["finish_reason"], r.kinds) == ("tool_use", [])


def test_a_stop_reason_in_message_start_is_checked_against_its_blocks() -> None:
    r = run_sse(
        started_with({"type": "text", "text": "Hi"}, stop_reason="tool_use"), message_stop()
    )
    assert r.kinds == ["finish-tools-without-calls"]


def test_a_stream_cut_after_message_start_keeps_the_whole_input() -> None:
    r = run_sse(started_with(tool_block(), stop_reason="tool_use"))
    assert r.report["status"] == "truncated"
    assert r.call(0)["arguments_raw"] == '{"player":"player2"}'
    assert r.call(0)["error"] == TRUNCATED_CALL_ERROR
    assert r.code == EXIT_INCOMPLETE


def test_a_stream_cut_after_a_full_input_block_start_keeps_that_input() -> None:
    r = run_sse(message_start(), tool_start(0, input={"city": "Rome"}))
    assert r.call(0)["arguments_raw"] == '{"city":"Rome"}'
    assert r.report["status"] == "truncated"


def test_only_the_first_message_start_gives_blocks() -> None:
    """The SDK ignores a second message_start; so do we."""
    r = run_sse(
        started_with(tool_block("toolu_1")),
        started_with(tool_block("toolu_2")),
        message_delta("tool_use"),
        message_stop(),
    )
    assert [c["id"] for c in r.calls] == ["toolu_1"]


def test_a_block_stopped_twice_gives_its_start_input_once() -> None:
    r = run_sse(*wrapped(tool_start(0, input={"a": 1}), block_stop(0), block_stop(0)))
    assert (r.call(0)["arguments_raw"], r.call(0)["fragments"]) == ('{"a":1}', 1)
    assert r.kinds == ["block-stopped-twice"]


def test_a_non_streaming_message_keeps_the_caller() -> None:
    body = {"type": "message", "role": "assistant", "stop_reason": "tool_use",
            "content": [tool_block(caller=PTC_CALLER)]}  # fmt: skip
    r = run(json.dumps(body).encode(), content_type="application/json")
    assert r.call(0)["caller"] == PTC_CALLER
    assert "started_in" not in r.call(0)


# -- hypothesis: any inputs, any fragments, any framing, any writes ---------------------------


@dataclass
class ExpectedCall:
    index: int
    call_id: str
    name: str
    obj: dict[str, Any]
    raw: str
    fragments: list[str]  # non-empty fragments as the state should hold them


@dataclass
class Scenario:
    calls: list[ExpectedCall]
    text: str
    reasoning: str
    pieces: list[bytes]
    dialect: str | None


@st.composite
def prose_block(draw: st.DrawFn, index: int) -> tuple[str, str, list[dict[str, Any]]]:
    """A text or thinking block: (channel, its text, its events)."""
    kind = draw(st.sampled_from(["text", "thinking"]))
    parts = draw(st.lists(TEXT, max_size=3))
    make_delta = text_delta if kind == "text" else thinking_delta
    events = [text_start(index) if kind == "text" else thinking_start(index)]
    events += [make_delta(index, part) for part in parts]
    if kind == "thinking" and draw(st.booleans()):
        events.append(signature_delta(index))
    events.append(block_stop(index))
    return kind, "".join(parts), events


@st.composite
def anthropic_streams(draw: st.DrawFn) -> Scenario:
    n = draw(st.integers(1, 5))
    ids = draw(st.lists(st.text(CHARS, min_size=1, max_size=8), min_size=n, max_size=n))
    names = draw(st.lists(st.text(CHARS, min_size=1, max_size=8), min_size=n, max_size=n))
    payloads: list[dict[str, Any]] = [message_start()]
    if draw(st.booleans()):
        payloads.append(ping())
    text, reasoning = [], []
    calls: list[ExpectedCall] = []
    index = 0

    def prose() -> None:
        nonlocal index
        for _ in range(draw(st.integers(0, 2))):
            kind, said, events = draw(prose_block(index))
            (text if kind == "text" else reasoning).append(said)
            payloads.extend(events)
            index += 1

    for k in range(n):
        prose()
        obj = draw(OBJECTS)
        if draw(st.integers(0, 5)) == 0:  # the whole input in content_block_start
            raw = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) if obj else ""
            payloads.append(tool_start(index, ids[k], names[k], input=obj))
            fragments = [raw] if raw else []
        else:
            raw = serialise(obj, draw(st.sampled_from(["ascii", "unicode", "compact", "indent"])))
            wire = draw(cut(raw))
            payloads.append(tool_start(index, ids[k], names[k]))
            payloads += [json_delta(index, part) for part in wire]
            fragments = [part for part in wire if part]
        if draw(st.integers(0, 3)):
            payloads.append(ping())
        payloads.append(block_stop(index))
        calls.append(ExpectedCall(index, ids[k], names[k], obj, raw, fragments))
        index += 1
    prose()
    payloads += [message_delta("tool_use"), message_stop()]
    body = draw(sse_body(payloads))
    dialect = draw(st.sampled_from([None, "anthropic"]))
    return Scenario(calls, "".join(text), "".join(reasoning), draw(writes(body)), dialect)


@st.composite
def sse_body(draw: st.DrawFn, payloads: list[dict[str, Any]]) -> bytes:
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    lines_mode = draw(st.sampled_from(["always", "never", "mixed"]))
    prefix = draw(st.sampled_from(["data: ", "data:"]))
    ascii_only = draw(st.booleans())
    pretty = draw(st.booleans())  # multi-line data: one `data:` line per JSON line
    out = ["\ufeff"] if draw(st.booleans()) else []
    for payload in payloads:
        if draw(st.integers(0, 5)) == 0:
            out.append(": keep-alive" + eol)
        named = lines_mode == "always" or (lines_mode == "mixed" and draw(st.booleans()))
        head = f"event: {payload['type']}{eol}" if named else ""
        data = json.dumps(payload, ensure_ascii=ascii_only, indent=1 if pretty else None)
        out.append(head + "".join(prefix + line + eol for line in data.split("\n")) + eol)
    return "".join(out).encode()


@settings(max_examples=150, deadline=None)
@given(anthropic_streams())
def test_any_inputs_any_fragments_any_writes_reassemble_exactly(scenario: Scenario) -> None:
    session = StreamSession("property", dialect=scenario.dialect)
    events = session.open(200, "text/event-stream")
    for i, piece in enumerate(scenario.pieces):
        events += session.feed(piece, float(i))
    events += session.close(float(len(scenario.pieces)))
    report = build_report(session.state)

    assert report["tool_calls"] == [
        {
            "index": call.index,
            "id": call.call_id,
            "item_id": None,
            "name": call.name,
            "arguments_raw": call.raw,
            "arguments": call.obj,
            "error": None,
            "error_position": None,
            "fragments": len(call.fragments),
            "schema_errors": [],
        }
        for call in scenario.calls
    ]
    assert report["dialect"] == "anthropic"
    assert report["status"] == "finished"
    assert report["finish_reason"] == "tool_use"
    assert report["anomalies"] == []
    assert report["text"] == scenario.text
    assert report["reasoning"] == scenario.reasoning
    assert report["trailing"] == ""
    assert exit_code(session.state) == 0

    # checkpoint: the per-call fragments are the wire's and join to arguments_raw
    for call in scenario.calls:
        slot = session.state.calls[call.index]
        assert slot.fragments() == call.fragments
        assert "".join(slot.fragments()) == slot.arguments_raw == call.raw
    appended = [e for e in events if isinstance(e, FragmentAppended)]
    assert sum(len(call.fragments) for call in scenario.calls) == len(appended)

    # checkpoint: one FinishSeen, at message_stop; every CallParsed after it
    finishes = [i for i, e in enumerate(events) if isinstance(e, FinishSeen)]
    parsed = [i for i, e in enumerate(events) if isinstance(e, CallParsed)]
    stop_wire = [
        i
        for i, e in enumerate(events)
        if isinstance(e, WireEvent) and json.loads(e.data)["type"] == "message_stop"
    ]
    assert len(finishes) == 1
    assert events[finishes[0]] == FinishSeen("tool_use", "message_stop")
    assert stop_wire and stop_wire[0] < finishes[0]
    assert len(parsed) == len(scenario.calls)
    assert all(i > finishes[0] for i in parsed)
