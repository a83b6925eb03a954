"""Focused tests of the OpenAI chat-completions dialect driven through StreamSession:
one dialect rule or anomaly kind per test, on small hand-built streams."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.sse import sse
from tests.helpers.streaming import Run, chunk, run, tc
from toolstream_tui.core import StreamSession, build_report, exit_code
from toolstream_tui.core.events import (
    CallParsed,
    FinishSeen,
    FragmentAppended,
    StreamEvent,
    WireComment,
)
from toolstream_tui.core.exit_codes import EXIT_INCOMPLETE
from toolstream_tui.views.fragments import FragmentRows

DONE = "[DONE]"


# -- stream builders ----------------------------------------------------------


def run_sse(*items: dict[str, Any] | str, pieces: int | None = None) -> Run:
    return run(sse(*items), pieces=pieces)


TEXTBOOK = (
    chunk(role="assistant", content=None),
    chunk(tc(0, "call_1", "get_weather", "")),
    chunk(tc(0, args='{"city": ')),
    chunk(tc(0, args='"Paris", "unit": "C"}')),
    chunk(tc(1, "call_2", "get_time", "")),
    chunk(tc(1, args="{}")),
    chunk(finish="tool_calls"),
    DONE,
)


# -- the textbook stream ------------------------------------------------------


@pytest.mark.parametrize("pieces", [None, 1, 7])
def test_textbook_stream_finishes_clean(pieces: int | None) -> None:
    r = run_sse(*TEXTBOOK, pieces=pieces)
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] == "tool_calls"
    assert r.report["anomalies"] == []
    assert r.code == 0
    assert r.calls == [
        {
            "index": 0,
            "id": "call_1",
            "item_id": None,
            "name": "get_weather",
            "arguments_raw": '{"city": "Paris", "unit": "C"}',
            "arguments": {"city": "Paris", "unit": "C"},
            "error": None,
            "error_position": None,
            "fragments": 2,
            "schema_errors": [],
        },
        {
            "index": 1,
            "id": "call_2",
            "item_id": None,
            "name": "get_time",
            "arguments_raw": "{}",
            "arguments": {},
            "error": None,
            "error_position": None,
            "fragments": 1,
            "schema_errors": [],
        },
    ]


# -- identity: id and name -----------------------------------------------------


def test_repeated_id_and_name_are_not_concatenated_and_are_counted() -> None:
    r = run_sse(
        chunk(tc(0, "call_1", "get_weather", '{"a":')),
        chunk(tc(0, "call_1", "get_weather", "1")),
        chunk(tc(0, "call_1", "get_weather", "}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert (r.calls[0]["id"], r.calls[0]["name"]) == ("call_1", "get_weather")
    assert r.args() == [{"a": 1}]
    assert r.anomaly("id-repeated")["count"] == 2
    assert r.anomaly("name-repeated")["count"] == 2
    assert r.anomaly("name-repeated")["index"] == 0
    assert sorted(r.kinds) == ["id-repeated", "name-repeated"]
    assert r.code == 0


def test_changed_name_is_ignored_and_reported() -> None:
    r = run_sse(
        chunk(tc(0, "call_1", "get_weather", "{}")),
        chunk(tc(0, name="delete_everything")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert r.calls[0]["name"] == "get_weather"
    assert r.kinds == ["name-changed"]
    assert "delete_everything" in r.anomaly("name-changed")["detail"]


def test_id_arriving_late_is_set_and_reported() -> None:
    r = run_sse(
        chunk(tc(0, name="f", args='{"a"')),
        chunk(tc(0, call_id="call_late", args=": 1}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert r.calls[0]["id"] == "call_late"
    assert r.args() == [{"a": 1}]
    assert r.kinds == ["id-late"]
    assert r.anomaly("id-late")["event"] == 2


def test_name_arriving_late_is_set_and_reported() -> None:
    r = run_sse(
        chunk(tc(0, call_id="call_1", args="{")),
        chunk(tc(0, name="f", args="}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert r.calls[0]["name"] == "f"
    assert r.kinds == ["name-late"]


def test_call_that_never_gets_id_or_name_is_reported() -> None:
    r = run_sse(chunk(tc(0, args="{}")), chunk(finish="tool_calls"), DONE)
    assert (r.calls[0]["id"], r.calls[0]["name"]) == (None, None)
    assert sorted(r.kinds) == ["id-missing", "name-missing"]


# -- arguments: appended, parsed once at the finish ----------------------------


def test_arguments_are_appended_and_not_parsed_before_the_finish() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    before: list[StreamEvent] = []
    for item in (
        chunk(tc(0, "call_1", "f", '{"a"')),
        chunk(tc(0, args=": [1, ")),
        chunk(tc(0, args="2]}")),
    ):
        before += session.feed(sse(item), 0.0)
    slot = session.state.calls[0]
    assert slot.fragments() == ['{"a"', ": [1, ", "2]}"]
    assert slot.arguments_raw == '{"a": [1, 2]}'
    assert (slot.parsed, slot.arguments, slot.error) == (False, None, None)
    assert not any(isinstance(e, CallParsed) for e in before)
    assert [e.text for e in before if isinstance(e, FragmentAppended)] == slot.fragments()

    after = session.feed(sse(chunk(finish="tool_calls")), 1.0)
    after += session.feed(sse(DONE), 2.0)
    after += session.close(3.0)
    parsed = [e for e in after if isinstance(e, CallParsed)]
    assert parsed == [CallParsed(0, {"a": [1, 2]}, None, None)]
    finish_at = next(i for i, e in enumerate(after) if isinstance(e, FinishSeen))
    assert after.index(parsed[0]) > finish_at


def test_each_call_is_parsed_exactly_once_across_all_finish_triggers() -> None:
    r = run_sse(*TEXTBOOK)
    assert [e.index for e in r.events if isinstance(e, CallParsed)] == [0, 1]
    assert [e.trigger for e in r.events if isinstance(e, FinishSeen)] == ["finish_reason"]


@pytest.mark.parametrize("args", ["", None, "  \n"], ids=["empty", "absent", "whitespace"])
def test_empty_or_absent_arguments_mean_empty_object(args: str | None) -> None:
    r = run_sse(chunk(tc(0, "call_1", "ping", args)), chunk(finish="tool_calls"), DONE)
    assert r.args() == [{}]
    assert r.calls[0]["error"] is None
    assert r.code == 0


def test_unparseable_arguments_give_position_and_keep_raw() -> None:
    r = run_sse(
        chunk(tc(0, "call_1", "f", '{"a": 1,')),
        chunk(tc(0, args="}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    call = r.calls[0]
    assert r.report["status"] == "finished"
    assert call["arguments"] is None
    assert call["arguments_raw"] == '{"a": 1,}'
    assert "line 1 column 9 (char 8)" in call["error"]
    assert call["error_position"] == 8
    assert r.code == EXIT_INCOMPLETE


def test_parse_error_position_on_a_later_line() -> None:
    r = run_sse(chunk(tc(0, "call_1", "f", '{\n  "a": tru}')), chunk(finish="tool_calls"), DONE)
    assert "line 2 column 8 (char 9)" in r.calls[0]["error"]
    assert r.calls[0]["error_position"] == 9


def test_one_bad_call_fails_the_exit_code_but_others_still_parse() -> None:
    r = run_sse(
        chunk(tc(0, "a", "f", '{"ok": true}')),
        chunk(tc(1, "b", "g", '{"bad": }')),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert r.args() == [{"ok": True}, None]
    assert r.calls[1]["error"] is not None
    assert r.code == EXIT_INCOMPLETE


def test_arguments_sent_as_object_are_serialised_compactly() -> None:
    obj = {"city": "Zürich", "days": [1, 2], "opts": {}}
    r = run_sse(chunk(tc(0, "call_1", "f", obj)), chunk(finish="tool_calls"), DONE)
    assert r.calls[0]["arguments_raw"] == '{"city":"Zürich","days":[1,2],"opts":{}}'
    assert r.args() == [obj]
    assert r.kinds == ["arguments-object"]
    assert r.anomaly("arguments-object")["index"] == 0
    assert r.code == 0


# -- finish triggers and status -------------------------------------------------


def test_no_finish_trigger_is_truncated_with_partial_buffers_kept() -> None:
    r = run_sse(chunk(tc(0, "call_1", "f", '{"a": ')), chunk(tc(0, args='"par')))
    assert r.report["status"] == "truncated"
    assert r.report["finish_reason"] is None
    assert r.calls[0]["arguments_raw"] == '{"a": "par'
    assert r.calls[0]["arguments"] is None
    assert r.calls[0]["error"] is not None
    assert not any(isinstance(e, CallParsed | FinishSeen) for e in r.events)
    assert r.code == EXIT_INCOMPLETE


def test_complete_looking_arguments_without_a_finish_are_still_truncated() -> None:
    r = run_sse(chunk(tc(0, "call_1", "f", '{"a": 1}')))
    assert r.report["status"] == "truncated"
    assert r.args() == [None]
    assert r.code == EXIT_INCOMPLETE


def test_finish_reason_without_done_finishes_and_reports_done_missing() -> None:
    r = run_sse(chunk(tc(0, "call_1", "f", "{}")), chunk(finish="tool_calls"))
    assert r.report["status"] == "finished"
    assert r.args() == [{}]
    assert r.kinds == ["done-missing"]
    assert r.code == 0


def test_done_without_finish_reason_finishes_and_reports_finish_missing() -> None:
    r = run_sse(chunk(tc(0, "call_1", "f", '{"x": 1}')), DONE)
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] is None
    assert r.args() == [{"x": 1}]
    assert r.kinds == ["finish-missing"]
    assert [e.trigger for e in r.events if isinstance(e, FinishSeen)] == [DONE]
    assert r.code == 0


def test_empty_choices_chunk_does_not_erase_the_finish_reason() -> None:
    usage = {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 3}}
    r = run_sse(chunk(tc(0, "call_1", "f", "{}")), chunk(finish="tool_calls"), usage, DONE)
    assert r.report["finish_reason"] == "tool_calls"
    assert r.report["status"] == "finished"
    assert r.report["anomalies"] == []
    assert r.code == 0


def test_stop_finish_with_tool_calls_is_reported() -> None:
    r = run_sse(chunk(tc(0, "call_1", "f", "{}")), chunk(finish="stop"), DONE)
    assert r.report["finish_reason"] == "stop"
    assert r.kinds == ["finish-stop-with-tools"]
    assert r.args() == [{}]
    assert r.code == 0


def test_stop_finish_without_tool_calls_is_clean() -> None:
    r = run_sse(chunk(content="hi"), chunk(finish="stop"), DONE)
    assert r.report["anomalies"] == []
    assert r.report["text"] == "hi"
    assert r.code == 0


def test_data_after_done_is_reported() -> None:
    r = run_sse(
        chunk(tc(0, "call_1", "f", "{}")), chunk(finish="tool_calls"), DONE, chunk(content="x")
    )
    assert r.kinds == ["data-after-done"]
    assert r.anomaly("data-after-done")["event"] == 4


# -- text channels --------------------------------------------------------------


def test_reasoning_refusal_and_text_are_kept_apart() -> None:
    r = run_sse(
        chunk(reasoning_content="Let me "),
        chunk(reasoning_content="think."),
        chunk(content="Hello"),
        chunk(refusal="I can't "),
        chunk(content=", world"),
        chunk(refusal="do that."),
        chunk(finish="stop"),
        DONE,
    )
    assert r.report["reasoning"] == "Let me think."
    assert r.report["refusal"] == "I can't do that."
    assert r.report["text"] == "Hello, world"
    assert r.code == 0


# -- lanes: reused, changed and missing indexes ---------------------------------


def test_index_reused_after_a_complete_call_starts_a_new_lane() -> None:
    r = run_sse(
        chunk(tc(0, "call_a", "f", '{"n": 1}')),
        chunk(tc(0, "call_b", "g", '{"n":')),
        chunk(tc(0, args=" 2}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert [(c["index"], c["id"], c["name"]) for c in r.calls] == [
        (0, "call_a", "f"),
        (1, "call_b", "g"),
    ]
    assert r.args() == [{"n": 1}, {"n": 2}]
    assert r.kinds == ["index-reused"]
    assert r.anomaly("index-reused")["index"] == 1
    assert r.code == 0


def test_id_changed_mid_arguments_starts_a_new_lane() -> None:
    r = run_sse(
        chunk(tc(0, "call_a", "f", '{"n": ')),
        chunk(tc(0, "call_b", "g", "{}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert [(c["index"], c["id"]) for c in r.calls] == [(0, "call_a"), (1, "call_b")]
    assert [c["arguments_raw"] for c in r.calls] == ['{"n": ', "{}"]
    assert r.kinds == ["id-changed"]
    assert r.calls[0]["error"] is not None
    assert r.args() == [None, {}]
    assert r.code == EXIT_INCOMPLETE


def test_new_index_after_a_reused_index_takes_the_next_free_lane() -> None:
    r = run_sse(
        chunk(tc(0, "a", "f", "{}")),
        chunk(tc(0, "b", "f", "{}")),
        chunk(tc(1, "c", "f", '{"c": 1}')),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert [(c["index"], c["id"]) for c in r.calls] == [(0, "a"), (1, "b"), (2, "c")]
    assert r.args() == [{}, {}, {"c": 1}]


def test_missing_index_with_known_id_joins_that_call() -> None:
    r = run_sse(
        chunk(tc(0, "call_a", "f", '{"a": ')),
        chunk(tc(1, "call_b", "g", "{}")),
        chunk(tc(call_id="call_a", args="1}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert [c["arguments_raw"] for c in r.calls] == ['{"a": 1}', "{}"]
    assert r.args() == [{"a": 1}, {}]
    assert "index-missing" in r.kinds
    assert r.anomaly("index-missing")["index"] == 0


def test_missing_index_with_new_id_starts_a_new_call() -> None:
    r = run_sse(
        chunk(tc(0, "call_a", "f", "{}")),
        chunk(tc(call_id="call_b", name="g", args='{"b": 2}')),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert [(c["index"], c["id"], c["name"]) for c in r.calls] == [
        (0, "call_a", "f"),
        (1, "call_b", "g"),
    ]
    assert r.args() == [{}, {"b": 2}]
    assert r.kinds == ["index-missing"]
    assert r.anomaly("index-missing")["index"] == 1


def test_missing_index_and_no_id_continues_the_latest_call() -> None:
    r = run_sse(
        chunk(tc(0, "call_a", "f", "{}")),
        chunk(tc(1, "call_b", "g", '{"b"')),
        chunk(tc(args=": ")),
        chunk(tc(args="[]}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert r.args() == [{}, {"b": []}]
    assert r.kinds == ["index-missing"]
    missing = r.anomaly("index-missing")
    assert (missing["index"], missing["count"]) == (1, 2)


def test_missing_index_on_the_very_first_fragment_starts_lane_zero() -> None:
    r = run_sse(chunk(tc(call_id="call_a", name="f", args="{}")), chunk(finish="tool_calls"), DONE)
    assert [(c["index"], c["id"]) for c in r.calls] == [(0, "call_a")]
    assert r.args() == [{}]
    assert r.kinds == ["index-missing"]


class CountingCalls(dict[int, Any]):
    """A calls table that counts the lanes looked at: each membership test and
    each lane iterated over (the work of finding a free lane or a call's id)."""

    examined = 0

    def __contains__(self, key: object) -> bool:
        self.examined += 1
        return super().__contains__(key)

    def __iter__(self) -> Any:
        for key in super().__iter__():
            self.examined += 1
            yield key

    def values(self) -> Any:
        return (self[key] for key in self)

    def items(self) -> Any:
        return ((key, self[key]) for key in self)


def lanes_examined(body: bytes) -> tuple[int, Run]:
    session = StreamSession("test")
    session.state.calls = calls = CountingCalls()
    events = session.open(200, "text/event-stream") + session.feed(body, 0.0) + session.close(1.0)
    return calls.examined, Run(session, events, build_report(session.state), 0)


CALLS = 2000


@pytest.mark.parametrize("with_index", [False, True], ids=["no index", "all at index 0"])
def test_many_calls_without_their_own_index_take_linear_work(with_index: bool) -> None:
    """Every call sent without an index (or all at index 0, told apart by ids) needs
    a free lane, and its continuation finds it by id: a scan of every lane for
    each would make the work grow with the square of the calls."""
    index = 0 if with_index else None
    fragments = []
    for number in range(CALLS):
        fragments.append(chunk(tc(index, f"call_{number}", "f", '{"n": ')))
        fragments.append(chunk(tc(call_id=f"call_{number}", args=f"{number}}}")))
    examined, r = lanes_examined(sse(*fragments, chunk(finish="tool_calls"), DONE))
    assert [call["arguments"] for call in r.calls] == [{"n": n} for n in range(CALLS)]
    assert [call["index"] for call in r.calls] == list(range(CALLS))
    assert examined < 20 * CALLS  # a scan per call would examine about CALLS**2 / 2


def test_index_gap_is_reported_and_lane_follows_index() -> None:
    r = run_sse(
        chunk(tc(0, "a", "f", "{}")),
        chunk(tc(2, "c", "f", "{}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert [c["index"] for c in r.calls] == [0, 2]
    assert r.kinds == ["index-gap"]
    assert r.anomaly("index-gap")["index"] == 2
    assert r.code == 0


def test_first_index_not_zero_is_a_gap() -> None:
    r = run_sse(chunk(tc(1, "b", "f", "{}")), chunk(finish="tool_calls"), DONE)
    assert [c["index"] for c in r.calls] == [1]
    assert r.kinds == ["index-gap"]


# -- two calls merged into one buffer -------------------------------------------


def test_fragment_after_complete_json_is_reported_and_fails_the_parse() -> None:
    r = run_sse(
        chunk(tc(0, "call_a", "f", '{"a": 1')),
        chunk(tc(0, args="}")),
        chunk(tc(0, args='{"b": 2}')),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert r.kinds == ["fragment-after-complete-json"]
    assert r.anomaly("fragment-after-complete-json")["index"] == 0
    assert r.calls[0]["arguments_raw"] == '{"a": 1}{"b": 2}'
    assert r.calls[0]["arguments"] is None
    assert "Extra data" in r.calls[0]["error"]
    assert r.calls[0]["error_position"] == 8
    assert r.code == EXIT_INCOMPLETE


def test_merged_signature_inside_one_fragment_is_reported() -> None:
    r = run_sse(chunk(tc(0, "call_a", "f", '{"a":1}{"b":2}')), chunk(finish="tool_calls"), DONE)
    assert r.kinds == ["fragment-after-complete-json"]


def test_whitespace_after_complete_json_is_not_a_merge() -> None:
    r = run_sse(
        chunk(tc(0, "call_a", "f", '{"a": 1}')),
        chunk(tc(0, args=" \n ")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert r.report["anomalies"] == []
    assert r.args() == [{"a": 1}]


def test_braces_and_escapes_inside_strings_do_not_look_complete() -> None:
    r = run_sse(
        chunk(tc(0, "call_a", "f", '{"a": "}{\\')),
        chunk(tc(0, args='"]", "b": ["{"]')),
        chunk(tc(0, args="}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    assert r.report["anomalies"] == []
    assert r.args() == [{"a": '}{"]', "b": ["{"]}]


# -- malformed events -----------------------------------------------------------


def test_data_that_is_not_json_is_reported_and_skipped() -> None:
    r = run_sse(chunk(tc(0, "call_a", "f", "{}")), "not json", chunk(finish="tool_calls"), DONE)
    assert r.kinds == ["data-not-json"]
    assert r.anomaly("data-not-json")["event"] == 2
    assert r.args() == [{}]
    assert r.code == 0


def test_unterminated_last_event_is_reported_and_kept_as_trailing() -> None:
    body = sse(chunk(tc(0, "call_a", "f", "{}")), chunk(finish="tool_calls"), DONE)
    r = run(body + b'data: {"choices": [')
    assert r.kinds == ["unterminated-event"]
    assert r.report["trailing"] == 'data: {"choices": ['
    assert r.report["status"] == "finished"


def test_in_band_error_event_fails_the_stream() -> None:
    error = {"error": {"message": "Rate limit exceeded", "code": 429}}
    r = run_sse(chunk(tc(0, "call_a", "f", '{"a": ')), error)
    assert r.report["status"] == "error"
    assert "Rate limit exceeded" in r.report["error"]
    assert r.kinds == ["error-event"]
    assert r.anomaly("error-event")["detail"] == "Rate limit exceeded"
    assert r.calls[0]["arguments_raw"] == '{"a": '
    assert r.calls[0]["arguments"] is None
    assert r.code == 1


def test_error_event_after_the_finish_still_fails_the_stream() -> None:
    r = run_sse(
        chunk(tc(0, "call_a", "f", "{}")),
        chunk(finish="tool_calls"),
        {"error": {"message": "upstream reset"}},
    )
    assert r.report["status"] == "error"
    assert r.code == 1


def test_repeats_of_same_kind_and_index_are_counted_not_listed() -> None:
    r = run_sse(
        chunk(tc(0, "a", "f", "{")),
        chunk(tc(0, name="f", args='"x"')),
        chunk(tc(0, name="f", args=": 1")),
        chunk(tc(0, name="f", args="}")),
        chunk(tc(1, "b", "g", "{")),
        chunk(tc(1, name="g", args="}")),
        chunk(finish="tool_calls"),
        DONE,
    )
    repeated = [(a["index"], a["count"]) for a in r.report["anomalies"]]
    assert r.kinds == ["name-repeated", "name-repeated"]
    assert repeated == [(0, 3), (1, 1)]


def test_comments_pass_through_as_wire_comments_without_anomalies() -> None:
    body = b": OPENROUTER PROCESSING\n\n" + sse(*TEXTBOOK[:4]) + b": keep-alive\n\n"
    body += sse(*TEXTBOOK[4:])
    r = run(body)
    assert [e.text for e in r.events if isinstance(e, WireComment)] == [
        " OPENROUTER PROCESSING",
        " keep-alive",
    ]
    assert r.report["anomalies"] == []
    assert r.code == 0


def test_field_only_block_is_not_reported_as_data_not_json() -> None:
    # `retry: 3000` on its own (a common server preamble) has no data line; the
    # WHATWG rules never dispatch it, so it must not become a data-not-json event.
    r = run(b"retry: 3000\n\n" + sse(*TEXTBOOK))
    assert r.report["anomalies"] == []
    assert r.code == 0


# -- exit codes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "status", "code"),
    [
        (TEXTBOOK, "finished", 0),
        ((chunk(content="hi"), chunk(finish="stop"), DONE), "finished", 0),
        ((chunk(tc(0, "a", "f", "{}")),), "truncated", EXIT_INCOMPLETE),
        (
            (chunk(tc(0, "a", "f", "{")), chunk(finish="tool_calls"), DONE),
            "finished",
            EXIT_INCOMPLETE,
        ),
        ((chunk(tc(0, "a", "f", "{}")), {"error": {"message": "boom"}}), "error", 1),
        ((), "truncated", EXIT_INCOMPLETE),
    ],
    ids=["clean", "text-only", "truncated", "parse-failure", "error-event", "empty-body"],
)
def test_exit_codes(items: tuple[Any, ...], status: str, code: int) -> None:
    r = run_sse(*items)
    assert r.report["status"] == status
    assert r.code == code


# -- non-streaming JSON completions ------------------------------------------------

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": ""},
                    },
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
}


@pytest.mark.parametrize("pieces", [None, 5])
def test_json_completion_is_reported_like_a_finished_stream(pieces: int | None) -> None:
    r = run(json.dumps(COMPLETION).encode(), content_type="application/json", pieces=pieces)
    assert r.session.mode == "json"
    assert r.report["status"] == "finished"
    assert r.report["finish_reason"] == "tool_calls"
    assert r.report["text"] == "Checking."
    assert [(c["index"], c["id"], c["name"], c["arguments"]) for c in r.calls] == [
        (0, "call_a", "get_weather", {"city": "Paris"}),
        (1, "call_b", "get_time", {}),
    ]
    assert r.code == 0


def test_json_completion_without_tool_call_index_is_not_an_anomaly() -> None:
    # Non-streaming `message.tool_calls[]` carry no `index`; that is the format,
    # not a quirk.
    r = run(json.dumps(COMPLETION).encode(), content_type="application/json")
    assert "index-missing" not in r.kinds


def test_json_completion_has_no_done_missing_anomaly() -> None:
    # A non-streaming response never carries `data: [DONE]`.
    r = run(json.dumps(COMPLETION).encode(), content_type="application/json")
    assert "done-missing" not in r.kinds


def test_json_body_that_does_not_parse_is_an_error() -> None:
    r = run(b'{"choices": [', content_type="application/json")
    assert r.report["status"] == "error"
    assert "does not parse" in r.report["error"]
    assert r.code == 1


def test_json_error_body_with_status_200_is_an_error() -> None:
    body = json.dumps({"error": {"message": "model overloaded"}}).encode()
    r = run(body, content_type="application/json; charset=utf-8")
    assert r.report["status"] == "error"
    assert "model overloaded" in r.report["error"]
    assert r.code == 1


# -- HTTP errors and non-stream bodies -----------------------------------------------


def test_http_error_with_openai_error_body() -> None:
    body = {
        "error": {
            "message": "Incorrect API key provided: sk-****.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    r = run(json.dumps(body).encode(), status=401, content_type="application/json")
    assert r.report["status"] == "error"
    assert r.report["error"] == "HTTP 401: Incorrect API key provided: sk-****."
    assert r.report["http_status"] == 401
    assert r.report["body"] == json.dumps(body)
    assert r.calls == []
    assert r.code == 1


def test_http_error_with_plain_text_body() -> None:
    r = run(b"upstream connect error\n", status=503, content_type="text/plain")
    assert r.report["error"] == "HTTP 503: upstream connect error"
    assert r.code == 1


def test_http_error_with_sse_content_type_is_still_an_error() -> None:
    r = run(sse(*TEXTBOOK), status=500, content_type="text/event-stream")
    assert r.report["status"] == "error"
    assert r.report["error"].startswith("HTTP 500: ")
    assert r.calls == []
    assert r.code == 1


def test_html_body_is_an_error_naming_the_content_type() -> None:
    html = b"<!DOCTYPE html><html><body>Cloudflare says no</body></html>"
    r = run(html, content_type="text/html; charset=utf-8")
    assert r.report["status"] == "error"
    assert "text/html" in r.report["error"]
    assert r.calls == []
    assert r.code == 1


def test_sse_body_under_wrong_content_type_is_decoded_and_reported() -> None:
    r = run(sse(*TEXTBOOK), content_type="text/plain")
    assert r.kinds == ["content-type-not-sse"]
    assert r.args() == [{"city": "Paris", "unit": "C"}, {}]
    assert r.code == 0


def test_sse_body_under_wrong_content_type_keeps_its_unterminated_tail() -> None:
    r = run(sse(*TEXTBOOK) + b'data: {"cho', content_type="text/plain")
    assert r.report["trailing"] == 'data: {"cho'
    assert "unterminated-event" in r.kinds


# -- transport failures ---------------------------------------------------------------


def test_interrupt_after_partial_data_is_truncated_with_connection_lost() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    session.feed(sse(chunk(tc(0, "call_a", "f", '{"city": ')), chunk(tc(0, args='"Par'))), 0.0)
    events = session.interrupt("connection reset by peer", 1.0)
    report = build_report(session.state)
    assert report["status"] == "truncated"
    assert [a["kind"] for a in report["anomalies"]] == ["connection-lost"]
    assert report["anomalies"][0]["detail"] == "connection reset by peer"
    assert report["tool_calls"][0]["arguments_raw"] == '{"city": "Par'
    assert report["tool_calls"][0]["arguments"] is None
    assert not any(isinstance(e, CallParsed) for e in events)
    assert exit_code(session.state) == EXIT_INCOMPLETE


def test_interrupt_after_the_finish_keeps_the_finished_stream() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    session.feed(sse(chunk(tc(0, "call_a", "f", "{}")), chunk(finish="tool_calls")), 0.0)
    session.interrupt("connection reset by peer", 1.0)
    report = build_report(session.state)
    assert report["status"] == "finished"
    assert "connection-lost" in [a["kind"] for a in report["anomalies"]]
    assert report["tool_calls"][0]["arguments"] == {}
    assert exit_code(session.state) == 0


def test_transport_failure_is_an_error() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    session.feed(sse(chunk(tc(0, "call_a", "f", "{"))), 0.0)
    session.fail("read timeout", 1.0)
    report = build_report(session.state)
    assert report["status"] == "error"
    assert report["error"] == "read timeout"
    assert report["tool_calls"][0]["arguments_raw"] == "{"
    assert exit_code(session.state) == 1


def test_close_twice_emits_nothing_more() -> None:
    session = StreamSession("test")
    session.open(200, "text/event-stream")
    session.feed(sse(*TEXTBOOK), 0.0)
    assert session.close(1.0) != []
    assert session.close(2.0) == []


@pytest.mark.parametrize(("raw", "kind"), [("null", "null"), ("[1]", "list"), ("3", "int")])
def test_arguments_that_are_not_an_object_are_named(raw: str, kind: str) -> None:
    call = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": raw}}
    r = run_sse(
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "[DONE]",
    )
    assert r.anomaly("arguments-not-object")["detail"].startswith(f"arguments parse to {kind}")
    assert r.calls[0]["arguments_raw"] == raw


def test_a_deep_call_sent_whole_parses_alone_as_it_parsed_in_its_lane() -> None:
    """The inspector's 'alone' column and the call's own parse use one parser: a
    1000-deep object in one fragment parses in both (json.loads alone runs out of
    recursion)."""
    deep = '{"a":' * 1000 + "1" + "}" * 1000
    r = run_sse(chunk(tc(0, "call_1", "f", deep)), chunk(finish="tool_calls"), DONE)
    assert r.calls[0]["error"] is None
    assert FragmentRows(r.session.state.calls[0].pieces).row(1).parses_alone
